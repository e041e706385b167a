# Length characterisation: histogram plot and table.


rule dbstats:
    input:
        "results/{db}/db",
    output:
        png=report(
            "results/{db}/dbstats/lengths.png",
            caption="../report/dbstats.rst",
            category="Database",
            labels={"database": "{db}", "figure": "length histogram"},
        ),
        tsv="results/{db}/dbstats/lengths.tsv",
        txt="results/{db}/dbstats/stats.txt",
    log:
        "results/{db}/logs/dbstats.log",
    benchmark:
        "results/{db}/benchmarks/dbstats.tsv"
    conda:
        SWGPU_ENV
    threads: 1
    shell:
        "swgpu dbstats {input:q} --png {output.png:q} --tsv {output.tsv:q} > {output.txt:q} 2> {log:q}"
