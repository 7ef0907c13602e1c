#!/bin/bash
# The thread-scaling rows of docs/BENCHMARKS.md ("after the four-lane hinge sweep"):
#   scripts/scale/cpu_threads.sh HOOKE_BINARY RESULTS_FILE
set -u
B=$(realpath "$1"); R=$(realpath -m "$2")
(nproc; lscpu | grep -E "Model name|L3") >> "$R"
for t in 1 2 4 8 16; do echo "== grid:512 threads $t" >> "$R"; $B bench grid:512 --threads $t --frames 10 --warmup 2 >> "$R" 2>&1; done
echo "== grid:256 threads 1" >> "$R"; $B bench grid:256 --threads 1 --frames 20 --warmup 3 >> "$R" 2>&1
echo "== sheet:256 threads 16" >> "$R"; $B bench sheet:256 --threads 16 --frames 30 --warmup 60 >> "$R" 2>&1
