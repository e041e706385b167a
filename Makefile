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

# The default run on the bundled database (a CLI search until the workflow exists).
run: $(STAMP)
	$(SWGPU) makedb resources/db.fasta.gz results/db
	$(SWGPU) search --db results/db --query resources/queries.fasta --out results/hits.tsv
	@echo "results in results/hits.tsv"

test: $(STAMP)
	$(VENV)/bin/python -m pytest -q
