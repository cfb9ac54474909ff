# trainweave: the two commands are `make example` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: venv example test check unit unit-fast schema lint typecheck bench bench-admission linktree promtool argo-lint

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

## Everything CI runs (hack/test.sh): lint first, then the e2e tier on a real control plane, and
## beside its serial phase the rest of the fast lane (types, the unit tier, the schema tests,
## promtool, argo lint; its log printed at the end). `make check` is the quick loop without Go.
test: venv
	bash hack/test.sh $(MAKE)

## The development loop without Go or engines: lint, types and the unit tier.
check: lint typecheck unit-fast

## Prometheus rules: promtool check rules + test rules (hack/promtool.sh finds promtool on PATH or
## installs it: from Debian's prometheus package, else built from its Go module).
promtool:
	P=$$(hack/promtool.sh) && $$P --version 2>&1 | head -1 && \
	  $$P check rules deploy/prometheus-rules.yaml && \
	  cd deploy && $$P test rules prometheus-rules.test.yaml

## Argo's own validation: `argo lint --offline` (the pinned Argo CLI, hack/build.sh) of every
## rendered example, the Hera examples and every Workflow under tests/ (hack/argo-lint.sh).
argo-lint: venv
	bash hack/argo-lint.sh $(VENV)

## Unit and schema tests. The schema tests need Go >= 1.26 (hack/need_go.sh says so in one line
## when it is missing); PYTEST_ARGS='-m "not e2e and not schema"' runs the rest without Go.
## `make unit-fast` and `make schema` are the two halves of `make unit`, as `make test` runs them.
PYTEST_ARGS ?=
unit: venv
	@$(if $(findstring not schema,$(PYTEST_ARGS)),true,bash hack/need_go.sh)
	$(PY) -m pytest -q $(PYTEST_ARGS)

unit-fast: venv
	$(PY) -m pytest -q -m 'not e2e and not schema' $(PYTEST_ARGS)

schema: venv
	@bash hack/need_go.sh
	$(PY) -m pytest -q -m schema $(PYTEST_ARGS)

lint: venv linktree
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	cd .cache/typecheck && PYTHONPATH=. ../../$(VENV)/bin/lint-imports --config ../../pyproject.toml

# mypy and import-linter cannot follow setuptools' package-dir mapping, so give them a tree
# of links in which adapters/, integrations/ and workflows/ sit inside trainweave/; tests/ and
# benchmarks/ sit beside it, so the tests resolve `tests.unit...` and `benchmarks...` as pytest does.
linktree:
	rm -rf .cache/typecheck && mkdir -p .cache/typecheck/trainweave
	for f in trainweave/*; do ln -s "$$PWD/$$f" .cache/typecheck/trainweave/; done
	for d in adapters integrations workflows; do ln -s "$$PWD/$$d" .cache/typecheck/trainweave/$$d; done
	for d in tests benchmarks; do ln -s "$$PWD/$$d" .cache/typecheck/$$d; done

# The package, tests/unit, tests/e2e and the helper modules directly under tests/ (tests/*.py;
# what they import, such as tests/oracle/harness.py, is checked with them), all under the strict
# config. tests/e2e imports benchmarks/admission.py by name (importlib), so it is checked as a file.
# hack/ and benchmarks/ are scripts, not packages (cluster.py imports engine_config as a sibling):
# checked as files, in a second run (mypy takes either -p/-m or files).
TEST_MODULES := $(patsubst tests/%.py,tests.%,$(filter-out tests/__init__.py,$(wildcard tests/*.py)))
typecheck: venv linktree
	cd .cache/typecheck && ../../$(VENV)/bin/mypy --config-file ../../pyproject.toml -p trainweave \
	  -p tests.unit -p tests.e2e -p tests.e2e_multicluster $(addprefix -m ,$(TEST_MODULES))
	cd .cache/typecheck && ../../$(VENV)/bin/mypy --config-file ../../pyproject.toml \
	  $(addprefix ../../,$(wildcard hack/*.py benchmarks/*.py))

## Render throughput vs targets (first run creates ~/.cache/trainweave/bench-venv with kfp 2.17.3).
bench: venv
	$(PY) benchmarks/render.py

## GPU admission, upstream (Trainer + JobSet + Kueue) against trainweave on the same engines: the
## three traces of 24 TrainJobs (about 50 min; BENCH_ARGS="--scale 0.5" halves the durations, as in
## docs/benchmarks.md: 24 min). Starts the local control plane if it is not up (and stops it after).
BENCH_ARGS ?=
bench-admission: venv
	$(PY) -c "import matplotlib" 2>/dev/null || $(VENV)/bin/pip install -q "matplotlib==3.11.2"
	$(PY) hack/cluster.py with -- $(PY) benchmarks/admission.py $(BENCH_ARGS)

include hack/cluster.mk
