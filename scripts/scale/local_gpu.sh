#!/bin/bash
# The figures of docs/BENCHMARKS.md's "Local sweeps in workgroup memory" (issue #13):
#   scripts/scale/local_gpu.sh HOOKE_BINARY RESULTS_FILE
# Needs a GPU adapter (for lavapipe: WGPU_BACKEND and VK_ICD_FILENAMES as .ci/run sets them).
# Each scene with the default (--gpu-local auto), then colour by colour (--gpu-local never),
# then swept locally wherever it applies (--gpu-local always).
set -u
B=$(realpath "$1"); R=$(realpath -m "$2")
cd "$(dirname "$0")"
run() { echo "== $*" >> "$R"; $B bench "$@" --backend gpu --warmup 10 >> "$R" 2>&1; }
for L in auto never always; do
  run grid64.toml --worlds 256 --frames 120 --gpu-local $L
  run grid64.toml --worlds 256 --frames 60 --stages --gpu-local $L
  run grid64.toml --worlds 256 --iterations 4 --frames 60 --gpu-local $L
  for W in 16 32 64; do
    run grid64.toml --worlds $W --frames 120 --gpu-local $L
  done
  run grid64.toml --frames 120 --gpu-local $L
  run grid:32 --frames 120 --gpu-local $L
  run grid:48 --frames 120 --gpu-local $L
  run newton-hanging:64x32 --frames 120 --gpu-local $L
  run newton-hanging:32x16 --frames 120 --gpu-local $L
done
