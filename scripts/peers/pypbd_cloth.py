#!/usr/bin/env python3
"""Peer benchmark: cloth in pypbd (Python bindings of Jan Bender's PositionBasedDynamics).

What it measures
  A 1 m x 1 m cloth of N x N particles (spacing 1/(N-1) m), built with
  SimulationModel.addRegularTriangleModel, lying horizontally (x-z plane, y up,
  gravity -9.81 y) as in PBD's ClothDemo. Constraints are the ClothDemo "XPBD"
  choice: addClothConstraints(method 4 = XPBD distance on every mesh edge) and
  addBendingConstraints(method 3 = XPBD isometric bending on every interior edge),
  stiffness 1e5 / 50 (the demo's XPBD defaults). Pinned: the whole z=0 edge
  (--pin edge, default) or its two corners (--pin corners). No self-collision
  (PBD has none for cloth; the cloth is not registered with the collision detector).
  After W warm-up frames, F frames of 1/60 s are timed one by one with
  time.perf_counter around TimeStepController.step(); the median is reported.
  One step() = S substeps of (1/60)/S s; each substep = integrate, I Gauss-Seidel
  sweeps over the graph-coloured constraint groups (XPBD lambdas reset per substep),
  velocity update, then V velocity-projection sweeps (no-ops for these
  constraints; default V=0, pypbd's default is 5).

How to run
  pip install pypbd==2.2.2 numpy
  python3 scripts/peers/pypbd_cloth.py --n 64 [--frames 60 --warmup 10 --substeps 5 --iterations 1]
Prints one JSON line. OMP_NUM_THREADS is forced to --threads (default 1) before
pypbd (which bundles libgomp) is imported.
"""
import argparse, json, math, os, re, sys, time

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("--n", type=int, required=True)
ap.add_argument("--frames", type=int, default=60)
ap.add_argument("--warmup", type=int, default=10)
ap.add_argument("--substeps", type=int, default=5)
ap.add_argument("--iterations", type=int, default=1)
ap.add_argument("--velocity-iterations", type=int, default=0)
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--pin", choices=["edge", "corners"], default="edge")
ap.add_argument("--mass", type=float, default=1.0, help="total cloth mass, kg")
ap.add_argument("--stretch-stiffness", type=float, default=1e5)
ap.add_argument("--bend-stiffness", type=float, default=50.0)
a = ap.parse_args()
os.environ["OMP_NUM_THREADS"] = str(a.threads)  # must precede the import

from importlib.metadata import version  # noqa: E402
import numpy as np  # noqa: E402
import pypbd as pbd  # noqa: E402

N = a.n
sim = pbd.Simulation.getCurrent()
sim.initDefault()
model, ts, tm = sim.getModel(), sim.getTimeStep(), pbd.TimeManager.getCurrent()
T = pbd.TimeStepController
ts.setValueUInt(T.NUM_SUB_STEPS, a.substeps)
ts.setValueUInt(T.MAX_ITERATIONS, a.iterations)
ts.setValueUInt(T.MAX_ITERATIONS_V, a.velocity_iterations)
tm.setTimeStepSize(1.0 / 60.0)  # one step() call == one frame

rot = np.array([[1.0, 0, 0], [0, 0, -1.0], [0, 1.0, 0]])  # grid plane x-y -> x-z
tri = model.addRegularTriangleModel(N, N, [0.0, 0.0, 0.0], rot, [1.0, 1.0], testMesh=False)
pd = model.getParticles()
for i in range(pd.size()):
    pd.setMass(i, a.mass / (N * N))
for i in (range(N) if a.pin == "edge" else (0, N - 1)):  # indices 0..N-1 = the z=0 row
    pd.setMass(i, 0.0)  # mass 0 => static
model.addClothConstraints(tri, 4, a.stretch_stiffness, a.stretch_stiffness, a.stretch_stiffness,
                          a.stretch_stiffness, 0.3, 0.3, False, False)
model.addBendingConstraints(tri, 3, a.bend_stiffness)

cons = model.getConstraints()
dist = [c for c in cons if c.getTypeId() == pbd.DistanceConstraint_XPBD.TYPE_ID]
n_bend = sum(c.getTypeId() == pbd.IsometricBendingConstraint_XPBD.TYPE_ID for c in cons)
edges = np.array([c.bodies for c in dist], dtype=np.int64)
rest = np.array([c.restLength for c in dist])
assert len(dist) + n_bend == len(cons)
assert len(dist) == tri.getParticleMesh().numEdges()
X = np.asarray(pd.getVertices())  # zero-copy view of the particle positions
assert X.shape == (N * N, 3)

nan_seen, times = False, []
for f in range(a.warmup + a.frames):
    t0 = time.perf_counter()
    ts.step(model)
    dt = time.perf_counter() - t0
    if f >= a.warmup:
        times.append(dt)
    nan_seen |= not np.isfinite(X).all()

with open("/proc/self/status") as fh:
    os_threads = int(re.search(r"Threads:\s+(\d+)", fh.read()).group(1))
strain = np.abs(np.linalg.norm(X[edges[:, 0]] - X[edges[:, 1]], axis=1) - rest) / rest
ms = float(np.median(times)) * 1e3
nc = len(cons)
print(json.dumps({
    "peer": "pypbd", "version": version("pypbd"), "n": N, "particles": pd.size(),
    "constraints": nc, "distance_constraints": len(dist), "bending_constraints": n_bend,
    "substeps": a.substeps, "iterations": ts.getValueUInt(T.MAX_ITERATIONS),
    "velocity_iterations": ts.getValueUInt(T.MAX_ITERATIONS_V), "threads": a.threads,
    "os_threads": os_threads, "pin": a.pin, "frames": a.frames, "warmup": a.warmup,
    "ms_per_frame_median": round(ms, 4),
    "ms_per_frame_min": round(min(times) * 1e3, 4),
    "ns_per_constraint_iteration": round(ms * 1e6 / (nc * a.substeps * a.iterations), 3),
    "sim_time_s": round(tm.getTime(), 4), "max_edge_strain": float(np.nanmax(strain)),
    "mean_edge_strain": float(np.nanmean(strain)),
    "nan": bool(nan_seen or not np.isfinite(X).all()), "min_y": float(np.min(X[:, 1])),
}))
