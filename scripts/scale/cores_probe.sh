#!/bin/bash
# What a host gives to independent one-thread work: one copy of `hooke bench grid:256
# --threads 1` alone on CPU 0, then beside a copy on each other CPU k (two hardware threads of
# one core would slow each other), then one copy on every CPU at once. Prints ms/frame medians.
# Usage: scripts/scale/cores_probe.sh [HOOKE] [CPUS]   (default target/release/hooke, nproc)
set -u
B=${1:-target/release/hooke}
N=${2:-$(nproc)}
m() { grep -o "median [0-9.]* ms/frame" | grep -o "[0-9.]*" | head -1; }
run() { taskset -c "$1" "$B" bench grid:256 --threads 1 --frames "$2" --warmup 2 2>&1; }
echo "alone on cpu 0: $(run 0 10 | m)"
for k in $(seq 1 $((N - 1))); do
  run "$k" 14 >/dev/null &
  sleep 0.3
  echo "cpu 0 beside cpu $k: $(run 0 10 | m)"
  wait
done
dir=$(mktemp -d)
for c in $(seq 0 $((N - 1))); do (run "$c" 10 | m > "$dir/$c") & done
wait
echo "all $N at once: $(cat "$dir"/* | tr '\n' ' ')"
rm -rf "$dir"
