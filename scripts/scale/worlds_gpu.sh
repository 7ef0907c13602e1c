#!/bin/bash
# The GPU worlds figures of docs/BENCHMARKS.md ("Worlds on the H200"):
#   scripts/scale/worlds_gpu.sh HOOKE_BINARY RESULTS_FILE
# Needs a GPU adapter (for lavapipe: WGPU_BACKEND and VK_ICD_FILENAMES as .ci/run sets them). Run from anywhere.
set -u
B=$(realpath "$1"); R=$(realpath -m "$2")
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version --format=csv >> "$R" 2>/dev/null
echo "== grid64 alone" >> "$R"
$B bench grid64.toml --backend gpu --frames 60 --warmup 10 --stages >> "$R" 2>&1
for W in 16 64 256; do
  echo "== grid64 x $W worlds" >> "$R"
  $B bench grid64.toml --worlds $W --backend gpu --frames 60 --warmup 10 --stages >> "$R" 2>&1
done
echo "== grid64 x 256 worlds, 20 x 4" >> "$R"
$B bench grid64.toml --worlds 256 --backend gpu --iterations 4 --frames 30 --stages >> "$R" 2>&1
echo "== grid:1024 preset (one cloth of as many particles)" >> "$R"
$B bench grid:1024 --backend gpu --frames 60 --stages >> "$R" 2>&1
T=$(mktemp -d)
echo "== batch 256 x grid64, gpu, one after another" >> "$R"
/usr/bin/time -f "%e s wall %U s user" $B batch sweep256.toml --out $T/g1 --backend gpu --worlds 1 2>&1 | tail -2 >> "$R"
for W in 64 256; do
  echo "== batch 256 x grid64, gpu, --worlds $W" >> "$R"
  /usr/bin/time -f "%e s wall %U s user" $B batch sweep256.toml --out $T/g$W --backend gpu --worlds $W 2>&1 | tail -2 >> "$R"
done
for W in 64 256; do
  same=0; for d in $T/g1/samples/*/; do k=$(basename $d); cmp -s $d/cloth.pc2 $T/g$W/samples/$k/cloth.pc2 && same=$((same+1)); done
  echo "identical caches one after another / --worlds $W: $same of 256" >> "$R"
done
rm -rf "$T"
