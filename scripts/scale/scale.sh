#!/bin/bash
# The CPU scaling and batch figures of docs/BENCHMARKS.md ("On the lent H200's host"):
#   scripts/scale/scale.sh HOOKE_BINARY RESULTS_FILE
# Run from anywhere; the scenes are next to this script.
set -u
B=$(realpath "$1"); R=$(realpath -m "$2")
cd "$(dirname "$0")"
(nproc; lscpu | grep -E "Model name|^CPU\(s\)|Thread|Core|Socket|NUMA node\(s\)|L3") >> "$R"
for t in 1 2 4 8 16; do echo "== grid:512 threads $t" >> "$R"; $B bench grid:512 --threads $t --frames 20 --warmup 3 >> "$R" 2>&1; done
echo "== grid:256 threads 1" >> "$R"; $B bench grid:256 --threads 1 --frames 30 --warmup 5 >> "$R" 2>&1
T=$(mktemp -d)
for W in 16 64 256; do
  echo "== batch 256 x grid64, cpu, --worlds $W --threads 16" >> "$R"
  /usr/bin/time -f "%e s wall %U s user" $B batch sweep256.toml --out $T/w$W --worlds $W --threads 16 2>&1 | tail -2 >> "$R"
done
echo "== batch 256 x grid64, cpu, --jobs 16" >> "$R"
/usr/bin/time -f "%e s wall %U s user" $B batch sweep256.toml --out $T/j16 --jobs 16 --threads 16 2>&1 | tail -2 >> "$R"
same=0; for d in $T/j16/samples/*/; do k=$(basename $d); cmp -s $d/cloth.pc2 $T/w16/samples/$k/cloth.pc2 && same=$((same+1)); done
echo "identical caches --jobs 16 / --worlds 16: $same of 256" >> "$R"
rm -rf "$T"
