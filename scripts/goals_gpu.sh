#!/bin/bash
# Every performance goal of the open issues that is set on the H200, in one device call (about
# 6–8 minutes on an H100 or H200): issue #12's tear event against a frame at 512² (tears taken at
# once, then with --tear-overlap), issue #11's 512² cloth demo with drawing (Gauss–Seidel and
# Chebyshev–Jacobi), issue #13's Newton
# `cloth_hanging` with Gauss–Seidel, 256 worlds of a 64² cloth and the host's 1 → 16-thread
# scaling of `grid:512`.
#   scripts/goals_gpu.sh HOOKE_BINARY RESULTS_FILE
# Needs a GPU adapter. Each bench prints its accuracy (strain, residual, penetration) beside its
# time; compare times only within one call (the lent hosts differ).
set -u
B=$(realpath "$1"); R=$(realpath -m "$2")
cd "$(dirname "$0")"
(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null; nproc; lscpu | grep -E "Model name|L3") >> "$R"
run() { echo "== $*" >> "$R"; timeout 240 "$B" bench "$@" >> "$R" 2>&1; }
for round in 1 2; do
  run tear:512 --backend gpu --frames 40 --warmup 0 --tearing
  run tear:512 --backend gpu --frames 40 --warmup 0 --tearing --tear-overlap
done
for it in 4 8; do run demo:512 --backend gpu --iterations $it --frames 120 --warmup 30 --draw 1280x800; done
# The same cloth under the Chebyshev–Jacobi solve (one dispatch per iteration; on lavapipe at 128²
# it held the demo closer than Gauss–Seidel at equal iterations, docs/BENCHMARKS.md).
for it in 8 16; do run demo:512 --backend gpu --gpu-solve jacobi --iterations $it --frames 120 --warmup 30 --draw 1280x800; done
run newton-hanging:64x32 --backend gpu --frames 200 --warmup 20
run newton-hanging:512x256 --backend gpu --frames 60 --warmup 10
run scale/grid64.toml --worlds 256 --backend gpu --frames 60 --warmup 10
for t in 1 16; do run grid:512 --threads $t --frames 6 --warmup 2; done
