# Query batches; a checkpoint, so that the query file is read by a job, not when the
# workflow is parsed. A batch file whose bytes did not change (queries appended to the
# last batch, or the query file touched) does not re-run its search jobs: Snakemake
# compares the checksums of small inputs.


checkpoint split_queries:
    input:
        local(config["queries"]),
    output:
        directory("results/queries/batches"),
    log:
        "results/logs/split_queries.log",
    benchmark:
        "results/benchmarks/split_queries.tsv"
    conda:
        SWGPU_ENV
    threads: 1
    params:
        batch_size=config["query_batch_size"],
        residues=(
            ["--batch-residues", config["query_batch_residues"]]
            if config["query_batch_residues"]
            else []
        ),
    shell:
        "swgpu split-queries --batch-size {params.batch_size:q} {params.residues:q} -- {input:q} {output:q} > {log:q} 2>&1"
