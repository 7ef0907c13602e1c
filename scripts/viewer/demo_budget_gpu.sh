#!/bin/bash
# The viewer's cloth demo at N×N (the default scene resized, as `hooke bench demo:N`) at several
# substep × iteration budgets on the GPU: per budget, the solver's ms/frame (`hooke bench`) and
# the residual strain at every frame (`hooke run`'s diagnostics.csv, 150 frames).
#   scripts/viewer/demo_budget_gpu.sh HOOKE_BINARY OUT_DIR N "S:I S:I ..."
set -u
B=$(realpath "$1"); O=$(realpath -m "$2"); N=$3; BUDGETS=$4
mkdir -p "$O"
HERE=$(cd "$(dirname "$0")" && pwd)
SRC="$HERE/../../scenes/cloth_on_sphere.toml"
SPACING=$(python3 -c "print(1.4625 / ($N - 1))")
for SI in $BUDGETS; do
  S=${SI%:*}; I=${SI#*:}
  F="$O/demo${N}_${S}x${I}.toml"
  sed -e "s/^rows = 40/rows = $N/" -e "s/^columns = 40/columns = $N/" -e "s/^spacing = 0.0375/spacing = $SPACING/" \
      -e "s/^substeps = 20/substeps = $S/" -e "s/^iterations = \"auto\"/iterations = $I/" -e "s/^frames = 240/frames = 150/" \
      -e "s/^name = \"cloth_on_sphere\"/name = \"demo${N}_${S}x${I}\"/" "$SRC" > "$F"
  echo "== $S substeps x $I iterations" >> "$O/bench.txt"
  $B bench "$F" --backend gpu --frames 120 --warmup 30 >> "$O/bench.txt" 2>&1
  $B run "$F" --backend gpu --format pc2 --out "/tmp/demo_run_$SI" > "$O/run_${S}x${I}.txt" 2>&1
  # A budget that blows up keeps its frames in failed/.
  cp "/tmp/demo_run_$SI/diagnostics.csv" "$O/diagnostics_${S}x${I}.csv" 2>/dev/null \
    || cp "/tmp/demo_run_$SI/failed/diagnostics.csv" "$O/diagnostics_${S}x${I}_failed.csv"
  rm -rf "/tmp/demo_run_$SI"
done
