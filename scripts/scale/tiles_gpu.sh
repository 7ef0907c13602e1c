#!/bin/bash
# The tile-sweep figures of docs/BENCHMARKS.md ("Tile sweeps"):
#   scripts/scale/tiles_gpu.sh HOOKE_BINARY RESULTS_FILE
# Needs a GPU adapter (for lavapipe: WGPU_BACKEND and VK_ICD_FILENAMES as .ci/run sets them). Each scene colour by colour, then with --gpu-tiles.
set -u
B=$(realpath "$1"); R=$(realpath -m "$2")
cd "$(dirname "$0")"
for T in "" "--gpu-tiles"; do
  echo "== grid64 alone $T" >> "$R"
  $B bench grid64.toml --backend gpu --frames 60 --warmup 10 --stages $T >> "$R" 2>&1
  for W in 64 256; do
    echo "== grid64 x $W $T" >> "$R"
    $B bench grid64.toml --worlds $W --backend gpu --frames 60 --warmup 10 --stages $T >> "$R" 2>&1
  done
  echo "== grid64 x 256, 20x4 $T" >> "$R"
  $B bench grid64.toml --worlds 256 --backend gpu --iterations 4 --frames 30 --warmup 5 $T >> "$R" 2>&1
  echo "== newton-hanging:64x32 $T" >> "$R"
  $B bench newton-hanging:64x32 --backend gpu --frames 60 --warmup 10 $T >> "$R" 2>&1
  echo "== newton-hanging:512x256 $T" >> "$R"
  $B bench newton-hanging:512x256 --backend gpu --frames 30 --warmup 5 $T >> "$R" 2>&1
  echo "== grid:512 $T" >> "$R"
  timeout 120 $B bench grid:512 --backend gpu --frames 10 --warmup 2 $T >> "$R" 2>&1
done
