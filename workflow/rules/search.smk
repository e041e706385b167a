# The search of one query batch, per search.job_size. GPU jobs take a `gpu` slot and run
# under `swgpu gpu-run`.
#
# database: one job per batch scans the whole database (results/{db}/search/batch-NNNN/
# all.npz) and, in the same process, writes the batch's hits table (results/{db}/hits/
# batch-NNNN.tsv, merge.outfmt: its hits are already the global top hits, scored against
# the whole database; unless merge.extra and align.extra differ, see search_writes_table),
# traces its top hits and writes every alignment format (results/{db}/alignments/
# batch-NNNN.*): one start-up, one CUDA context and one database upload per batch, and no
# merge job after it. chunk: one job per batch and database chunk
# (.../chunk-K.npz), to spread a search over cores or nodes; the merge rule then makes each
# batch's table and the align rule traces its merged hits (rules/merge.smk, rules/align.smk).


if search_job_size() == "database":

    rule search:
        input:
            db="results/{db}/db",
            batch="results/queries/batches/batch-{batch}.fasta",
        output:
            hits="results/{db}/search/batch-{batch}/all.npz",
            table=(
                ["results/{db}/hits/batch-{batch}.tsv"]
                if search_writes_table()
                else []
            ),
            alignments=expand(
                "results/{{db}}/alignments/batch-{{batch}}.{fmt}",
                fmt=alignment_formats(),
            ),
        log:
            "results/{db}/logs/search/batch-{batch}.all.log",
        benchmark:
            "results/{db}/benchmarks/search/batch-{batch}.all.tsv"
        conda:
            SWGPU_ENV
        threads: search_threads()
        resources:
            gpu=1 if uses_gpu() else 0,
            mem_mb=search_mem_mb,
            runtime=search_runtime,
        params:
            gpu_run=gpu_run(config["search"]["backend"]),
            backend=config["search"]["backend"],
            mode=config["search"]["mode"],
            top=config["search"]["top"],
            outputs=lambda wildcards, output: search_outputs(
                output.table, output.alignments
            ),
            # the raw options of the commands this job does the work of: search.extra, and
            # align.extra for the alignments or merge.extra for the table (the same where
            # both apply, search_writes_table, so pasted once: options that accumulate, such
            # as --outfmt, would otherwise come twice)
            extra=" ".join(
                [config["search"]["extra"]]
                + (
                    [config["align"]["extra"]]
                    if alignment_formats()
                    else [config["merge"]["extra"]]
                )
            ),
        shell:
            "{params.gpu_run:q} swgpu search --db {input.db:q} --query {input.batch:q}"
            " --backend {params.backend:q} --mode {params.mode:q} --top {params.top:q} --threads {threads}"
            " --save-hits {output.hits:q} {params.outputs:q} {params.extra}"
            " > {log:q} 2>&1"

else:

    rule search:
        input:
            db="results/{db}/db",
            batch="results/queries/batches/batch-{batch}.fasta",
        output:
            hits="results/{db}/search/batch-{batch}/chunk-{chunk}.npz",
        log:
            "results/{db}/logs/search/batch-{batch}.chunk-{chunk}.log",
        benchmark:
            "results/{db}/benchmarks/search/batch-{batch}.chunk-{chunk}.tsv"
        conda:
            SWGPU_ENV
        threads: config["search"]["threads"]
        resources:
            gpu=1 if uses_gpu() else 0,
            mem_mb=search_mem_mb,
            runtime=search_runtime,
        params:
            gpu_run=gpu_run(config["search"]["backend"]),
            backend=config["search"]["backend"],
            mode=config["search"]["mode"],
            top=config["search"]["top"],
            extra=config["search"]["extra"],
        shell:
            "{params.gpu_run:q} swgpu search --db {input.db:q} --query {input.batch:q}"
            " --backend {params.backend:q} --mode {params.mode:q} --top {params.top:q} --chunks {wildcards.chunk:q}"
            " --threads {threads} --save-hits {output.hits:q} {params.extra} > {log:q} 2>&1"
