# The self-contained HTML report of one database's run, from the hit lists and the
# batches' alignments (JSON lines, from their one traceback each): the report traces nothing itself.


rule report:
    input:
        db="results/{db}/db",
        hits=all_search_hits,
        alignments=report_alignments,
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
        SWGPU_ENV
    threads: 1
    params:
        plan=lambda wildcards, input: ["--plan", input.plan] if input.plan else [],
        extra=config["report"]["extra"],
    shell:
        "swgpu report --db {input.db:q} --hits {input.hits:q} --alignments {input.alignments:q}"
        " --out {output:q} {params.plan:q} {params.extra} > {log:q} 2>&1"
