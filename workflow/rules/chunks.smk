# The database's chunk list; a checkpoint, because the number of chunk-level search jobs
# (search.job_size: chunk) follows from it.


checkpoint chunks:
    input:
        db="results/{db}/db",
        plan=plan_json,
    output:
        "results/{db}/chunks.json",
    log:
        "results/{db}/logs/chunks.log",
    benchmark:
        "results/{db}/benchmarks/chunks.tsv"
    conda:
        SWGPU_ENV
    threads: 1
    shell:
        "swgpu chunks {input.db:q} --json {output:q} > {log:q} 2>&1"
