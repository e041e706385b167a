# Global top-k per query of one batch from its per-chunk hit lists (E-values against the
# whole database), then the batches of a database gathered into results/{db}/hits.tsv.


rule merge:
    input:
        db="results/{db}/db",
        hits=search_hits,
    output:
        "results/{db}/hits/batch-{batch}.tsv",
    log:
        "results/{db}/logs/merge/batch-{batch}.log",
    benchmark:
        "results/{db}/benchmarks/merge/batch-{batch}.tsv"
    conda:
        "../envs/swgpu.yaml"
    params:
        outfmt=config["merge"]["outfmt"],
        extra=config["merge"]["extra"],
    shell:
        "swgpu merge {input.hits} --db {input.db} --out {output}"
        " --outfmt '{params.outfmt}' {params.extra} > {log} 2>&1"


rule gather_hits:
    input:
        expand("results/{{db}}/hits/batch-{batch}.tsv", batch=QUERY_BATCHES),
    output:
        report(
            "results/{db}/hits.tsv",
            caption="../report/hits.rst",
            category="Hits",
            labels={"database": "{db}", "table": "merged hits"},
        ),
    log:
        "results/{db}/logs/gather_hits.log",
    benchmark:
        "results/{db}/benchmarks/gather_hits.tsv"
    conda:
        "../envs/swgpu.yaml"
    shell:
        "cat {input} > {output} 2> {log}"
