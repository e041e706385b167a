#!/usr/bin/env bash
# The wheels a device call carries (git-ignored, named in `carry`): the device's python
# (3.12, no package index) has numpy, CuPy, numba, matplotlib, pandas, tqdm and pytest, not these.
#   .whl     what swgpu_core and its GPU tests import beyond that
#   .whl_sm  Snakemake and what it needs, for the workflow steps (bench/device_multigpu.sh workflow)
# Every version is constraints.txt's. A package with no wheel on the index (pure Python
# sdists such as connection_pool) is built into one here.
#   run: bash bench/fetch_wheels.sh   (in the repository's root, on the CPU machine)
set -euo pipefail
PLAT=(--only-binary=:all: --python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64
      --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64
      --platform manylinux2014_x86_64 --platform manylinux1_x86_64)
# parasail (15 MB) stays out: only a CPU test uses it (importorskip), and with it .whl, .whl_sm
# and .carry passed the 64 MiB a call carries
CORE="biopython pysam pyopal scoring-matrices archspec"
# on the device already, or not needed there (formatters, linters, the test runner)
HAVE="numpy pandas pillow matplotlib contourpy fonttools kiwisolver cycler pyparsing python-dateutil six tzdata
      llvmlite numba pytest pluggy iniconfig packaging ruff black snakefmt pytokens tqdm cupy-cuda12x cupy-cuda13x parasail"
fetch() {  # fetch DIR NAME==VERSION: the 3.12 wheel, else one built here from the sdist
  python3 -m pip download -q --no-deps "${PLAT[@]}" -d "$1" "$2" 2> /dev/null \
    || python3 -m pip wheel -q --no-deps -w "$1" "$2" > /dev/null
}
mkdir -p .whl .whl_sm
while read -r line; do
  case $line in ''|\#*) continue ;; esac
  name=$(echo "${line%%==*}" | tr 'A-Z_' 'a-z-')
  if [[ " $(echo $CORE) " == *" $name "* ]]; then fetch .whl "$line"
  elif [[ " $(echo $HAVE $CORE) " != *" $name "* ]]; then fetch .whl_sm "$line"
  fi
done < constraints.txt
du -sh .whl .whl_sm
