# One job per (database chunk x query batch): that chunk's top-k hits for that batch.


rule search:
    input:
        db="results/{db}/db",
        batch="results/queries/batches/batch-{batch}.fasta",
    output:
        hits="results/{db}/search/chunk-{chunk}/batch-{batch}.npz",
    log:
        "results/{db}/logs/search/chunk-{chunk}.batch-{batch}.log",
    benchmark:
        "results/{db}/benchmarks/search/chunk-{chunk}.batch-{batch}.tsv"
    conda:
        "../../envs/swgpu.yaml"
    threads: config["search"]["threads"]
    resources:
        gpu=1 if uses_gpu() else 0,
    params:
        gpu_run=gpu_run_prefix(),
        backend=config["search"]["backend"],
        top=config["search"]["top"],
        extra=config["search"]["extra"],
    shell:
        "{params.gpu_run} swgpu search --db {input.db} --query {input.batch}"
        " --backend {params.backend} --top {params.top} --chunks {wildcards.chunk}"
        " --threads {threads} --save-hits {output.hits} {params.extra} > {log} 2>&1"
