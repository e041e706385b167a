"""`snakemake refresh`: `swgpu download` of every database source, without a shell.

Each call rewrites a source and its .version.json only when the release changed. The
destinations are the documented paths under the same prefix as this job's log, so the
rule also works inside a module with `prefix:`. The log is echoed at the end.
"""

import subprocess
import sys

log = str(snakemake.log[0])  # noqa: F821 (set by Snakemake)
relpath = snakemake.params.log_relpath  # noqa: F821
prefix = log[: len(log) - len(relpath)] if log.endswith(relpath) else ""
failed = 0
with open(log, "w") as fh:
    for source, dest, checks in snakemake.params.downloads:  # noqa: F821
        args = ["swgpu", "download", "--quiet", *checks, "--", source, prefix + dest]
        failed |= subprocess.run(args, stdout=fh, stderr=subprocess.STDOUT).returncode
with open(log) as fh:
    sys.stdout.write(fh.read())
sys.exit(1 if failed else 0)
