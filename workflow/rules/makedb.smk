# The on-disk, length-sorted, chunked database.


rule makedb:
    input:
        fasta=lambda wildcards: source_path(wildcards.db),
    output:
        directory("results/{db}/db"),
    log:
        "results/{db}/logs/makedb.log",
    benchmark:
        "results/{db}/benchmarks/makedb.tsv"
    conda:
        "../envs/swgpu.yaml"
    params:
        chunk_residues=lambda wildcards: chunk_residues(wildcards.db),
    shell:
        "swgpu makedb {input.fasta} {output} --chunk-residues {params.chunk_residues} > {log} 2>&1"
