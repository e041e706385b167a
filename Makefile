# Two commands on a fresh clone: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
comma := ,

# CuPy matches the CUDA version of the NVIDIA driver ("CUDA Version: 12.x" or "13.x" in
# nvidia-smi's header): extra cuda12 or cuda13; no driver (or another version), no CuPy and
# the CPU backend. Override with `make test CUDA_MAJOR=12` (or CUDA_MAJOR= for none).
CUDA_MAJOR ?= $(shell nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9][0-9]*\)\..*/\1/p' | head -n 1)
CUPY_EXTRA := $(if $(filter 12 13,$(CUDA_MAJOR)),cuda$(CUDA_MAJOR))
EXTRAS := test,workflow,slurm$(if $(CUPY_EXTRA),$(comma)$(CUPY_EXTRA))
# One stamp per set of extras, so that a machine that gains a driver installs CuPy.
STAMP := $(VENV)/.swgpu-installed-$(or $(CUPY_EXTRA),cpu)

.PHONY: .venv run test constraints

# The environment: the package (editable) with its test, workflow and slurm extras (the SLURM
# profile's tests need the plugin) and CuPy where a driver is, at the exact versions of constraints.txt. Reinstalled when either file changes.
.venv: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -c constraints.txt -e ".[$(EXTRAS)]"
	touch $@

# The default run: the Snakemake workflow with config/config.yaml on the bundled database
# (outputs under results/sample/, see config/README.md), ending with the report's path.
run: $(STAMP)
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VENV)/bin/snakemake --cores 2
	@echo "HTML report: $(CURDIR)/results/sample/report.html"

# -rs: the reason of every skip in the log (no GPU, no conda on PATH, no SLURM installed).
test: $(STAMP)
	$(VENV)/bin/python -m pytest -q -rs

# Rewrites constraints.txt from this venv after a change of the ranges in pyproject.toml
# (keeps the header and the CuPy pins, which a venv without a driver does not hold).
constraints: $(STAMP)
	{ sed -n '/^#/!q;p' constraints.txt; \
	  $(VENV)/bin/python -m pip freeze --exclude-editable | grep -v -e '^#' -e '^cupy-'; \
	  sed -n '/^# CuPy/,$$p' constraints.txt; } > constraints.txt.tmp
	mv constraints.txt.tmp constraints.txt
