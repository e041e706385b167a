# The global top-k per query of one batch from its hit lists (E-values against the whole
# database; scores only, no traceback), where the search jobs do not write it: chunk-level
# jobs, or merge.extra and align.extra asking for different selections (common.smk,
# search_writes_table). Then the batches of a database gathered into results/{db}/hits.tsv
# (format 7 by default: BLAST's comment lines name the fields).


if not search_writes_table():

    # well under a second: not worth a cluster job (see localrules in the Snakefile); named
    # only where the rule exists, or Snakemake warns of a rule "not present" on every run
    localrules:
        merge,

    rule merge:
        input:
            db="results/{db}/db",
            hits=search_hits,
        output:
            "results/{db}/hits/batch-{batch}.tsv",
        log:
            "results/{db}/logs/merge/batch-{batch}.log",
        benchmark:
            "results/{db}/benchmarks/merge/batch-{batch}.tsv"
        conda:
            SWGPU_ENV
        threads: 1
        params:
            outfmt=config["merge"]["outfmt"],
            extra=config["merge"]["extra"],
        shell:
            "swgpu merge {input.hits:q} --db {input.db:q} --out {output:q}"
            " --outfmt {params.outfmt:q} {params.extra} > {log:q} 2>&1"


rule gather_hits:
    input:
        merged_hits,
    output:
        report(
            "results/{db}/hits.tsv",
            caption="../report/hits.rst",
            category="Hits",
            labels={"database": "{db}", "table": "merged hits"},
        ),
    log:
        "results/{db}/logs/gather_hits.log",
    benchmark:
        "results/{db}/benchmarks/gather_hits.tsv"
    conda:
        SWGPU_ENV
    threads: 1
    params:
        # Format 7 ends each batch with "# swgpu processed N queries"; a reader (Biopython's
        # blast-tab) stops there, so the batches' trailers become one for the whole table
        # (a function, so that Snakemake does not read the braces as wildcards).
        awk=lambda wildcards: (
            r'$0 ~ "^# [^ ]+ processed [0-9]+ quer" { program = $2; next }'
            r' $0 ~ "^# Query: " { n++ } { print }'
            r' END { if (program != "") print "# " program " processed " n " queries" }'
        ),
    shell:
        "awk {params.awk:q} {input:q} > {output:q} 2> {log:q}"
