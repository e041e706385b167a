# The database's chunk list; a checkpoint, because the number of search jobs follows from it.


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
        "../envs/swgpu.yaml"
    shell:
        "swgpu chunks {input.db} --json {output} > {log} 2>&1"
