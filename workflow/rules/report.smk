# The self-contained HTML report of one database's run.


rule report:
    input:
        db="results/{db}/db",
        hits=all_search_hits,
        plan=plan_json,
    output:
        report(
            "results/{db}/report.html",
            caption="../report/report.rst",
            category="Report",
            labels={"database": "{db}", "file": "HTML report"},
        ),
    log:
        "results/{db}/logs/report.log",
    benchmark:
        "results/{db}/benchmarks/report.tsv"
    conda:
        "../envs/swgpu.yaml"
    params:
        plan=lambda wildcards, input: f"--plan {input.plan}" if input.plan else "",
        extra=config["report"]["extra"],
    shell:
        "swgpu report --db {input.db} --hits {input.hits}"
        " --out {output} {params.plan} {params.extra} > {log} 2>&1"
