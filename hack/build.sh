#!/usr/bin/env bash
# Build the pinned engines of the local control plane (hack/versions.env) from the Go module proxy into
#   ${XDG_CACHE_HOME:-$HOME/.cache}/trainweave/components/<name>-<its pins>-r<BUILD_REVISION>/
# and link them into the folder of this versions.env,
#   ${XDG_CACHE_HOME:-$HOME/.cache}/trainweave/engines/<hash of versions.env>/bin
# A component is keyed by the pins it is built from (Argo by ARGO_WORKFLOWS_VERSION, and so on), so
# changing one pin (or a comment) builds that component alone: a cold build happens only on a new
# machine or for a changed pin. A warm run only checks stamps (bin/.<name>.ok).
# Each build holds a lock (components/<key>.lock), so invocations may run at once: a second one
# waits for a component being built and then finds it (`.ci/run` starts `all` in the background
# while the fast lane runs). Without an argument the engines build in two lanes at once (each
# lane's `go build` waits on the network as often as on the CPU: two lanes keep both cores busy).
# Prints how long each build took (also appended to <engines>/build-times.log).
# Usage: hack/build.sh [--print-dir | oracle | node | core | all | COMPONENT...]
#   --print-dir: only print the engines folder, build nothing; oracle: build only hack/oracle (unit tier);
#   node: build only the real-container node's kubelet and CoreDNS (hack/node.py);
#   core: only what the local control plane runs (etcd, Kubernetes, kwok, Argo and its CLI, Kueue);
#   all: the oracle, the engines and the node's binaries (what `make test` needs), in three lanes;
#   COMPONENT...: only those (etcd kubernetes kwok argo-cli argo kueue kueuectl trainer jobset
#   kubelet coredns).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VERSIONS="$ROOT/hack/versions.env"
set -a; . "$VERSIONS"; set +a
OVERRIDE=""
if [[ -n "${ARGO_VERSION:-}" && "$ARGO_VERSION" != "$ARGO_WORKFLOWS_VERSION" ]]; then
  # `make e2e ARGO_VERSION=v4.0.7`: an older supported Argo (docs/compatibility.md), its own folder
  [[ ",${ARGO_WORKFLOWS_SUPPORTED:-}," == *",$ARGO_VERSION,"* ]] || {
    echo "build.sh: ARGO_VERSION=$ARGO_VERSION: not one of ARGO_WORKFLOWS_SUPPORTED (${ARGO_WORKFLOWS_SUPPORTED:-none})" >&2; exit 2; }
  ARGO_WORKFLOWS_VERSION=$ARGO_VERSION
  OVERRIDE="ARGO_WORKFLOWS_VERSION=$ARGO_VERSION"
fi
pins() { cat "$VERSIONS"; [[ -z "$OVERRIDE" ]] || echo "$OVERRIDE"; }
HASH=$(pins | sha256sum | cut -c1-16)
ENG="${XDG_CACHE_HOME:-$HOME/.cache}/trainweave/engines/$HASH"
BIN="$ENG/bin"
if [[ "${1:-}" == "--print-dir" ]]; then echo "$ENG"; exit 0; fi
mkdir -p "$BIN" "$ENG/work"
pins >"$ENG/versions.env"

command -v go >/dev/null || { echo "build.sh: \`go\` is not on PATH: install Go >= 1.26 (https://go.dev/dl/) with access to the Go module proxy and put its bin/ on PATH" >&2; exit 1; }
export CGO_ENABLED=0
# hack/go-build-flags: the flags of every Go build here (the engines, the argoexec image, the tests'
# Go helpers), so a module graph compiles once into the shared build cache. -dwarf=false: no debug
# information is generated (the binaries are stripped of it anyway, -s -w), about 10 % less CPU
# (etcd from an empty build cache: 117 -> 104 CPU-s).
export GOFLAGS="${GOFLAGS:-} $(cat "$ROOT/hack/go-build-flags")"
JOBS="${BUILD_JOBS:-2}"
LOG="$ENG/build-times.log"
TOTAL0=$(date +%s)

STORE="${XDG_CACHE_HOME:-$HOME/.cache}/trainweave/components"

key_of() {  # key_of NAME: the pins the component is built from (empty: this folder's own, e.g. sources)
  case $1 in
    etcd) echo "etcd-$ETCD_VERSION" ;;
    kwok) echo "kwok-$KWOK_VERSION" ;;
    kubernetes | kubelet) echo "$1-$KUBERNETES_VERSION" ;;
    coredns) echo "coredns-$COREDNS_VERSION-$(sha256sum "$ROOT/hack/coredns/main.go" | cut -c1-12)" ;;
    kueue | kueuectl) echo "$1-$KUEUE_VERSION" ;;
    argo | argo-cli) echo "$1-$ARGO_WORKFLOWS_VERSION" ;;
    trainer | jobset | oracle-*) echo "$1-$TRAINER_VERSION" ;;  # JobSet: the version Trainer pins
    *) echo "" ;;
  esac
}

step() {  # step NAME FUNCTION: FUNCTION builds into the component's folder (once, under its lock),
  # whose files are then linked into bin/; time it
  local name=$1 fn=$2 t0 t1 key out=$BIN dir
  if [[ -f "$out/.$name.ok" ]]; then echo "build.sh: $name: up to date"; return 0; fi
  key=$(key_of "$name")
  if [[ -z "$key" ]]; then "$fn"; touch "$out/.$name.ok"; return 0; fi
  dir="$STORE/$key-r$BUILD_REVISION"
  mkdir -p "$STORE"
  exec {lock}>"$STORE/$key.lock"
  flock "$lock"  # another build.sh may be building it: wait, then it is there
  if [[ -f "$dir/.ok" ]]; then
    echo "build.sh: $name: built before ($dir)"
  else
    echo "build.sh: building $name ..."
    rm -rf "$dir"; mkdir -p "$dir"
    t0=$(date +%s)
    local BIN=$dir  # what FUNCTION writes to "$BIN/" lands in the component's folder
    "$fn"
    BIN=$out
    t1=$(date +%s)
    touch "$dir/.ok"
    echo "build.sh: built $name in $((t1 - t0))s"
    echo "$(date -u +%FT%TZ) $name $((t1 - t0))s go=$(go env GOVERSION) cpus=$(nproc)" >>"$LOG"
  fi
  for f in "$dir"/*; do ln -sfn "$f" "$out/$(basename "$f")"; done
  touch "$out/.$name.ok"
  exec {lock}>&-
}

lanes() {  # lanes "STEP FN STEP FN ..." "STEP FN ...": each lane's steps in order, lanes at once
  local pids=() lane rc=0
  for lane in "$@"; do
    ( set -- $lane; while (($#)); do step "$1" "$2"; shift 2; done ) &
    pids+=("$!")
  done
  for pid in "${pids[@]}"; do wait "$pid" || rc=$?; done
  return "$rc"
}

moddir() { go mod download -json "$1" | python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(d.get("Error")) if d.get("Error") else print(d["Dir"])'; }

# JobSet: the version Trainer's go.mod requires (the one its JobSet builder is written against), so
# TRAINER_VERSION pins it too.
jobset_version() { awk '$1 == "sigs.k8s.io/jobset" { print $2 }' "$(moddir "github.com/kubeflow/trainer/v2@$TRAINER_VERSION")/go.mod"; }
# The ProvisioningRequest API (its CRD, installed before Kueue starts): the cluster-autoscaler apis
# module at the version Kueue's go.mod requires (docs/provisioning.md), so KUEUE_VERSION pins it.
autoscaler_apis_version() { awk '$1 == "k8s.io/autoscaler/cluster-autoscaler/apis" { print $2 }' "$(moddir "sigs.k8s.io/kueue@$KUEUE_VERSION")/go.mod"; }

sources() {  # module folders holding CRDs, webhook manifests and kwok Stages (read-only, in GOMODCACHE)
  {
    echo "KUEUE_DIR=$(moddir sigs.k8s.io/kueue@$KUEUE_VERSION)"
    echo "ARGO_DIR=$(moddir github.com/argoproj/argo-workflows/v4@$ARGO_WORKFLOWS_VERSION)"
    echo "TRAINER_DIR=$(moddir github.com/kubeflow/trainer/v2@$TRAINER_VERSION)"
    echo "KWOK_DIR=$(moddir sigs.k8s.io/kwok@$KWOK_VERSION)"
    echo "JOBSET_DIR=$(moddir "sigs.k8s.io/jobset@$(jobset_version)")"
    echo "AUTOSCALER_APIS_DIR=$(moddir "k8s.io/autoscaler/cluster-autoscaler/apis@$(autoscaler_apis_version)")"
  } >"$ENG/sources.env.tmp"
  mv "$ENG/sources.env.tmp" "$ENG/sources.env"
}

etcd() {  # etcd's server/go.mod has relative replaces, so no `go install`; a wrapper module needs none of them
  local w="$ENG/work/etcd"; rm -rf "$w"; mkdir -p "$w"
  printf 'module trainweave.local/etcdbin\n\ngo 1.25.0\n\nrequire go.etcd.io/etcd/server/v3 %s\n' "$ETCD_VERSION" >"$w/go.mod"
  printf '//go:build tools\n\npackage tools\n\nimport _ "go.etcd.io/etcd/server/v3"\n' >"$w/tools.go"
  (cd "$w" && go mod tidy && go build -p "$JOBS" -o "$BIN/etcd" go.etcd.io/etcd/server/v3)
}

kwok() {
  GOBIN="$BIN" go install -p "$JOBS" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION" "sigs.k8s.io/kwok/cmd/kwokctl@$KWOK_VERSION"
}

kubernetes() {  # wrapper module: require k8s.io/kubernetes, replace every staging module by its published v0.X.Y
  k8s_build kubernetes kube-apiserver kube-controller-manager kube-scheduler kubectl
}

kubelet() {  # the real-container node's kubelet (hack/node.py), same wrapper shape in its own folder
  k8s_build kubelet kubelet
}

k8s_build() {  # k8s_build WORKDIR COMPONENT...: build k8s.io/kubernetes/cmd/COMPONENT for each into bin/
  local w="$ENG/work/$1" kdir v0 ld p c
  shift
  rm -rf "$w"; mkdir -p "$w"
  kdir=$(moddir "k8s.io/kubernetes@$KUBERNETES_VERSION")
  v0="v0.${KUBERNETES_VERSION#v1.}"
  {
    printf 'module trainweave.local/k8sbin\n\ngo 1.26.0\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n' "$KUBERNETES_VERSION"
    # the staging list is taken from the tag's own go.mod: `k8s.io/X => ./staging/src/k8s.io/X`
    sed -nE 's#^[[:space:]]*(k8s\.io/[a-z0-9-]+) => \./staging/src/k8s\.io/[a-z0-9-]+$#\t\1 => \1 '"$v0"'#p' "$kdir/go.mod"
    printf ')\n'
  } >"$w/go.mod"
  echo "build.sh: kubernetes wrapper replaces $(grep -c '=>' "$w/go.mod") staging modules"
  printf '//go:build tools\n\npackage tools\n\nimport (\n' >"$w/tools.go"
  for c in "$@"; do printf '\t_ "k8s.io/kubernetes/cmd/%s"\n' "$c" >>"$w/tools.go"; done
  printf ')\n' >>"$w/tools.go"
  ld="-s -w"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld="$ld -X $p.gitVersion=$KUBERNETES_VERSION -X $p.gitMajor=$(echo "$KUBERNETES_VERSION" | cut -d. -f1 | tr -d v)"
    ld="$ld -X $p.gitMinor=$(echo "$KUBERNETES_VERSION" | cut -d. -f2) -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
  done
  (cd "$w" && go mod tidy && go build -p "$JOBS" -tags=selinux,notest,grpcnotrace -ldflags "$ld" -o "$BIN/" \
    $(printf 'k8s.io/kubernetes/cmd/%s ' "$@"))
}

coredns() {  # the node's cluster DNS: hack/coredns/main.go, CoreDNS's coremain with only the plugins it uses
  local w="$ENG/work/coredns" mod=github.com/coredns/coredns
  rm -rf "$w"; mkdir -p "$w"
  printf 'module trainweave.local/coredns\n\ngo 1.26.0\n\nrequire %s %s\n' "$mod" "$COREDNS_VERSION" >"$w/go.mod"
  cp "$ROOT/hack/coredns/main.go" "$w/"
  cp "$(moddir "$mod@$COREDNS_VERSION")/go.sum" "$w/go.sum"; chmod u+w "$w/go.sum"
  (cd "$w" && go mod tidy && go build -p "$JOBS" -ldflags "-s -w -X $mod/coremain.GitCommit=$COREDNS_VERSION" -o "$BIN/coredns" .)
}

wrapped() {  # wrapped NAME MODULE VERSION PACKAGE LDFLAGS: `go build` through a wrapper module.
  # `go install MOD@VER` also reads the module's version list for deprecation notices; the proxy here
  # answers 403 for the lists of sigs.k8s.io/kueue and argo-workflows/v4, so install cannot be used.
  local name=$1 mod=$2 ver=$3 pkg=$4 ld=$5 w="$ENG/work/$1"
  rm -rf "$w"; mkdir -p "$w"
  printf 'module trainweave.local/%sbin\n\ngo 1.26.0\n\nrequire %s %s\n' "$name" "$mod" "$ver" >"$w/go.mod"
  printf '//go:build tools\n\npackage tools\n\nimport _ "%s"\n' "$pkg" >"$w/tools.go"
  # Start from the module's own go.sum: some of its dependencies (e.g. kueue's
  # sigs.k8s.io/scheduler-library) have no checksum-database entry, but their sums are pinned there.
  cp "$(moddir "$mod@$ver")/go.sum" "$w/go.sum"; chmod u+w "$w/go.sum"
  (cd "$w" && go mod tidy && go build -p "$JOBS" -ldflags "$ld" -o "$BIN/$(basename "$pkg")" "$pkg")
}

kueue() {
  wrapped kueue sigs.k8s.io/kueue "$KUEUE_VERSION" sigs.k8s.io/kueue/cmd/kueue \
    "-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion=$KUEUE_VERSION"
}

kueuectl() {  # Kueue's own CLI (also `kubectl kueue`) for the admin's view (tests/e2e/test_admin_view.py)
  wrapped kueuectl sigs.k8s.io/kueue "$KUEUE_VERSION" sigs.k8s.io/kueue/cmd/kueuectl \
    "-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion=$KUEUE_VERSION"
}

argo() {
  wrapped argo github.com/argoproj/argo-workflows/v4 "$ARGO_WORKFLOWS_VERSION" \
    github.com/argoproj/argo-workflows/v4/cmd/workflow-controller \
    "-s -w -X github.com/argoproj/argo-workflows/v4.version=$ARGO_WORKFLOWS_VERSION"
}

argo_cli() {  # the `argo` CLI (server + lint) of the same module. cmd/argo embeds ui/dist/app
  # (ui/embed.go), which the published module lacks; upstream's own Makefile with STATIC_FILES=false
  # creates an empty ui/dist/app/index.html instead of building the UI. The module cache is
  # read-only, so a copy of the module with that placeholder is `replace`d into the wrapper.
  local w="$ENG/work/argo-cli" mod=github.com/argoproj/argo-workflows/v4
  rm -rf "$w"; mkdir -p "$w"
  cp -r "$(moddir "$mod@$ARGO_WORKFLOWS_VERSION")" "$w/src"; chmod -R u+w "$w/src"
  mkdir -p "$w/src/ui/dist/app"; touch "$w/src/ui/dist/app/index.html"
  printf 'module trainweave.local/argoclibin\n\ngo 1.26.0\n\nrequire %s %s\n\nreplace %s => ./src\n' \
    "$mod" "$ARGO_WORKFLOWS_VERSION" "$mod" >"$w/go.mod"
  printf '//go:build tools\n\npackage tools\n\nimport _ "%s/cmd/argo"\n' "$mod" >"$w/tools.go"
  cp "$w/src/go.sum" "$w/go.sum"
  (cd "$w" && go mod tidy && go build -p "$JOBS" -ldflags "-s -w -X $mod.version=$ARGO_WORKFLOWS_VERSION" \
    -o "$BIN/argo" "$mod/cmd/argo")
}

trainer() {  # upstream's reference: Kubeflow Trainer's controller manager (tests/upstream, benchmarks)
  wrapped trainer github.com/kubeflow/trainer/v2 "$TRAINER_VERSION" \
    github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager "-s -w"
}

jobset() {  # ... and the JobSet controller it drives
  wrapped jobset sigs.k8s.io/jobset "$(jobset_version)" sigs.k8s.io/jobset "-s -w"
}

oracle() {  # hack/oracle linked against the pinned Trainer module (go.mod generated here, from its go.sum)
  local w="$ENG/work/oracle"
  rm -rf "$w"; mkdir -p "$w"
  printf 'module trainweave.local/oracle\n\ngo 1.26.0\n\nrequire github.com/kubeflow/trainer/v2 %s\n' "$TRAINER_VERSION" >"$w/go.mod"
  cp "$ROOT/hack/oracle/main.go" "$w/"
  cp "$(moddir "github.com/kubeflow/trainer/v2@$TRAINER_VERSION")/go.sum" "$w/go.sum"; chmod u+w "$w/go.sum"
  (cd "$w" && go mod tidy && go build -p "$JOBS" -ldflags "-s -w" -o "$BIN/oracle" .)
}
# The oracle's stamp follows its source, so editing hack/oracle/main.go rebuilds it.
ORACLE_STAMP="oracle-$(sha256sum "$ROOT/hack/oracle/main.go" | cut -c1-12)"

step sources-3 sources  # -3: AUTOSCALER_APIS_DIR added (the stamp makes an engines folder write it again)
# Named components only (`build.sh argo-cli`, `build.sh trainer jobset`): what one test or command
# needs, not every engine (a wait under the lock when the background build is making it).
declare -A FN=([etcd]=etcd [kubernetes]=kubernetes [kwok]=kwok [argo-cli]=argo_cli [argo]=argo
  [kueue]=kueue [kueuectl]=kueuectl [trainer]=trainer [jobset]=jobset [kubelet]=kubelet [coredns]=coredns)
if [[ -n "${1:-}" && -n "${FN[${1}]:-}" ]]; then
  for c in "$@"; do
    [[ -n "${FN[$c]:-}" ]] || { echo "build.sh: $c: not a component (${!FN[*]})" >&2; exit 2; }
    step "$c" "${FN[$c]}"
  done
  exit 0
fi
case "${1:-}" in "" | oracle | node | core | all) ;; *) echo "build.sh: $1: not a target (oracle node core all, or components: ${!FN[*]})" >&2; exit 2 ;; esac
if [[ "${1:-}" == "oracle" ]]; then step "$ORACLE_STAMP" oracle; echo "build.sh: oracle ready in $BIN"; exit 0; fi
if [[ "${1:-}" == "node" ]]; then step kubelet kubelet; step coredns coredns; echo "build.sh: node binaries ready in $BIN"; exit 0; fi
# Lane one: etcd, Kubernetes' modules (kube-apiserver & co.), then the real node's kubelet (from
# the same build cache) and CoreDNS (with `all`); lane two: Argo's CLI (the schema tier and
# `make argo-lint` need it first), Argo, kwok; lane three: (with `all`: the oracle, the schema
# tier's, first) Kueue, then kueuectl, Trainer (the oracle's module graph) and JobSet. The
# first steps up to kwok and Kueue are `core`, what `hack/cluster.py up` starts: it builds only
# those, so on a cold machine the e2e tier starts while the rest builds, and the lanes are laid
# out so that the core steps of all three end about together (a cold run's step times, three
# lanes on two cores: etcd 176 s + Kubernetes 905 s; Argo's CLI 784 s + Argo 58 s + kwok 325 s;
# oracle 436 s + Kueue 435-560 s). A cold build is CPU-bound
# (the module proxy answers at ~50 MB/s), so three lanes on two cores lose nothing. The users of
# the rest build it first (hack/node.py: `node`; `upstream on`: `trainer jobset`; test_timeline:
# `kueuectl`; test_argo_pins: `argo-cli`), waiting under the locks for a build under way.
ONE="etcd etcd kubernetes kubernetes"
TWO="argo-cli argo_cli argo argo kwok kwok"
THREE="kueue kueue"
if [[ "${1:-}" == "core" ]]; then lanes "$ONE" "$TWO" "$THREE"; echo "build.sh: core engines ready in $BIN (total $(($(date +%s) - TOTAL0))s)"; exit 0; fi
THREE="$THREE kueuectl kueuectl trainer trainer jobset jobset"
if [[ "${1:-}" == "all" ]]; then
  lanes "$ONE kubelet kubelet coredns coredns" "$TWO" "$ORACLE_STAMP oracle $THREE"
else
  lanes "$ONE" "$TWO" "$THREE"
fi
echo "build.sh: engines ready in $BIN (total $(($(date +%s) - TOTAL0))s)"
