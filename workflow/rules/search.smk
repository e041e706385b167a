# One job per (query batch x database chunk): that chunk's top-k hits for that batch.


rule search:
    input:
        db="results/{db}/db",
        batch="results/queries/batches/batch-{batch}.fasta",
    output:
        hits="results/{db}/search/batch-{batch}/chunk-{chunk}.npz",
    log:
        "results/{db}/logs/search/batch-{batch}.chunk-{chunk}.log",
    benchmark:
        "results/{db}/benchmarks/search/batch-{batch}.chunk-{chunk}.tsv"
    conda:
        "../envs/swgpu.yaml"
    threads: config["search"]["threads"]
    resources:
        gpu=1 if uses_gpu() else 0,
        mem_mb=search_mem_mb,
        runtime=search_runtime,
    params:
        gpu_run=gpu_run_prefix(),
        backend=config["search"]["backend"],
        top=config["search"]["top"],
        extra=config["search"]["extra"],
    shell:
        "{params.gpu_run} swgpu search --db {input.db} --query {input.batch}"
        " --backend {params.backend} --top {params.top} --chunks {wildcards.chunk}"
        " --threads {threads} --save-hits {output.hits} {params.extra} > {log} 2>&1"
