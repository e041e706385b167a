# With chunk-level search jobs (search.job_size: chunk), one job per query batch traces its
# merged top hits once (on a GPU where there is one) and writes every configured format
# from that one result; the report reads the .jsonl. With one search job per batch over the
# whole database, that job traces its hits itself (rules/search.smk) and there is no align job.


if search_job_size() == "chunk":

    rule align:
        input:
            db="results/{db}/db",
            batch="results/queries/batches/batch-{batch}.fasta",
            hits=search_hits,
        output:
            expand(
                "results/{{db}}/alignments/batch-{{batch}}.{fmt}",
                fmt=alignment_formats(),
            ),
        log:
            "results/{db}/logs/align/batch-{batch}.log",
        benchmark:
            "results/{db}/benchmarks/align/batch-{batch}.tsv"
        conda:
            SWGPU_ENV
        threads: config["align"]["threads"]
        resources:
            gpu=1 if uses_gpu(config["search"]["backend"]) else 0,
        params:
            gpu_run=gpu_run(config["search"]["backend"]),
            backend=config["search"]["backend"],
            outs=lambda wildcards, output: [
                arg for path in output for arg in ("--out", path)
            ],
            outfmt=config["align"]["outfmt"],
            extra=config["align"]["extra"],
        shell:
            "{params.gpu_run:q} swgpu align --db {input.db:q} --query {input.batch:q}"
            " --hits {input.hits:q} {params.outs:q} --backend {params.backend:q} --threads {threads}"
            " --outfmt {params.outfmt:q} {params.extra} > {log:q} 2>&1"
