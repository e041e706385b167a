# One huge local alignment (swgpu align-long): the target cut into sections that overlap
# by --max-alignment-length, one job per section (one GPU each), then a merge job that
# picks the top distinct end points and traces them back. Off unless align_long.enabled.


rule align_long_section:
    input:
        query=config["align_long"]["query"] or [],
        target=config["align_long"]["target"] or [],
    output:
        "results/align_long/sections/section-{section}.npz",
    log:
        "results/align_long/logs/section-{section}.log",
    benchmark:
        "results/align_long/benchmarks/section-{section}.tsv"
    conda:
        "../envs/swgpu.yaml"
    resources:
        gpu=1 if align_long_gpu() else 0,
    params:
        gpu_run=gpu_run_prefix() if align_long_gpu() else "",
        n_sections=config["align_long"]["sections"],
        backend=config["align_long"]["backend"],
        options=align_long_options(),
    shell:
        "{params.gpu_run} swgpu align-long --query {input.query} --target {input.target}"
        " --section {wildcards.section}/{params.n_sections} --save-ends {output}"
        " --backend {params.backend} {params.options} > {log} 2>&1"


rule align_long_merge:
    input:
        query=config["align_long"]["query"] or [],
        target=config["align_long"]["target"] or [],
        sections=expand(
            "results/align_long/sections/section-{section}.npz",
            section=ALIGN_LONG_SECTIONS,
        ),
    output:
        "results/align_long/alignments.{fmt}",
    log:
        "results/align_long/logs/merge.{fmt}.log",
    conda:
        "../envs/swgpu.yaml"
    params:
        top=config["align_long"]["top"],
        options=align_long_options(),
    shell:
        "swgpu align-long --query {input.query} --target {input.target}"
        " --ends {input.sections} --top {params.top} --out {output} {params.options} > {log} 2>&1"
