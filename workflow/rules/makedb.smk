# The on-disk, length-sorted, chunked database.


rule makedb:
    input:
        fasta=lambda wildcards: source_relpath(wildcards.db),
    output:
        directory("results/{db}/db"),
    log:
        "results/{db}/logs/makedb.log",
    benchmark:
        "results/{db}/benchmarks/makedb.tsv"
    conda:
        SWGPU_ENV
    threads: 1
    resources:
        mem_mb=makedb_mem_mb,
    params:
        chunk_residues=lambda wildcards: chunk_residues(wildcards.db),
    shell:
        "swgpu makedb {input.fasta:q} {output:q} --chunk-residues {params.chunk_residues:q} > {log:q} 2>&1"
