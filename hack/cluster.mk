# The e2e tier's control plane (docs/local-control-plane.md). Included by the top Makefile, which
# defines VENV, PY and the venv target.
.PHONY: e2e-multicluster engines cluster-up cluster-down cluster-status e2e chaos node-up node-down e2e-real kind-up kind-down

E2E_PYTEST_ARGS ?=
# parallel phase workers (hack/e2e.sh); every run prints its slowest tests and per-file totals
E2E_WORKERS ?= 3

## Build the pinned engines (hack/versions.env) into the user cache; no-op when already built.
engines:
	bash hack/build.sh

## Start etcd, kube-apiserver, kcm, scheduler, kwok, Kueue and Argo on loopback (idempotent).
cluster-up: venv
	$(PY) hack/cluster.py up

## Stop every process cluster-up started and delete its state.
cluster-down: venv
	$(PY) hack/cluster.py down

## What runs: pids, ports, kubeconfig path.
cluster-status: venv
	$(PY) hack/cluster.py status

## e2e tests on the local control plane: up if needed, hack/e2e.sh (a parallel phase, then the
## serial one), down if it started it (hack/cluster.py with: TRAINWEAVE_KUBECONFIG set, the
## tests' exit code, 1 if down fails). JUnit XML in .cache/e2e/; durations printed at the end.
## With KUBECONFIG_E2E=<path> (e.g. from kind-up) the tests run against that cluster instead.
e2e: venv
ifeq ($(KUBECONFIG_E2E),)
	E2E_WORKERS=$(E2E_WORKERS) $(PY) hack/cluster.py with -- bash hack/e2e.sh $(PY) $(E2E_PYTEST_ARGS)
else
	E2E_WORKERS=$(E2E_WORKERS) TRAINWEAVE_KUBECONFIG=$(KUBECONFIG_E2E) bash hack/e2e.sh $(PY) $(E2E_PYTEST_ARGS)
endif

## The chaos suite at full size: tests/e2e/test_chaos.py ten times over (200 pipelines, 50
## controller kills, 10 crashes each of Kueue and Argo; docs/reliability.md). make test runs it x1.
chaos: venv
	TRAINWEAVE_CHAOS_SCALE=10 $(MAKE) e2e E2E_PYTEST_ARGS="-k test_chaos -s"

## A real node (containerd + kubelet, root) joined to the running control plane: hack/node.py,
## docs/real-containers.md. cluster-down takes it down too.
node-up: venv
	$(PY) hack/node.py up

node-down: venv
	$(PY) hack/node.py down

## Only the real-container tests (tests/e2e/test_real*.py); make e2e runs them with the rest.
e2e-real: venv
	$(MAKE) e2e E2E_PYTEST_ARGS="-k test_real"

## Docker users: a kind cluster with the same pinned Kueue/Argo/Trainer CRDs (cannot run here).
kind-up:
	bash hack/kind-up.sh up

kind-down:
	bash hack/kind-up.sh down

## MultiKueue (docs/multicluster.md): a manager and two workers (hack/multicluster.py, own state
## dirs and ports, apart from cluster-up's), tests/e2e_multicluster; down after if it started them.
## Not in `make test`.
e2e-multicluster: venv
	$(PY) hack/multicluster.py with -- $(PY) -m pytest -m e2e tests/e2e_multicluster -s --durations=12 $(E2E_PYTEST_ARGS)
