#!/usr/bin/env bash
# Runs the e2e packages as jobs, SPOKEKIT_E2E_JOBS at once (default: one
# per core), in the order given, each its own `go test` that says how long
# it took. e2e/spoke, the longest package, is three jobs, each with
# clusters of its own: its addon pass (every test) in two shards, and its
# unified pass (the tests whose behaviour differs by FleetConfig mode).
# With -run, the addon pass is one job. Four jobs fit the 2-core machine of
# 2026-12-04; on a machine of the same size that runs everything 1.5-2
# times slower (25-40% of its CPU time in the kernel), four jobs starved
# e2e/park's platform API server in two runs of two, and three kept the
# CPU at 100% (load 16-19): Machine patches took 20-60 s and Cluster API
# never brought up the clusters of five park tests; with two, the whole
# stage took 1,956 s instead of 2,612. The test binaries are compiled once,
# first, so the jobs do not compile the same packages side by side.
#
# usage: e2e.sh [GO_TEST_FLAG...] -- PACKAGE...
set -uo pipefail

flags=()
while (($#)) && [[ $1 != -- ]]; do flags+=("$1"); shift; done
shift || { echo "usage: e2e.sh [GO_TEST_FLAG...] -- PACKAGE..." >&2; exit 2; }

module=$(go list -m) || exit
# The packages with tests, once each, in the order given (go list keeps it).
mapfile -t pkgs < <(go list -tags e2e -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' "$@") || exit
((${#pkgs[@]})) || { echo "e2e: no test packages in: $*" >&2; exit 2; }

s=$SECONDS
bin=$(mktemp -d) && trap 'rm -rf "$bin"' EXIT
go test -tags e2e -c -o "$bin/" "${pkgs[@]}" || exit
echo "== e2e: compiled ${#pkgs[@]} test packages: $((SECONDS - s))s"

# jobs: "MODE SHARD PACKAGE": the FleetConfig mode and shard (i/n) of one of
# e2e/spoke's passes, or "- -" for a package that has one pass. The packages
# named one by one (the Makefile names the long ones, longest first:
# e2e/park, e2e/spoke, e2e/fleetdrain) queue first, in order; then
# e2e/spoke's unified pass, shorter than those; then the rest of a pattern's
# packages. So e2e/fleetdrain starts in the first free slot, and its Cluster
# API test, which waits for e2e/park's end, does not also wait behind the
# unified pass.
max=${SPOKEKIT_E2E_JOBS:-$(nproc)}
shards="1/2 2/2"
[[ " ${flags[*]} " == *" -run "* ]] && shards=1/1
named=0
for arg in "$@"; do
  [[ $arg == *...* ]] && continue
  named=$((named + $(go list -tags e2e -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' "$arg" | grep -c .)))
done
# A pattern alone: the unified pass goes last.
((named)) || named=${#pkgs[@]}
jobs=() later=() first=0
for i in "${!pkgs[@]}"; do
  pkg=${pkgs[i]}
  if [[ $pkg == "$module/e2e/spoke" && -z ${SPOKEKIT_E2E_FLEET_MODE:-} ]]; then
    for sh in $shards; do jobs+=("addon $sh $pkg"); done
    later=("unified 1/1 $pkg")
  else
    jobs+=("- - $pkg")
  fi
  ((i < named)) && first=${#jobs[@]}
done
jobs=("${jobs[@]:0:first}" "${later[@]}" "${jobs[@]:first}")

failed=$(mktemp) && trap 'rm -rf "$bin" "$failed"' EXIT
run_job() {
  local mode=$1 shard=$2 pkg=$3 name=${3#"$module/"} start=$SECONDS rc
  if [[ $mode == - ]]; then
    go test -tags e2e -count=1 "${flags[@]}" "$pkg"
  else
    name+=" ($mode mode$([[ $shard == 1/1 ]] || echo ", shard $shard"))"
    SPOKEKIT_E2E_FLEET_MODE=$mode SPOKEKIT_E2E_SHARD=$shard go test -tags e2e -count=1 "${flags[@]}" "$pkg"
  fi
  rc=$?
  echo "== $name: $((SECONDS - start))s (exit $rc)"
  ((rc == 0)) || echo "$name" >>"$failed"
}

for job in "${jobs[@]}"; do
  while (($(jobs -rp | wc -l) >= max)); do wait -n; done
  # shellcheck disable=SC2086 # a job is three words
  run_job $job &
done
wait

if [[ -s $failed ]]; then
  echo "e2e: failed: $(paste -sd, "$failed" | sed 's/,/, /g')"
  exit 1
fi
