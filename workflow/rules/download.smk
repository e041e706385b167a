# A database's source file and its release record (ETag/Last-Modified/SHA-256),
# results/{db}/source/{db}.fasta[.gz] and the same name + .version.json.


rule download:
    input:
        local_source,
    output:
        fasta="results/{db}/source/{db}{suffix}",
        release="results/{db}/source/{db}{suffix}.version.json",
    log:
        "results/{db}/logs/download{suffix}.log",
    benchmark:
        "results/{db}/benchmarks/download{suffix}.tsv"
    wildcard_constraints:
        suffix=r"\.fasta(\.gz)?",
    conda:
        SWGPU_ENV
    threads: 1
    params:
        source=lambda wildcards: db_settings(wildcards.db)["source"],
        checks=lambda wildcards: download_checks(wildcards.db),
    shell:
        "swgpu download --quiet {params.checks:q} -- {params.source:q} {output.fasta:q} > {log:q} 2>&1"


# Scheduled runs: `snakemake refresh` asks every source whether its release changed and
# rewrites the source file and its .version.json only when it did, so the following plain
# `snakemake` re-runs exactly the chain of the changed databases. Its log is named by the
# time of the run (results/logs/refresh/<time>.log), so it runs whenever it is asked for,
# keeps a history of the checks, and is never part of the default target. Downloads
# run where Snakemake runs (cluster nodes often have no internet access).
localrules:
    download,
    refresh,


rule refresh:
    log:
        f"results/logs/refresh/{REFRESH_STAMP}.log",
    benchmark:
        f"results/benchmarks/refresh/{REFRESH_STAMP}.tsv"
    conda:
        SWGPU_ENV
    threads: 1
    params:
        log_relpath=f"results/logs/refresh/{REFRESH_STAMP}.log",
        downloads=[
            [db_settings(db)["source"], source_relpath(db), download_checks(db)]
            for db in config["databases"]
        ],
    script:
        "../scripts/refresh.py"
