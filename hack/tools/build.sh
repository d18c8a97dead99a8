#!/usr/bin/env bash
# Builds the pinned tools, each from its own Go module through the Go module
# proxy: the build and release tools beside this script (hack/tools: golangci-lint
# for `make lint`, controller-gen for `make generate`, GoReleaser for `make dist`)
# and the test bed under e2e/tools (Kubernetes control plane and kubectl, etcd,
# kwok and kwokctl, krew, Open Cluster Management, the Cluster API managers).
# Each module's binaries are cached under a directory keyed by the hash of its
# go.mod, go.sum and Go files, so a change rebuilds only that module and a warm
# run takes seconds.
#
# usage: build.sh BIN_DIR [MODULE...]   (BIN_DIR gets links to every tool, or to
#        those of the named modules only, e.g. `build.sh BIN_DIR goreleaser`)
set -euo pipefail

bin=${1:?usage: build.sh BIN_DIR [MODULE...]}
only=" ${*:2} "
here=$(cd "$(dirname "$0")" && pwd)
e2e_tools=$(cd "$here/../../e2e/tools" && pwd)
cache=${SPOKEKIT_CACHE:-$HOME/.cache/spokekit}/tools
mkdir -p "$bin" "$cache"

# Modules build side by side, up to TOOL_JOBS at once (default: the number of
# cores): each go build compiles in parallel but links one binary on one core,
# and the Kubernetes, OCM and Cluster API links take minutes, so a second
# module's compile fills the idle core. The Go caches are safe to share.
jobs=${SPOKEKIT_TOOL_JOBS:-$(nproc)}
failed=0
wait_one() { wait -n || failed=1; }

# build MODULE NAME=PACKAGE... : builds each PACKAGE as NAME into the module's
# cache dir, in the background (see jobs above).
build() {
  local mod=$1
  [[ $only == "  " || $only == *" $mod "* ]] || return 0
  while (($(jobs -rp | wc -l) >= jobs)); do wait_one; done
  build_module "$@" &
}

build_module() {
  local mod=$1; shift
  local src=$here/$mod key dir
  [[ -d $src ]] || src=$e2e_tools/$mod
  key=$( (cat "$src/go.mod" "$src/go.sum" $(compgen -G "$src/*.go"); echo "${LDFLAGS:-} $*") | sha256sum | cut -c1-16)
  dir=$cache/$mod-$key
  # Two builds of one module at once would delete each other's output: take turns.
  local lock
  exec {lock}>"$cache/$mod.lock"
  flock "$lock"
  if [[ ! -f $dir/.complete ]]; then
    echo "e2e-tools: building $mod into $dir (first time only)"
    rm -rf "$dir" && mkdir -p "$dir"
    local spec name pkg start=$SECONDS together=()
    for spec in "$@"; do
      name=${spec%%=*} pkg=${spec#*=}
      # A package whose binary go names NAME already joins one go build with
      # the others like it, which links them in parallel; the rest are
      # built one by one under their names.
      if [[ ${pkg##*/} == "$name" ]]; then
        together+=("$pkg")
      else
        (cd "$src" && go build -trimpath -ldflags "${LDFLAGS:--s -w}" -o "$dir/$name" "$pkg")
      fi
    done
    if ((${#together[@]})); then
      (cd "$src" && go build -trimpath -ldflags "${LDFLAGS:--s -w}" -o "$dir/" "${together[@]}")
    fi
    touch "$dir/.complete"
    echo "e2e-tools: $mod built in $((SECONDS - start))s"
  fi
  local f
  for f in "$dir"/*; do ln -sfn "$f" "$bin/$(basename "$f")"; done
}

# Asking the kubernetes module for its version resolves its module graph: only
# when that module is wanted (`make lint` builds just controller-gen and golangci-lint).
if [[ $only == "  " || $only == *" kubernetes "* ]]; then
  kube_version=$(cd "$e2e_tools/kubernetes" && go list -m -f "{{.Version}}" k8s.io/kubernetes)
  kube_minor=$(echo "$kube_version" | cut -d. -f2)
  # Stamp the release into the Kubernetes binaries: kwokctl and kubectl read it.
  kube_ldflags="-s -w"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    kube_ldflags+=" -X $p.gitVersion=$kube_version -X $p.gitMajor=1 -X $p.gitMinor=$kube_minor -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
  done
  LDFLAGS=$kube_ldflags build kubernetes \
    kube-apiserver=k8s.io/kubernetes/cmd/kube-apiserver \
    kube-controller-manager=k8s.io/kubernetes/cmd/kube-controller-manager \
    kube-scheduler=k8s.io/kubernetes/cmd/kube-scheduler \
    kubectl=k8s.io/kubernetes/cmd/kubectl
fi
build etcd etcd=go.etcd.io/etcd/server/v3
build kwok kwok=sigs.k8s.io/kwok/cmd/kwok kwokctl=sigs.k8s.io/kwok/cmd/kwokctl
build controller-gen controller-gen=sigs.k8s.io/controller-tools/cmd/controller-gen
build krew kubectl-krew=sigs.k8s.io/krew/cmd/krew validate-krew-manifest=sigs.k8s.io/krew/cmd/validate-krew-manifest
# One binary with upstream's hub controllers, registration webhook and agent (see main.go).
build ocm ocm=.
# The kubeadm bootstrap and control-plane managers are both package "kubeadm":
# each gets its own name.
build cluster-api \
  capi-core=sigs.k8s.io/cluster-api/core \
  capi-kubeadm-bootstrap=sigs.k8s.io/cluster-api/bootstrap/kubeadm \
  capi-kubeadm-control-plane=sigs.k8s.io/cluster-api/controlplane/kubeadm \
  capi-docker=sigs.k8s.io/cluster-api/test/infrastructure/docker
build goreleaser goreleaser=github.com/goreleaser/goreleaser/v2
build golangci-lint golangci-lint=github.com/golangci/golangci-lint/v2/cmd/golangci-lint
while (($(jobs -rp | wc -l))); do wait_one; done
if ((failed)); then
  echo "e2e-tools: a tool failed to build (its error is above)" >&2
  exit 1
fi
echo "e2e-tools: ready in $bin"
