#!/usr/bin/env bash
# bench_scaling_model across two simulated hosts: measure over a link with 1, then 2 ranks per host,
# and predict 4 ranks on 2 hosts from that. The profile must hold the link's entries, those at the
# load of 2 ranks per host for each communicator, and the compute keyed by the processes on the
# machine (the simulated hosts share it: 2, then 4). The hosts are network namespaces
# (scripts/netns-cluster) or host names alone (scripts/uts-host, where MPI sees one machine and the
# ranks are grouped by host name, as the communicators group them). Exit 77 (skipped) where
# simulated hosts cannot be made.
#   tests/unit/bench/scaling_model_hosts.sh BENCH_SCALING_MODEL netns|uts
set -euo pipefail
bin=$1
kind=${2:-netns}
[[ "$kind" == netns || "$kind" == uts ]] || { echo "scaling_model_hosts: netns or uts, got '$kind'" >&2; exit 2; }
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() {
  echo "scaling_model_hosts: $*" >&2
  exit 1
}
# on_hosts -n K CMD...: CMD on 2 simulated hosts of K ranks made for it (77 where they cannot be made).
on_hosts() {
  local rc=0 k=$2
  shift 2
  if [[ "$kind" == netns ]]; then
    "$root/scripts/netns-cluster" test -n "$k" "$@" || rc=$?
  else
    RENSA_UTS_PER_HOST=$k "$root/scripts/uts-host" test $((2 * k)) "$@" || rc=$?
  fi
  ((rc != 77)) || exit 77
  return "$rc"
}

quick=(--model mlp --batchsize 8 --steps 1 --warmup 0 --repeats 1 -p "$work/prof.json")
"$bin" measure "${quick[@]}"
on_hosts -n 1 "$bin" measure "${quick[@]}" --link sim
on_hosts -n 2 "$bin" measure "${quick[@]}" --link sim
for key in "compute mlp b8 t1 P1 none" "compute mlp b8 t1 P2 float32" "inter M2 sim float16" "beside M2 sim float32" \
  "compute mlp b8 t1 P4 float32" "intra k2 P4 float32" "beside k2 P4 bfloat16" \
  "beside M2 k2 P4 flat sim float32" "beside M2 k2 P4 hierarchical sim float16" \
  "beside M2 k2 P4 two_dimensional sim bfloat16"; do
  grep -q "\"$key\"" "$work/prof.json" || fail "the profile lacks \"$key\""
done

out=$("$bin" predict -p "$work/prof.json" --model mlp --batchsize 8 -n 4 --per-host 2 --machine-procs 4 \
  --communicator two_dimensional --link sim)
echo "$out"
[[ "$out" =~ "4 ranks on 2 hosts, two_dimensional, float32 wire, overlap: step "[0-9.]+" ms".*"contention "-?[0-9.]+" (link "-?[0-9.]+")" ]] ||
  fail "predict printed no prediction with the link's contention"

# Bad input: several hosts without a link name.
if on_hosts -n 1 "$bin" measure "${quick[@]}" > "$work/err.log" 2>&1; then fail "measure across hosts without --link must fail"; fi
grep -q "several hosts need --link NAME" "$work/err.log" || fail "the error must name --link: $(cat "$work/err.log")"
echo "scaling_model_hosts ($kind): passed"
