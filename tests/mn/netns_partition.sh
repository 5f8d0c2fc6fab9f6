#!/usr/bin/env bash
# A permanent network partition must not hang a job: train_mnist on two simulated hosts (one rank
# each, --timeout T), then host 1's link is cut for good. The whole job (mpirun included) must end
# within T plus a few seconds, naming what happened. Exit 77 (skipped) where simulated hosts cannot
# be made.
#   tests/mn/netns_partition.sh TRAIN_MNIST [T]
set -euo pipefail
exe=$1
timeout_s=${2:-10}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cluster=$root/scripts/netns-cluster
if [[ $(id -u) -ne 0 ]] || ! command -v ip > /dev/null || ! command -v unshare > /dev/null; then
  echo "partition: skipped: needs root, ip and unshare"
  exit 77
fi
work=$(mktemp -d)
log=$work/job.log
hosts_up=0
cleanup() {
  if ((hosts_up)); then
    # Whatever the cut-off host still runs (its daemon, a rank) dies with it.
    for ns in $("$cluster" status); do ip netns pids "$ns" | xargs -r kill -9 2> /dev/null || true; done
    "$cluster" down > /dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
[[ -z "$("$cluster" status)" ]] || "$cluster" down > /dev/null
if ! "$cluster" up 2 > /dev/null 2>&1; then
  echo "partition: skipped: network namespaces are not available here"
  exit 77
fi
hosts_up=1

"$cluster" run -n 1 "$exe" --communicator flat --epoch 1000 --unit 50 --batchsize 100 --out "$work/result" \
  --timeout "$timeout_s" > "$log" 2>&1 &
job=$!
# Cut once training is under way (the first epoch's snapshots are written).
for ((i = 0; i < 600; i++)); do
  compgen -G "$work/result/snapshot_mn_iter_*" > /dev/null && break
  kill -0 "$job" 2> /dev/null || { cat "$log"; echo "partition: the job ended before the cut"; exit 1; }
  sleep 0.1
done
"$cluster" cut 1
cut_at=$(date +%s.%N)
limit=$(echo "$timeout_s + 15" | bc)
rc=0
while kill -0 "$job" 2> /dev/null; do
  if (($(echo "$(date +%s.%N) - $cut_at > $limit" | bc))); then
    cat "$log"
    echo "partition: the job still runs ${limit} s after the cut"
    kill -9 "$job" 2> /dev/null || true
    exit 1
  fi
  sleep 0.2
done
wait "$job" || rc=$?
took=$(echo "$(date +%s.%N) - $cut_at" | bc)
grep -a -E "rank|ORTE|lost" "$log" | tail -n 12
echo "partition: the job ended with exit code $rc ${took} s after the cut (timeout $timeout_s s)"
if ((rc == 0)); then
  echo "partition: the job must fail"
  exit 1
fi
if ! grep -aq -E "waiting for rank 1 on host|lost communication with a remote daemon" "$log"; then
  echo "partition: neither the watchdog nor the launcher said what happened"
  exit 1
fi
