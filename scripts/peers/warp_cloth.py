#!/usr/bin/env python3
"""Peer benchmark: NVIDIA Warp's CPU backend on Warp's own cloth benchmark.

What it measures
  Warp ships warp/examples/benchmarks/benchmark_cloth.py (the driver and the
  `Cloth` grid builder) and benchmark_cloth_warp.py (`WpIntegrator`: two kernels,
  eval_springs + integrate_particles, semi-implicit Euler). This script imports
  those two files from the installed warp-lang package and runs ONLY the
  "warp_cpu" integrator (device "cpu"). Nothing of Warp's code is copied:

  * benchmark_cloth.py runs its whole benchmark at import time, so its top-level
    imports, classes and functions are loaded (parsed from the installed file)
    without the trailing driver statements.
  * The scene parameters (Cloth(...) keyword arguments, dt, substeps, the number
    of timed frames Warp uses) are not restated here: they are captured by
    calling Warp's own run_benchmark() once at a tiny size with a recording
    stand-in for WpIntegrator. Only dx/dy (the grid size n) are then changed.
    (Warp 1.19: 0.1 m spacing in the x-z plane, 0.1 kg/particle, corners
    (x=0,y=0) and (x=n-1,y=0) pinned, stretch/shear/bend k=1000, kd=10,
    dt=1/60, 16 substeps, 60 frames.)

  Timing is the same as Warp's run_benchmark: each frame is one
  integrator.simulate(dt, substeps) call wrapped in wp.ScopedTimer(dict=...)
  (time.perf_counter_ns; no synchronize, none is needed on CPU), and the reported
  number is the mean of those per-frame times (Warp's CSV writes np.mean).
  simulate() ends with `return self.positions.numpy()`; on CPU that is a zero-copy
  numpy view, so no per-frame host copy is timed (on CUDA Warp copies to host).
  Differences from Warp's driver, on purpose:
    - Warp's own warm-up line sits after a `raise` (dead code), so Warp's first
      timed frame includes kernel compilation/loading (benchmark_cloth_warp.py
      calls wp.clear_kernel_cache() on import, so every process recompiles).
      Here the module is compiled+loaded explicitly first (compile_s), then
      --warmup untimed frames run, then --frames timed frames.
    - --frames may differ from Warp's 60 (default 60; --large-frames for big n).
  --warp-driver additionally runs Warp's unmodified run_benchmark("warp_cpu", n)
  (60 frames, no warm-up) for sizes <= 128 as a cross-check.

Threading
  Warp's CPU backend runs a kernel launch as a serial loop over the launch
  dimension on the calling thread (codegen's cpu_module_template_forward: `for
  task_index in 0..dim->size`); config.enable_cpu_blocks only adds cooperative
  fibers, not OS threads. So warp_cpu is single-threaded; the script checks this
  by reporting process CPU time / wall time of the timed loop (cpu_over_wall,
  ~1.0 single-threaded; < 1 means the machine was busy) and the OS thread count.
  On a loaded machine, cpu_ms_per_frame (process CPU time / frames; valid because
  the compute is single-threaded) and ms_min are steadier than the wall-clock mean.

Hooke comparison
  If hooke's release binary exists (default target/release/hooke) the script runs
  `hooke bench warp-cloth:N --json --frames 5 --warmup 1` and compares its
  `particles`/`constraints` with Warp's particle/spring counts. Warp's springs
  are classified by grid offset into families and printed either way.

How to run
  pip install warp-lang usd-core     # usd-core: benchmark_cloth.py imports pxr
  python3 scripts/peers/warp_cloth.py [--sizes 32 64 128 256 512] [--frames 60]
      [--large-frames 10 --large-from 512] [--warmup 1] [--warp-driver]
      [--hooke PATH | --no-hooke]
Prints one JSON line per size (peer "warp_cpu"), plus "warp_springs" /
"hooke_counts" lines for the count comparison. Progress goes to stderr.
"""
import argparse
import ast
import contextlib
import json
import os
import subprocess
import sys
import time
import types

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("--sizes", type=int, nargs="+", default=[32, 64, 128, 256, 512])
ap.add_argument("--frames", type=int, default=60, help="timed frames (Warp's driver uses 60)")
ap.add_argument("--large-frames", type=int, default=10, help="timed frames for n >= --large-from")
ap.add_argument("--large-from", type=int, default=512)
ap.add_argument("--warmup", type=int, default=1, help="untimed frames after compilation")
ap.add_argument("--warp-driver", action="store_true",
                help="also run Warp's unmodified run_benchmark('warp_cpu', n) for n <= 128")
here = os.path.dirname(os.path.abspath(__file__))
ap.add_argument("--hooke", default=os.path.join(here, "..", "..", "target", "release", "hooke"))
ap.add_argument("--no-hooke", action="store_true")
a = ap.parse_args()


def log(*x):
    print(*x, file=sys.stderr, flush=True)


# Warp prints its init banner and module-load lines on stdout; keep stdout for the JSON lines only.
JSON_OUT = os.fdopen(os.dup(1), "w")
sys.stdout.flush()
os.dup2(2, 1)


def emit(d):
    print(json.dumps(d), file=JSON_OUT, flush=True)


t_import = time.perf_counter()
import numpy as np  # noqa: E402
import warp as wp  # noqa: E402

wp.config.quiet = True
wp.init()
BENCH_DIR = os.path.join(os.path.dirname(wp.__file__), "examples", "benchmarks")
sys.path.insert(0, BENCH_DIR)  # benchmark_cloth.py does the same for its siblings


def load_benchmark_cloth():
    """benchmark_cloth.py without its module-level driver (imports, defs and classes only)."""
    path = os.path.join(BENCH_DIR, "benchmark_cloth.py")
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    keep = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef)
    tree.body = [s for s in tree.body if isinstance(s, keep)]
    mod = types.ModuleType("benchmark_cloth")
    mod.__file__ = path
    exec(compile(tree, path, "exec"), mod.__dict__)
    return mod


bc = load_benchmark_cloth()
import benchmark_cloth_warp as bcw  # noqa: E402  (calls wp.clear_kernel_cache())

log(f"warp {wp.__version__}: loaded {BENCH_DIR}/benchmark_cloth.py and benchmark_cloth_warp.py "
    f"in {time.perf_counter() - t_import:.1f} s")


def capture_warp_parameters():
    """Run Warp's run_benchmark at n=4 with recording stand-ins; return its Cloth kwargs, dt, substeps, frames."""
    rec = {"cloth_kwargs": None, "calls": []}
    real_cloth, real_integrator = bc.Cloth, bcw.WpIntegrator

    def cloth_recorder(*args, **kwargs):
        if args:
            raise RuntimeError("Warp's run_benchmark now builds Cloth positionally; update the capture")
        rec["cloth_kwargs"] = dict(kwargs)
        return real_cloth(**kwargs)

    class IntegratorRecorder:
        def __init__(self, cloth, device):
            rec["device"] = device
            self.cloth = cloth

        def simulate(self, dt, substeps):
            rec["calls"].append((dt, substeps))
            return self.cloth.positions

    bc.Cloth, bcw.WpIntegrator = cloth_recorder, IntegratorRecorder
    try:
        with contextlib.redirect_stdout(sys.stderr):  # its ScopedTimers print every frame
            bc.run_benchmark("warp_cpu", 4, {}, render=False)
    finally:
        bc.Cloth, bcw.WpIntegrator = real_cloth, real_integrator
    (dt, substeps), = set(rec["calls"])
    assert rec["device"] == "cpu"
    return rec["cloth_kwargs"], dt, substeps, len(rec["calls"])


CLOTH_KW, DT, SUBSTEPS, WARP_FRAMES = capture_warp_parameters()
log(f"Warp's parameters: Cloth({CLOTH_KW}), dt={DT}, substeps={SUBSTEPS}, timed frames={WARP_FRAMES}")


def build_cloth(n):
    kw = dict(CLOTH_KW, dx=n, dy=n)  # the only change: the grid size
    return bc.Cloth(**kw)


def spring_families(cloth, n):
    """Classify Warp's springs by grid offset (dx, dy) between their endpoints."""
    ij = cloth.spring_indices.reshape(-1, 2).astype(np.int64)
    xi, yi = ij[:, 0] % n, ij[:, 0] // n
    xj, yj = ij[:, 1] % n, ij[:, 1] // n
    ddx, ddy = xj - xi, yj - yi
    names = {
        (1, 0): "structural_x", (0, 1): "structural_z",
        (1, 1): "shear_diag", (1, -1): "shear_antidiag",
        (2, 0): "bending_x", (0, 2): "bending_z",
    }
    fam = {}
    for (ox, oy), name in names.items():
        m = ((ddx == ox) & (ddy == oy)) | ((ddx == -ox) & (ddy == -oy))
        fam[name] = int(m.sum())
    other = cloth.num_springs - sum(fam.values())
    fam["other"] = int(other)
    keys = np.minimum(ij[:, 0], ij[:, 1]) * cloth.num_particles + np.maximum(ij[:, 0], ij[:, 1])
    fam["duplicates"] = int(len(keys) - len(np.unique(keys)))
    return fam


def threads_now():
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return None


def run_size(n):
    frames = a.large_frames if n >= a.large_from else a.frames
    t0 = time.perf_counter()
    cloth = build_cloth(n)
    build_s = time.perf_counter() - t0
    log(f"n={n}: Warp's Cloth built in {build_s:.1f} s: {cloth.num_particles} particles, {cloth.num_springs} springs")

    timers = {}
    with wp.ScopedTimer("Initialization", dict=timers, print=False):
        integrator = bcw.WpIntegrator(cloth, "cpu")
    t0 = time.perf_counter()
    wp.load_module(bcw, device="cpu")  # compile (cache was cleared on import) + load; no-op after the first size
    compile_s = time.perf_counter() - t0

    for _ in range(a.warmup):
        with wp.ScopedTimer("warmup", dict=timers, print=False):
            integrator.simulate(DT, SUBSTEPS)
    warm = timers.get("warmup", [])

    label = f"Dim ({n}^2)"
    c0, w0 = time.process_time(), time.perf_counter()
    for _ in range(frames):
        with wp.ScopedTimer(label, dict=timers, print=False):  # as in Warp's run_benchmark
            positions = integrator.simulate(DT, SUBSTEPS)
    cpu_s, wall_s = time.process_time() - c0, time.perf_counter() - w0
    cpu_over_wall = cpu_s / wall_s
    t = np.array(timers[label])
    ok = bool(np.isfinite(positions).all())
    return cloth, {
        "peer": "warp_cpu",
        "warp_version": wp.__version__,
        "n": n,
        "particles": int(cloth.num_particles),
        "springs": int(cloth.num_springs),
        "substeps": SUBSTEPS,
        "frames": frames,
        "warmup": a.warmup,
        "ms_per_frame": round(float(t.mean()), 3),
        "ms_min": round(float(t.min()), 3),
        "ms_median": round(float(np.median(t)), 3),
        "ms_max": round(float(t.max()), 3),
        "cpu_ms_per_frame": round(1000.0 * cpu_s / frames, 3),
        "first_warmup_frame_ms": round(float(warm[0]), 3) if len(warm) else None,
        "compile_s": round(compile_s, 3),
        "init_ms": round(float(timers["Initialization"][0]), 3),
        "cloth_build_s": round(build_s, 2),
        "threads": 1,
        "os_threads": threads_now(),
        "cpu_over_wall": round(cpu_over_wall, 3),
        "finite": ok,
        "timing": "mean of per-frame wp.ScopedTimer around WpIntegrator.simulate (as Warp); "
                  "CPU .numpy() is a zero-copy view",
        "loadavg_1m": os.getloadavg()[0],
    }


def hooke_counts(n):
    exe = os.path.abspath(a.hooke)
    if a.no_hooke or not os.path.exists(exe):
        return {"n": n, "hooke": None, "note": f"no binary at {exe}" if not a.no_hooke else "--no-hooke"}
    cmd = [exe, "bench", f"warp-cloth:{n}", "--json", "--frames", "5", "--warmup", "1"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return {"n": n, "hooke": None, "cmd": " ".join(cmd), "rc": p.returncode,
                "error": (p.stderr or p.stdout).strip()[-300:]}
    try:
        d = json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"n": n, "hooke": None, "cmd": " ".join(cmd), "error": "unparsable output: " + p.stdout[-300:]}
    return {"n": n, "cmd": " ".join(cmd), "hooke_particles": d.get("particles"),
            "hooke_constraints": d.get("constraints"), "hooke_substeps": d.get("substeps"),
            # 5 frames only: a sanity number for the count check, not a benchmark result
            "hooke_ms_per_frame_median_5f": d.get("ms_per_frame_median", d.get("ms_per_frame")),
            "hooke_threads": d.get("threads")}


for n in a.sizes:
    cloth, res = run_size(n)
    emit(res)
    fam = spring_families(cloth, n)
    pinned = [int(i) for i in np.nonzero(cloth.inv_masses == 0.0)[0]]
    emit({"warp_springs": n, "particles": int(cloth.num_particles), "springs": int(cloth.num_springs),
          "families": fam, "pinned": pinned,
          "k": sorted(set(float(x) for x in cloth.spring_stiffness)),
          "kd": sorted(set(float(x) for x in cloth.spring_damping))})
    h = hooke_counts(n)
    if h.get("hooke_particles") is not None:
        h["particles_equal"] = h["hooke_particles"] == cloth.num_particles
        h["constraints_equal"] = h["hooke_constraints"] == cloth.num_springs
    emit(dict({"hooke_counts": n}, **h))
    del cloth

if a.warp_driver:
    for n in [s for s in a.sizes if s <= 128]:
        timers = {}
        with contextlib.redirect_stdout(sys.stderr):  # its ScopedTimers print every frame
            bc.run_benchmark("warp_cpu", n, timers, render=False)  # Warp's own driver, unmodified
        t = np.array(timers[f"Dim ({n}^2)"])
        emit({"peer": "warp_cpu", "method": "warp_driver (run_benchmark, no warm-up)",
              "warp_version": wp.__version__, "n": n, "frames": len(t),
              "ms_per_frame": round(float(t.mean()), 3), "ms_first": round(float(t[0]), 3),
              "ms_mean_excl_first": round(float(t[1:].mean()), 3) if len(t) > 1 else None})
