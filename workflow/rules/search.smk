# The search of one query batch: the whole database in one job (results/{db}/search/
# batch-NNNN/all.npz) or one job per database chunk (.../chunk-K.npz), per
# search.job_size. GPU jobs take a `gpu` slot and run under `swgpu gpu-run`.


rule search:
    input:
        db="results/{db}/db",
        batch="results/queries/batches/batch-{batch}.fasta",
    output:
        hits="results/{db}/search/batch-{batch}/{part}.npz",
    log:
        "results/{db}/logs/search/batch-{batch}.{part}.log",
    benchmark:
        "results/{db}/benchmarks/search/batch-{batch}.{part}.tsv"
    wildcard_constraints:
        part=r"all|chunk-\d+",
    conda:
        SWGPU_ENV
    threads: config["search"]["threads"]
    resources:
        gpu=1 if uses_gpu(config["search"]["backend"]) else 0,
        mem_mb=search_mem_mb,
        runtime=search_runtime,
    params:
        gpu_run=gpu_run(config["search"]["backend"]),
        backend=config["search"]["backend"],
        top=config["search"]["top"],
        chunks=lambda wildcards: (
            []
            if wildcards.part == "all"
            else ["--chunks", wildcards.part.removeprefix("chunk-")]
        ),
        extra=config["search"]["extra"],
    shell:
        "{params.gpu_run:q} swgpu search --db {input.db:q} --query {input.batch:q}"
        " --backend {params.backend:q} --top {params.top:q} {params.chunks:q}"
        " --threads {threads} --save-hits {output.hits:q} {params.extra} > {log:q} 2>&1"
