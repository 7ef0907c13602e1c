#!/usr/bin/env python3
"""hooke's GPU backend on grid cloths and on Newton's cloth_hanging scene, with the CPU backend
of the same host beside it. Prints the Markdown tables of docs/BENCHMARKS.md.

Usage: cargo build --release && python3 scripts/bench_gpu.py [--hooke target/release/hooke]
       [--sizes 64 128 256 512 1024 2048] [--newton 64x32 256x128 512x256 1024x512]

* Grid cloths (`grid:N`, 20 substeps x 1 iteration, Gauss-Seidel over 12 colours): GPU time per
  frame from GPU timestamps (each frame's compute pass) and from the wall clock; particle-
  substeps/s and constraint solves/s from the timestamp figure; bytes moved at 160 B per
  constraint solve against the device's ~4.3 TB/s copy bandwidth; the CPU backend (all cores)
  beside it up to 1024^2.
* Marginal cost of one colour dispatch: grid:64 at 11 against 1 iteration per substep (2 400
  more dispatches per frame, each over ~2 000 constraints).
* `newton-hanging:WxH` (10 substeps x 10 iterations) with Gauss-Seidel and with Jacobi, against
  Newton 1.8's frame rates measured on the lent H200 (issue #4).
"""
import argparse, json, subprocess

NEWTON_FPS = {"64x32": 157.0, "256x128": 81.7, "512x256": 30.8, "1024x512": 6.1}
BYTES_PER_SOLVE = 160
COPY_BANDWIDTH = 4.3e12

ap = argparse.ArgumentParser()
ap.add_argument("--hooke", default="target/release/hooke")
ap.add_argument("--sizes", type=int, nargs="+", default=[64, 128, 256, 512, 1024, 2048])
ap.add_argument("--newton", nargs="+", default=list(NEWTON_FPS))
ap.add_argument("--cpu-max", type=int, default=1024, help="largest grid also run on the CPU backend")
a = ap.parse_args()


def bench(scene, *extra):
    out = subprocess.run([a.hooke, "bench", scene, "--json", *extra], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def gpu_ms(r):
    return r.get("gpu_ms_per_frame_mean") or r["ms_per_frame_median"]


device = None
print("| cloth | particles | constraints | GPU ms/frame (timestamps) | wall ms/frame | particle-substeps/s "
      "| constraint solves/s | bytes/s (of 4.3 TB/s) | CPU backend ms/frame |")
print("|---|---|---|---|---|---|---|---|---|")
for n in a.sizes:
    # At 2048² one Gauss–Seidel iteration per substep leaves the 4 M-particle cloth so far from
    # converged that its top row passes the 1000 % strain limit after 0.67 s: time 0.42 s.
    frames = ["--frames", "20", "--warmup", "5"] if n >= 2048 else ["--frames", "100", "--warmup", "10"]
    g = bench(f"grid:{n}", "--backend", "gpu", *frames)
    device = g["device"]
    ms = gpu_ms(g)
    solves = g["constraints"] * g["substeps"] * g["iterations"] / (ms * 1e-3)
    psub = g["particles"] * g["substeps"] / (ms * 1e-3)
    bw = solves * BYTES_PER_SOLVE
    cpu = f"{bench(f'grid:{n}', '--frames', '20', '--warmup', '3')['ms_per_frame_median']:.1f}" if n <= a.cpu_max else "–"
    print(f"| {n}² | {g['particles']} | {g['constraints']} | {ms:.2f} | {g['ms_per_frame_median']:.2f} | {psub / 1e9:.2f} G "
          f"| {solves / 1e9:.1f} G | {bw / 1e12:.2f} TB/s ({100 * bw / COPY_BANDWIDTH:.0f} %) | {cpu} |")

one = bench("grid:64", "--backend", "gpu", "--frames", "60", "--warmup", "10", "--iterations", "1")
eleven = bench("grid:64", "--backend", "gpu", "--frames", "60", "--warmup", "10", "--iterations", "11")
extra = 20 * 10 * one["colours"]
print(f"\nMarginal cost of a colour dispatch (grid:64, 11 vs 1 iterations, {extra} more dispatches per frame): "
      f"{1e3 * (gpu_ms(eleven) - gpu_ms(one)) / extra:.2f} µs ({gpu_ms(one):.3f} → {gpu_ms(eleven):.3f} ms/frame)")

print("\n| W×H | particles | constraints | Gauss–Seidel ms/frame | FPS | × Newton | Jacobi ms/frame | FPS | × Newton "
      "| Newton FPS | end strain GS / Jacobi |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for s in a.newton:
    frames = ["--frames", "60", "--warmup", "10"]
    gs = bench(f"newton-hanging:{s}", "--backend", "gpu", *frames)
    jac = bench(f"newton-hanging:{s}", "--backend", "gpu", "--gpu-solve", "jacobi", *frames)
    nf = NEWTON_FPS.get(s)
    row = [f"{s}", f"{gs['particles']}", f"{gs['constraints']}"]
    for r in (gs, jac):
        fps = 1e3 / gpu_ms(r)
        row += [f"{gpu_ms(r):.2f}", f"{fps:.0f}", f"{fps / nf:.1f}×" if nf else "–"]
    row += [f"{nf}" if nf else "–",
            f"{gs['max_stretch_strain_end']:.3f} / {jac['max_stretch_strain_end']:.3f}"]
    print("| " + " | ".join(row) + " |")
print(f"\ndevice: {device}; Jacobi relaxation ω = {jac['relaxation']:.2f}")
