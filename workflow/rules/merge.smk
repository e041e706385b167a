# Global top-k per query from the per-chunk lists; E-values against the whole database.


rule merge:
    input:
        search_hits,
    output:
        tsv=report(
            "results/{db}/hits.tsv",
            caption="../report/hits.rst",
            category="Hits",
            labels={"database": "{db}", "table": "merged hits"},
        ),
        hits="results/{db}/hits.npz",
    log:
        "results/{db}/logs/merge.log",
    benchmark:
        "results/{db}/benchmarks/merge.tsv"
    conda:
        "../../envs/swgpu.yaml"
    params:
        outfmt=config["merge"]["outfmt"],
        extra=config["merge"]["extra"],
    shell:
        "swgpu merge {input} --out {output.tsv} --outfmt '{params.outfmt}'"
        " --save-hits {output.hits} {params.extra} > {log} 2>&1"
