# Two commands on a fresh clone: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.swgpu-installed
SWGPU := $(VENV)/bin/swgpu

.PHONY: .venv run test

# The environment: the package (editable) with test and workflow extras, plus CuPy for
# CUDA 13 when this machine has an NVIDIA driver. Reinstalled when pyproject.toml changes.
.venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -e ".[test,workflow]"
	if nvidia-smi >/dev/null 2>&1; then $(VENV)/bin/python -m pip install -e ".[test,workflow,cuda13]"; fi
	touch $@

# The default run: the Snakemake workflow with config/config.yaml on the bundled database
# (outputs under results/sample/, see config/README.md), ending with the report's path.
run: $(STAMP)
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VENV)/bin/snakemake --cores 2
	@echo "HTML report: $(CURDIR)/results/sample/report.html"

test: $(STAMP)
	$(VENV)/bin/python -m pytest -q
