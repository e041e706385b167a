# Threshold choice between the inter- and intra-task kernels.


rule plan:
    input:
        "results/{db}/db",
    output:
        json="results/{db}/plan/plan.json",
        png=report(
            "results/{db}/plan/plan.png",
            caption="../report/plan.rst",
            category="Database",
            labels={"database": "{db}", "figure": "predicted speed"},
        ),
    log:
        "results/{db}/logs/plan.log",
    benchmark:
        "results/{db}/benchmarks/plan.tsv"
    conda:
        "../envs/swgpu.yaml"
    threads: 1
    params:
        extra=config["plan"]["extra"],
    shell:
        "swgpu plan {input:q} --json {output.json:q} --png {output.png:q} {params.extra} > {log:q} 2>&1"
