#!/usr/bin/env bash
# For Docker users: a kind cluster running the same pinned Kueue / Argo releases (hack/versions.env),
# the Trainer CRDs, and kwok fake nodes with the same Stages, node pools, flavors and Kueue
# configuration as the local control plane (hack/cluster.py render). Then:
#   make e2e KUBECONFIG_E2E=$(bash hack/kind-up.sh kubeconfig)
# NOT RUN HERE: the trainweave development machines have no Docker engine and no GitHub release
# downloads. Needs: kind, kubectl, docker, go (for the Trainer CRDs), .venv (make venv).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
set -a; . "$ROOT/hack/versions.env"; set +a
NAME=${KIND_CLUSTER_NAME:-trainweave-e2e}
KC=${KIND_KUBECONFIG:-${XDG_CACHE_HOME:-$HOME/.cache}/trainweave/kind.kubeconfig}
K="kubectl --kubeconfig $KC"
GH=https://github.com

case "${1:-up}" in
kubeconfig) echo "$KC"; exit 0 ;;
down) kind delete cluster --name "$NAME"; rm -f "$KC"; exit 0 ;;
up) ;;
*) echo "usage: $0 up|down|kubeconfig" >&2; exit 2 ;;
esac

mkdir -p "$(dirname "$KC")"
kind get clusters | grep -qx "$NAME" || kind create cluster --name "$NAME" --kubeconfig "$KC" \
  --image "kindest/node:$KUBERNETES_VERSION" --wait 120s
R=$(mktemp -d); trap 'rm -rf "$R"' EXIT
"$ROOT/.venv/bin/python" "$ROOT/hack/cluster.py" render --out "$R"

# kwok (controller + Stage CRD), our Stages instead of the release's stage-fast.yaml, fake nodes
$K apply -f "$GH/kubernetes-sigs/kwok/releases/download/$KWOK_VERSION/kwok.yaml"
$K wait --for=condition=Established crd/stages.kwok.x-k8s.io --timeout=60s
$K apply -f "$R/stages.yaml"
$K apply -f "$R/nodes.yaml"   # status is kept on create only: ok for a fresh cluster

# Kueue release + our configuration (pod integration for labelled namespaces, waitForPodsReady)
$K apply --server-side -f "$GH/kubernetes-sigs/kueue/releases/download/$KUEUE_VERSION/manifests.yaml"
$K -n kueue-system create configmap kueue-manager-config \
  --from-file=controller_manager_config.yaml="$R/kueue-config.yaml" --dry-run=client -o yaml | $K apply -f -
$K -n kueue-system rollout restart deployment/kueue-controller-manager
$K -n kueue-system rollout status deployment/kueue-controller-manager --timeout=300s
until $K apply -f "$R/flavors.yaml"; do sleep 2; done   # webhooks up

# Argo Workflows release (CRDs need server-side apply)
$K create namespace argo --dry-run=client -o yaml | $K apply -f -
$K -n argo apply --server-side -f "$GH/argoproj/argo-workflows/releases/download/$ARGO_WORKFLOWS_VERSION/install.yaml"
$K -n argo rollout status deployment/workflow-controller --timeout=300s

# Kubeflow Trainer CRDs only, from the same Go module as the local control plane
TRAINER_DIR=$(go mod download -json "github.com/kubeflow/trainer/v2@$TRAINER_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
$K apply --server-side -f "$TRAINER_DIR/manifests/base/crds/"
echo "kind-up: ready; run: make e2e KUBECONFIG_E2E=$KC"
