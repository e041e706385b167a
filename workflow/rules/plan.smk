# Threshold choice between the inter- and intra-task kernels, from the model of the GPU
# where the job runs (a GPU job: it takes a `gpu` slot), or the built-in one with the CPU
# backend.


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
        SWGPU_ENV
    threads: 1
    resources:
        gpu=1 if uses_gpu(config["search"]["backend"]) else 0,
    params:
        gpu_run=gpu_run(config["search"]["backend"]),
        no_gpu=[] if uses_gpu(config["search"]["backend"]) else ["--no-gpu"],
        extra=config["plan"]["extra"],
    shell:
        "{params.gpu_run:q} swgpu plan {input:q} --json {output.json:q} --png {output.png:q}"
        " {params.no_gpu:q} {params.extra} > {log:q} 2>&1"
