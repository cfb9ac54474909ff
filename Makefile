# trainweave: the two commands are `make example` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: venv example test unit lint typecheck bench

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[dev]'
	touch $@

venv: $(VENV)/.installed

## Render the built-in LLM fine-tuning example to stdout.
example: venv
	$(VENV)/bin/trainweave render examples/llm-finetune/trainjob.yaml \
	  --runtime examples/llm-finetune/runtime.yaml

## Everything CI runs: lint, types, unit + schema tests, then the e2e tier on a real control plane.
test: lint typecheck unit e2e

unit: venv
	$(PY) -m pytest -q

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports

typecheck: venv
	$(VENV)/bin/mypy

include hack/cluster.mk
