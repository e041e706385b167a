# Traceback of one batch's merged top hits, one file per configured format.


rule align:
    input:
        db="results/{db}/db",
        batch="results/queries/batches/batch-{batch}.fasta",
        hits=search_hits,
    output:
        "results/{db}/alignments/batch-{batch}.{fmt}",
    log:
        "results/{db}/logs/align/batch-{batch}.{fmt}.log",
    benchmark:
        "results/{db}/benchmarks/align/batch-{batch}.{fmt}.tsv"
    conda:
        "../envs/swgpu.yaml"
    resources:
        gpu=1 if uses_gpu() else 0,
    params:
        gpu_run=gpu_run_prefix(),
        outfmt=lambda wildcards: (
            f"--outfmt '{config['align']['outfmt']}'" if wildcards.fmt == "tsv" else ""
        ),
        extra=config["align"]["extra"],
    shell:
        "{params.gpu_run} swgpu align --db {input.db} --query {input.batch}"
        " --hits {input.hits} --out {output} {params.outfmt} {params.extra} > {log} 2>&1"
