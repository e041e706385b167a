# One huge local alignment (swgpu align-long): the target cut into sections that overlap
# by --max-alignment-length, one job per section (one GPU each), then a merge job that
# picks the top distinct end points, traces them back once and writes every configured
# format. Off unless align_long.enabled.


rule align_long_section:
    input:
        query=align_long_input("query"),
        target=align_long_input("target"),
    output:
        "results/align_long/sections/section-{section}.npz",
    log:
        "results/align_long/logs/section-{section}.log",
    benchmark:
        "results/align_long/benchmarks/section-{section}.tsv"
    wildcard_constraints:
        section=r"\d+",
    conda:
        SWGPU_ENV
    threads: config["align_long"]["threads"]
    resources:
        gpu=1 if uses_gpu(config["align_long"]["backend"]) else 0,
    params:
        gpu_run=gpu_run(config["align_long"]["backend"]),
        n_sections=config["align_long"]["sections"],
        backend=config["align_long"]["backend"],
        options=align_long_options(),
        extra=config["align_long"]["extra"],
    shell:
        "{params.gpu_run:q} swgpu align-long --query {input.query:q} --target {input.target:q}"
        " --section {wildcards.section}/{params.n_sections:q} --save-ends {output:q}"
        " --backend {params.backend:q} --threads {threads} {params.options:q} {params.extra} > {log:q} 2>&1"


rule align_long_merge:
    input:
        query=align_long_input("query"),
        target=align_long_input("target"),
        sections=expand(
            "results/align_long/sections/section-{section}.npz",
            section=ALIGN_LONG_SECTIONS,
        ),
    output:
        expand(
            "results/align_long/alignments.{fmt}", fmt=config["align_long"]["formats"]
        ),
    log:
        "results/align_long/logs/merge.log",
    benchmark:
        "results/align_long/benchmarks/merge.tsv"
    conda:
        SWGPU_ENV
    threads: config["align_long"]["threads"]
    resources:
        gpu=1 if uses_gpu(config["align_long"]["backend"]) else 0,
    params:
        gpu_run=gpu_run(config["align_long"]["backend"]),
        top=config["align_long"]["top"],
        outs=lambda wildcards, output: [
            arg for path in output for arg in ("--out", path)
        ],
        backend=config["align_long"]["backend"],
        options=align_long_options(),
        extra=config["align_long"]["extra"],
    shell:
        "{params.gpu_run:q} swgpu align-long --query {input.query:q} --target {input.target:q}"
        " --ends {input.sections:q} --top {params.top:q} {params.outs:q}"
        " --backend {params.backend:q} --threads {threads}"
        " {params.options:q} {params.extra} > {log:q} 2>&1"
