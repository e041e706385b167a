# Query batches, one search job per batch and database chunk.


rule split_queries:
    input:
        config["queries"],
    output:
        expand("results/queries/batches/batch-{batch}.fasta", batch=QUERY_BATCHES),
    log:
        "results/logs/split_queries.log",
    benchmark:
        "results/benchmarks/split_queries.tsv"
    conda:
        "../envs/swgpu.yaml"
    params:
        outdir=lambda wildcards, output: os.path.dirname(output[0]),
        batch_size=config["query_batch_size"],
    shell:
        "swgpu split-queries {input} {params.outdir} --batch-size {params.batch_size} > {log} 2>&1"
