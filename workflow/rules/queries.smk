# Query batches; a checkpoint, because the number of batches follows from the query file.


checkpoint split_queries:
    input:
        config["queries"],
    output:
        directory("results/queries/batches"),
    log:
        "results/logs/split_queries.log",
    benchmark:
        "results/benchmarks/split_queries.tsv"
    conda:
        "../../envs/swgpu.yaml"
    params:
        batch_size=config["query_batch_size"],
    shell:
        "swgpu split-queries {input} {output} --batch-size {params.batch_size} > {log} 2>&1"
