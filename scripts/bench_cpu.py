#!/usr/bin/env python3
"""CPU benchmark of hooke against pypbd, measured side by side in one run.

For each grid size N it runs, one after the other on the same machine:
  * `hooke bench grid:N` (a 1 m cloth of N x N particles hanging from one edge; structural,
    shear and bending distance constraints) at 20 substeps x 1 iteration, sequential
    (--threads 1) and parallel (all cores), and at 5 substeps x 1 iteration sequential, the
    substep count of the pypbd run;
  * pypbd (scripts/peers/pypbd_cloth.py: the same 1 m cloth pinned along one edge, XPBD
    distance + isometric bending constraints, 5 substeps x 1 iteration, one thread).
  * rapier-cloth-core 0.3 (scripts/peers/rapier_cloth: its own 1 m grid pinned along one edge,
    inextensible edges + dihedral bending, 1/240 s substeps x 8 iterations, one thread) next to
    hooke at the same 4 substeps x 8 iterations.
and prints a Markdown table of ms/frame and ns per constraint-iteration (frame time divided
by constraints x substeps x iterations; hooke counts its distance constraints, hinges and
rope joints, the peers their own constraints), plus the default scene.

Usage: cargo build --release && python3 scripts/bench_cpu.py [--sizes 32 64 128 256] [--json out.jsonl]
pypbd is optional (pip install pypbd==2.2.2 numpy), and so is rapier-cloth-core
(cd scripts/peers/rapier_cloth && cargo build --release); without them their columns are empty.
"""
import argparse, json, subprocess, sys, os

ap = argparse.ArgumentParser()
ap.add_argument("--sizes", type=int, nargs="+", default=[32, 64, 128, 256])
ap.add_argument("--hooke", default="target/release/hooke")
ap.add_argument("--json", help="also write every raw JSON line to this file")
ap.add_argument("--rapier", default="scripts/peers/rapier_cloth/target/release/rapier-cloth-peer-bench")
a = ap.parse_args()

def hooke(scene, *extra):
    frames = ["--frames", "30", "--warmup", "10"]
    out = subprocess.run([a.hooke, "bench", scene, "--json", *frames, *extra], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)

def pypbd(n):
    frames = ["--frames", "20" if n >= 256 else "60", "--warmup", "10"]
    try:
        out = subprocess.run([sys.executable, "scripts/peers/pypbd_cloth.py", "--n", str(n), *frames], check=True, capture_output=True, text=True)
        return json.loads(out.stdout.strip().splitlines()[-1])
    except (subprocess.CalledProcessError, FileNotFoundError, json.JSONDecodeError) as e:
        print(f"pypbd unavailable for N={n}: {e}", file=sys.stderr)
        return None

def rapier(n):
    if not os.path.exists(a.rapier):
        return None
    frames = ["--frames", "10" if n >= 256 else "30", "--warmup", "10"]
    out = subprocess.run([a.rapier, "--n", str(n), *frames], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])

rows, raw = [], []
for n in args_sizes if (args_sizes := a.sizes) else []:
    seq = hooke(f"grid:{n}", "--threads", "1")
    par = hooke(f"grid:{n}")
    seq5 = hooke(f"grid:{n}", "--threads", "1", "--substeps", "5")
    peer = pypbd(n)
    seq48 = hooke(f"grid:{n}", "--threads", "1", "--substeps", "4", "--iterations", "8")
    rap = rapier(n)
    raw += [seq, par, seq5, seq48] + [r for r in (peer, rap) if r]
    rows.append((n, seq, par, seq5, peer, seq48, rap))
default_seq = hooke("default", "--threads", "1")
default_par = hooke("default")
raw += [default_seq, default_par]

print("| cloth | particles | constraints | hooke 20×1 seq ms/frame | ns/(c·it) | hooke 20×1 par ms/frame | ns/(c·it) | hooke 5×1 seq ns/(c·it) | pypbd 5×1 ns/(c·it) | pypbd / hooke (5×1, 1 thread) | end strain hooke 20×1 / pypbd | hooke 4×8 seq ns/(c·it) | rapier-cloth-core 4×8 ns/(c·it) | rapier / hooke (4×8, 1 thread) |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for n, seq, par, seq5, peer, seq48, rap in rows:
    p_ns = f"{peer['ns_per_constraint_iteration']:.1f}" if peer else "–"
    ratio = f"{peer['ns_per_constraint_iteration'] / seq5['ns_per_constraint_iteration']:.1f}×" if peer else "–"
    strain = f"{seq['max_stretch_strain_end']:.3f} / {peer['max_edge_strain']:.3f}" if peer else f"{seq['max_stretch_strain_end']:.3f}"
    print(f"| {n}² | {seq['particles']} | {seq['constraints']} | {seq['ms_per_frame_median']:.2f} | {seq['ns_per_constraint_iteration']:.2f} | "
          f"{par['ms_per_frame_median']:.2f} | {par['ns_per_constraint_iteration']:.2f} | {seq5['ns_per_constraint_iteration']:.2f} | {p_ns} | {ratio} | {strain} | "
          f"{seq48['ns_per_constraint_iteration']:.2f} | {rap['ns_per_constraint_iteration']:.1f} | {rap['ns_per_constraint_iteration'] / seq48['ns_per_constraint_iteration']:.1f}× |"
          if rap else f" {seq48['ns_per_constraint_iteration']:.2f} | – | – |")
print(f"| default scene | {default_seq['particles']} | {default_seq['constraints']} | {default_seq['ms_per_frame_median']:.2f} | {default_seq['ns_per_constraint_iteration']:.2f} | "
      f"{default_par['ms_per_frame_median']:.2f} | {default_par['ns_per_constraint_iteration']:.2f} | – | – | – | {default_seq['max_stretch_strain_end']:.3f} | – | – | – |")
print(f"\nthreads (parallel runs): {par['threads'] if rows else default_par['threads']}")
if a.json:
    with open(a.json, "w") as f:
        for r in raw:
            f.write(json.dumps(r) + "\n")
