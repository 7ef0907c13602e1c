#!/usr/bin/env python3
"""hooke against NVIDIA Warp's CPU backend on Warp's own cloth benchmark, side by side.

For each size N: `hooke bench warp-cloth:N` (symplectic Euler, 16 substeps per 1/60 s frame,
Warp's exact scene) on one thread and on all cores, then Warp's `warp_cpu` integrator on the
same scene via scripts/peers/warp_cloth.py (Warp's CPU kernels run on one thread). Prints a
Markdown table of ms per frame and the ratios.

Each configuration runs --rounds times (default 3), alternating hooke and Warp. The first table
gives the median over the rounds of the per-run median frame time, the second the fastest run
of each (the shared machine is noisy: a run can be up to 2x slower than the next).

Usage: cargo build --release && pip install warp-lang usd-core &&
       python3 scripts/bench_warp_cpu.py [--sizes 32 64 128 256 512] [--rounds 3]
"""
import argparse, json, subprocess, sys

ap = argparse.ArgumentParser()
ap.add_argument("--sizes", type=int, nargs="+", default=[32, 64, 128, 256, 512])
ap.add_argument("--hooke", default="target/release/hooke")
ap.add_argument("--rounds", type=int, default=3, help="alternating rounds; each figure is the median over rounds")
a = ap.parse_args()

def hooke(n, *extra):
    frames = ["--frames", "10" if n >= 512 else "30", "--warmup", "5"]
    out = subprocess.run([a.hooke, "bench", f"warp-cloth:{n}", "--json", *frames, *extra], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)

def warp_cpu(n):
    out = subprocess.run([sys.executable, "scripts/peers/warp_cloth.py", "--sizes", str(n), "--no-hooke"], check=True, capture_output=True, text=True)
    return next(json.loads(l) for l in out.stdout.splitlines() if '"peer"' in l)

def median_of(runs, key):
    """The run whose `key` is the median over rounds (this shared machine is noisy)."""
    return sorted(runs, key=lambda r: r[key])[len(runs) // 2]

rows = []
best = []  # (n, fastest run of hooke 1 thread, of hooke all threads, of warp_cpu)
for n in a.sizes:
    seqs, pars, warps = [], [], []
    for _ in range(a.rounds):
        seqs.append(hooke(n, "--threads", "1"))
        pars.append(hooke(n))
        warps.append(warp_cpu(n))
    seq, par = median_of(seqs, "ms_per_frame_median"), median_of(pars, "ms_per_frame_median")
    warp = median_of(warps, "ms_median")
    assert warp["particles"] == seq["particles"] and warp["springs"] == seq["constraints"], (warp, seq)
    rows.append((n, seq, par, warp))
    best.append((n, min(r["ms_per_frame_median"] for r in seqs), min(r["ms_per_frame_median"] for r in pars),
                 min(r["ms_median"] for r in warps)))

print(f"| n | particles | springs | warp_cpu ms/frame (1 thread) | hooke 1 thread | speed-up | hooke {rows[0][2]['threads']} threads | speed-up |")
print("|---|---|---|---|---|---|---|---|")
for n, seq, par, warp in rows:
    w = warp["ms_median"]
    print(f"| {n}² | {seq['particles']} | {seq['constraints']} | {w:.2f} | {seq['ms_per_frame_median']:.2f} | {w / seq['ms_per_frame_median']:.2f}× | "
          f"{par['ms_per_frame_median']:.2f} | {w / par['ms_per_frame_median']:.2f}× |")
print(f"\nFastest of the {a.rounds} rounds (per-run median frame time):\n")
print(f"| n | warp_cpu | hooke 1 thread | speed-up | hooke {rows[0][2]['threads']} threads | speed-up |")
print("|---|---|---|---|---|---|")
for n, s1, p1, w in best:
    print(f"| {n}² | {w:.2f} | {s1:.2f} | {w / s1:.2f}× | {p1:.2f} | {w / p1:.2f}× |")
print(f"\nwarp-lang {rows[0][3]['warp_version']}")
