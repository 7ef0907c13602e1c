"""The Python bindings: the same positions as the command line, bad arrays named, control
from Python that does what physics says, bakes and batches.

Needs the `hooke` module (`pip install ./crates/hooke-py`) and the command line
(`cargo build --release`, or HOOKE_BIN).
"""

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

import hooke

ROOT = Path(__file__).resolve().parents[3]
HOOKE = Path(os.environ.get("HOOKE_BIN", ROOT / "target" / "release" / "hooke"))


def cli(*args, cwd):
    assert HOOKE.is_file(), f"{HOOKE} is missing: run `cargo build --release` first (or set HOOKE_BIN)"
    r = subprocess.run([str(HOOKE), *map(str, args)], cwd=cwd, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def read_pc2(path):
    """The frames of a PC2 cache: (frames, points, 3) float32."""
    data = Path(path).read_bytes()
    assert data[:12] == b"POINTCACHE2\0"
    points, _, _, samples = np.frombuffer(data[16:32], dtype="<i4,<f4,<f4,<i4")[0]
    return np.frombuffer(data[32:], dtype="<f4").reshape(samples, points, 3)


def sheet(rows=12, columns=10, spacing=0.05, height=1.5):
    """A horizontal grid at `height` (m): vertices (rows·columns, 3), triangles, uvs."""
    j, i = np.meshgrid(np.arange(columns), np.arange(rows))
    x = (j.ravel() - (columns - 1) / 2) * spacing
    z = (i.ravel() - (rows - 1) / 2) * spacing
    vertices = np.stack([x, np.full_like(x, height), z], axis=1).astype(np.float32)
    tris = []
    for r in range(rows - 1):
        for c in range(columns - 1):
            a, b, d, e = r * columns + c, r * columns + c + 1, (r + 1) * columns + c, (r + 1) * columns + c + 1
            tris += [(a, d, b), (b, d, e)]
    uvs = np.stack([j.ravel() / (columns - 1), i.ravel() / (rows - 1)], axis=1)
    return vertices, np.array(tris, dtype=np.int64), uvs


MATERIAL = {"density": 0.2, "stretch_stiffness": 1e4, "shear_stiffness": 500.0, "bending_modulus": 1e-4,
            "thickness": 0.004}
SCENE = {
    "solver": {"substeps": 12, "iterations": 2, "frames": 45},
    "collider": [{"name": "ball", "shape": "sphere", "center": [0.1, 1.2, 0.0], "radius": 0.15}],
}


def toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    return repr(float(v)) if isinstance(v, float) else str(v)


def test_a_cloth_from_arrays_gives_the_command_lines_positions_bit_for_bit(tmp_path):
    vertices, triangles, _ = sheet()
    pins = [0, 9]
    sim = hooke.Simulation.from_arrays(vertices, triangles, MATERIAL, pins=pins, scene=SCENE)
    sim.step(45)
    # The same cloth as an OBJ file in a scene file, run by `hooke run`.
    obj = "".join(f"v {x!r} {y!r} {z!r}\n" for x, y, z in vertices.astype(float).tolist())
    obj += "".join(f"f {a + 1} {b + 1} {c + 1}\n" for a, b, c in triangles.tolist())
    (tmp_path / "sheet.obj").write_text(obj)
    mat = "".join(f"{k} = {toml_value(v)}\n" for k, v in MATERIAL.items())
    (tmp_path / "scene.toml").write_text(
        'name = "cloth"\n[solver]\nsubsteps = 12\niterations = 2\nframes = 45\n'
        f"[materials.cloth]\n{mat}"
        '[[cloth]]\nname = "cloth"\nmaterial = "cloth"\nmesh = "sheet.obj"\nweld = false\npin_indices = [0, 9]\n'
        '[[collider]]\nname = "ball"\nshape = "sphere"\ncenter = [0.1, 1.2, 0.0]\nradius = 0.15\n'
    )
    cli("run", "scene.toml", "--format", "pc2", "--out", "out", cwd=tmp_path)
    frames = read_pc2(tmp_path / "out" / "cloth.pc2")
    assert frames.shape == (46, len(vertices), 3)
    assert np.array_equal(sim.positions, frames[-1]), np.abs(sim.positions - frames[-1]).max()
    # It moved: draped on the ball, not where it started.
    assert np.abs(sim.positions - vertices).max() > 0.1
    assert sim.time == pytest.approx(45 / 60)


def test_a_scene_file_with_keys_set_gives_the_command_lines_positions(tmp_path):
    scene = ROOT / "scenes" / "cloth_on_sphere.toml"
    keys = {"solver.frames": 30, "cloth.0.rows": 16, "cloth.0.columns": 16}
    sim = hooke.Simulation.from_scene(scene, set=keys)
    sim.step(30)
    manifest = tmp_path / "one.toml"
    manifest.write_text(f'format = "pc2"\n[[sample]]\nscene = {json.dumps(str(scene))}\n'
                        'set = { "solver.frames" = 30, "cloth.0.rows" = 16, "cloth.0.columns" = 16 }\n')
    cli("batch", manifest, "--out", "data", cwd=tmp_path)
    frames = read_pc2(tmp_path / "data" / "samples" / "000000" / "cloth.pc2")
    assert frames.shape[1] == 16 * 16 == sim.particle_count
    assert np.array_equal(sim.positions, frames[-1])


def test_bad_arrays_and_keys_raise_value_error_naming_them():
    vertices, triangles, _ = sheet(4, 4)
    cases = [
        (dict(vertices=vertices[:, :2]), "vertices"),
        (dict(vertices=np.where(np.arange(16)[:, None] == 5, np.nan, vertices)), "vertices: row 5"),
        (dict(triangles=triangles + 100), "triangles"),
        (dict(triangles=triangles[:, :2]), "triangles"),
        (dict(pins=[3, 99]), "pins"),
        (dict(pins=[True]), "pins: True is a boolean"),
        (dict(pins=np.array([False, True])), "pins: False is a boolean"),
        (dict(pins=np.bool_(True)), "pins: True is a boolean"),
        (dict(pins=[1.0]), "pins: expected particle indices"),
        # As `pin` refuses it (it was accepted here).
        (dict(pins=[2, 1, 2]), "pins: particle 2 is given twice"),
        (dict(material={**MATERIAL, "density": -1.0}), "density"),
        (dict(material={**MATERIAL, "stifness": 3.0}), "stifness"),
        (dict(scene={"solver": {"substeps": 0}}), "substeps"),
        (dict(uvs=np.zeros((3, 2))), "uvs"),
        # A second breaker's (2026-12-06): complex values lost their imaginary part with only
        # NumPy's warning, booleans became indices 0 and 1, and 1e300 was "not finite".
        (dict(vertices=vertices + 1e-3j), "vertices: complex numbers"),
        (dict(triangles=triangles.astype(bool)), "triangles: booleans"),
        (dict(vertices=np.where(np.arange(16)[:, None] == 2, 1e300, vertices)), "vertices: row 2 is too large for f32"),
    ]
    for change, needle in cases:
        args = dict(vertices=vertices, triangles=triangles, material=MATERIAL)
        args.update(change)
        with pytest.raises(ValueError) as e:
            hooke.Simulation.from_arrays(**args)
        assert needle in str(e.value), (needle, str(e.value))
    with pytest.raises(ValueError, match="solver.substep: unknown field `substep`"):
        hooke.Simulation.from_scene(ROOT / "scenes" / "flag.toml", set={"solver.substep": 3})
    with pytest.raises(OSError):
        hooke.Simulation.from_scene("no/such/scene.toml")
    with pytest.raises(ValueError, match=r"materials.cloth.density: invalid type"):
        hooke.Simulation.from_arrays(vertices, triangles, {**MATERIAL, "density": [0.2]})
    # A value that holds itself, or nests too deep, is refused (not a crashed interpreter).
    loop = []
    loop.append(loop)
    with pytest.raises(ValueError, match="nested"):
        hooke.Simulation.from_arrays(vertices, triangles, {**MATERIAL, "density": loop})
    deep = 0.2
    for _ in range(10_000):
        deep = [deep]
    with pytest.raises(ValueError, match="nested"):
        hooke.Simulation.from_scene(ROOT / "scenes" / "flag.toml", set={"solver.frames": deep})
    # /dev/zero as a scene was read until memory ran out (the process was killed).
    with pytest.raises(OSError, match="not a scene file"):
        hooke.Simulation.from_scene("/dev/zero")
    sim = hooke.Simulation.from_arrays(vertices, triangles, MATERIAL)
    with pytest.raises(ValueError, match="velocity: complex numbers"):
        sim.set_wind(np.array([1 + 1j, 0, 0]))
    with pytest.raises(ValueError, match="out"):
        sim.read_positions(np.zeros((15, 3), dtype=np.float32))
    for bad in (np.zeros((16, 3), np.float32, order="F"), np.zeros((16, 3)), np.zeros((16, 6), np.float32)[:, ::2]):
        with pytest.raises(ValueError, match="out"):
            sim.read_positions(bad)
    with pytest.raises(ValueError, match="frames"):
        sim.step(-1)
    with pytest.raises(ValueError, match="collider"):
        sim.place_collider("nothing", [0, 0, 0])
    # Values finite in float64 but not in f32 are refused at the call, by argument (they were
    # taken, and the next step failed), and so is a particle pinned twice.
    with pytest.raises(ValueError, match="targets: row 0 is too large for f32"):
        sim.pin([0], np.full((1, 3), 1e300))
    with pytest.raises(ValueError, match="particles: particle 0 is given twice"):
        sim.pin([0, 0], [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]])
    with pytest.raises(ValueError, match="velocity: expected 3 numbers finite in f32"):
        sim.set_wind([1e300, 0.0, 0.0])
    with pytest.raises(ValueError, match="velocity: .* too fast to square within f32"):
        sim.set_wind([1e30, 0.0, 0.0])
    sim.step(1)
    # Booleans are ints in Python: refused where an integer is meant.
    with pytest.raises(ValueError, match="frames: True is a boolean"):
        sim.step(True)
    with pytest.raises(ValueError, match="shard: .* holds a boolean"):
        hooke.run_batch(ROOT / "examples" / "drapes.toml", shard=(False, True))
    # (`jobs=True` ran one job at a time.)
    with pytest.raises(ValueError, match="jobs: True is a boolean"):
        hooke.run_batch(ROOT / "examples" / "drapes.toml", jobs=True)
    with pytest.raises(ValueError, match="worlds: expected an integer, got 2.5"):
        hooke.run_batch(ROOT / "examples" / "drapes.toml", worlds=2.5)
    # NumPy's booleans too (they are not ints, but convert to them), and a string is shown as one.
    with pytest.raises(ValueError, match="jobs: True is a boolean"):
        hooke.run_batch(ROOT / "examples" / "drapes.toml", jobs=np.bool_(True))
    with pytest.raises(ValueError, match="shard: .* holds a boolean"):
        hooke.run_batch(ROOT / "examples" / "drapes.toml", shard=(np.bool_(False), np.bool_(True)))
    with pytest.raises(ValueError, match="jobs: expected an integer, got '2'"):
        hooke.run_batch(ROOT / "examples" / "drapes.toml", jobs="2")
    with pytest.raises(ValueError, match="jobs: 1180591620717411303424 is out of range"):
        hooke.run_batch(ROOT / "examples" / "drapes.toml", jobs=2**70)
    ball = hooke.Simulation.from_arrays(vertices, triangles, MATERIAL, scene=SCENE)
    with pytest.raises(ValueError, match="collider: True is a boolean"):
        ball.place_collider(True, [0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="collider: True is a boolean"):
        ball.place_collider(np.bool_(True), [0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="translation: expected 3 numbers finite in f32"):
        ball.place_collider("ball", [1e300, 0.0, 0.0])
    ball.step(1)
    # An empty output folder is refused, not taken as the working folder.
    with pytest.raises(ValueError, match="out: an empty folder name"):
        hooke.bake(ROOT / "scenes" / "rope_pendulum.toml", "")
    with pytest.raises(ValueError, match="out: an empty folder name"):
        hooke.run_batch(ROOT / "examples" / "drapes.toml", out="")
    with pytest.raises(OSError, match="a folder, not a scene file"):
        hooke.bake(ROOT / "scenes", "x")
    # The scene's [output] keys are not where bake writes (they were taken and ignored).
    with pytest.raises(ValueError, match='"output.format" cannot be set'):
        hooke.bake(ROOT / "scenes" / "rope_pendulum.toml", "x", set={"output.format": "obj"})


def test_repr_returns():
    """`repr` took the solver's lock twice in one expression and waited on itself for ever
    (with the interpreter's lock held: a frozen REPL). Run in a child, so a hang fails here."""
    code = ("import hooke; s = hooke.Simulation.from_scene(" + repr(str(ROOT / "scenes" / "flag.toml")) + "); "
            "print(repr(s))")
    import sys
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "particles, t = 0.0000 s" in r.stdout, r.stdout + r.stderr


def test_pins_release_and_colliders_placed_from_python_do_what_physics_says():
    vertices, triangles, _ = sheet(8, 8, 0.05, 1.0)
    scene = {"solver": {"substeps": 10, "iterations": 2, "air_damping": 0.0},
             "collider": [{"name": "ball", "shape": "sphere", "center": [0.0, 0.5, 0.0], "radius": 0.2}]}
    sim = hooke.Simulation.from_arrays(vertices, triangles, MATERIAL, pins=[0, 7], scene=scene)
    out = np.empty((64, 3), dtype=np.float32)
    lowest = 1.0
    for _ in range(60):
        sim.step()
        sim.read_positions(out)
        lowest = min(lowest, out[:, 1].min())
    assert np.array_equal(out, sim.positions)
    # The pinned corners stay put; the sheet swings down about its pinned edge, its far edge
    # (0.35 m away) reaching the bottom of its arc, 0.65 m, and no lower than the strain allows.
    assert np.array_equal(out[[0, 7]], vertices[[0, 7]])
    assert 0.63 < lowest < 0.66, lowest
    # Released, it falls freely at g (no air damping; the ball moved out of the way).
    sim.place_collider("ball", [5.0, 0.0, 0.0])
    sim.release([0, 7])
    m = sim.masses.astype(float)
    momentum = lambda: (m * sim.velocities[:, 1]).sum() / m.sum()  # noqa: E731
    sim.step(1)
    v0, t0 = momentum(), sim.time
    sim.step(6)
    g = (momentum() - v0) / (sim.time - t0)
    assert g == pytest.approx(-9.81, rel=1e-3), g
    # Pinned at new targets (5 cm up: a pin moves its particle there at once): they go there
    # and stay there.
    targets = sim.positions[[10, 20]] + [0.0, 0.05, 0.0]
    sim.pin([10, 20], targets=targets)
    sim.step(5)
    assert np.array_equal(sim.positions[[10, 20]], targets.astype(np.float32))


def test_a_placed_collider_catches_the_cloth_and_one_moved_away_does_not():
    vertices, triangles, _ = sheet(8, 8, 0.05, 1.0)
    scene = {"solver": {"substeps": 10, "iterations": 2},
             "collider": [{"name": "ball", "shape": "sphere", "center": [0.0, 0.0, 0.0], "radius": 0.2}]}
    lowest = {}
    for place in ([0.0, 0.5, 0.0], [3.0, 0.0, 0.0]):
        sim = hooke.Simulation.from_arrays(vertices, triangles, MATERIAL, scene=scene)
        sim.place_collider(0, place)
        sim.step(40)
        centre = sim.positions[27]  # a particle near the middle
        lowest[tuple(place)] = centre[1]
    # On the ball (top at 0.7 m) against free fall (1 − g t²/2 = −1.18 m, a little less with
    # the default air damping).
    assert lowest[(0.0, 0.5, 0.0)] > 0.69
    assert -1.19 < lowest[(3.0, 0.0, 0.0)] < -1.1


def test_a_blow_up_raises_simulation_error():
    vertices, triangles, _ = sheet(4, 4)
    scene = {"gravity": [0.0, -1000.0, 0.0], "solver": {"max_speed": 5.0}}
    sim = hooke.Simulation.from_arrays(vertices, triangles, MATERIAL, scene=scene)
    with pytest.raises(hooke.SimulationError, match="m/s") as e:
        sim.step(60)
    # A speed past the limit says how to raise it, if that speed is real (as `bake` does).
    assert "set [solver] max_speed above it" in str(e.value), e.value
    assert isinstance(hooke.SimulationError("x"), RuntimeError)


def test_bake_and_batches_shard_by_shard(tmp_path):
    scene = ROOT / "scenes" / "rope_pendulum.toml"
    r = hooke.bake(scene, tmp_path / "baked", set={"solver.frames": 20})
    assert r["frames"] == 21 and Path(r["files"][0]).is_file() and Path(r["diagnostics"]).is_file()
    # A bake of the same scene that blows up keeps its frames in `failed/`, and the complete
    # cache above as it was.
    before = {p.name: p.read_bytes() for p in (tmp_path / "baked").iterdir() if p.is_file()}
    with pytest.raises(hooke.SimulationError, match="failed"):
        hooke.bake(scene, tmp_path / "baked", set={"solver.frames": 60, "gravity": [0.0, -1000.0, 0.0],
                                                     "solver.max_speed": 5.0})
    assert {p.name: p.read_bytes() for p in (tmp_path / "baked").iterdir() if p.is_file()} == before
    assert (tmp_path / "baked" / "failed" / "diagnostics.csv").is_file()
    # A bake whose cache cannot fit the disk is refused before simulating, naming the key.
    with pytest.raises(ValueError, match=r"solver\.frames = 99999999999999: the cache needs at least"):
        hooke.bake(scene, tmp_path / "huge", set={"solver.frames": 99999999999999})
    assert not (tmp_path / "huge").exists()
    manifest = tmp_path / "sweep.toml"
    manifest.write_text(f'[[sweep]]\nscene = {json.dumps(str(scene))}\nset = {{ "solver.frames" = 10 }}\n'
                        'vary = { "rope.0.end_mass" = [0.5, 1.0, 2.0, 4.0, 8.0] }\n')
    ran = []
    for i in range(2):
        ran += hooke.run_batch(manifest, out=tmp_path / "data", shard=(i, 2))
    assert sorted(r["sample"] for r in ran) == [0, 1, 2, 3, 4]
    # Each shard wrote the index of what was complete when it ended, as `hooke batch` does.
    assert len((tmp_path / "data" / "index.jsonl").read_text().splitlines()) == 5
    index = hooke.write_index(tmp_path / "data", manifest=manifest)
    assert [r["sample"] for r in index] == [0, 1, 2, 3, 4]
    assert all(r["status"] == "ok" for r in index)
    lines = (tmp_path / "data" / "index.jsonl").read_text().splitlines()
    assert [json.loads(line)["set"]["rope.0.end_mass"] for line in lines] == [0.5, 1.0, 2.0, 4.0, 8.0]
    # A heavier bob stretches the rope more.
    strain = [r["max_stretch_strain"] for r in index]
    assert strain == sorted(strain)
    with pytest.raises(ValueError, match="--resume"):
        hooke.run_batch(manifest, out=tmp_path / "data")
    # Packed into worlds: the same records, bit for bit.
    packed = hooke.run_batch(manifest, out=tmp_path / "packed", worlds=5)
    assert [r["max_stretch_strain"] for r in packed] == strain
    assert all(r["worlds"] == 5 for r in packed)
    with pytest.raises(ValueError, match="jobs"):
        hooke.run_batch(manifest, out=tmp_path / "x", worlds=2, jobs=2)
    # A shard whose caches cannot fit the disk is refused before simulating, naming the sample.
    huge = tmp_path / "huge.toml"
    huge.write_text(f'[[sweep]]\nscene = {json.dumps(str(scene))}\nset = {{ "solver.frames" = 99999999999999 }}\n'
                    'vary = { "rope.0.end_mass" = [0.5, 1.0] }\n')
    with pytest.raises(ValueError, match=r"the 2 caches need at least .*solver\.frames = 99999999999999"):
        hooke.run_batch(huge, out=tmp_path / "huge_data")
    assert not (tmp_path / "huge_data" / "samples").exists() or not any((tmp_path / "huge_data" / "samples").iterdir())


def test_wind_set_from_python_blows_a_hanging_cloth_downwind():
    vertices, triangles, _ = sheet(8, 8, 0.05, 1.0)
    scene = {"solver": {"substeps": 10, "iterations": 2}, "air": {"drag_coefficient": 1.2}}
    z = []
    # Pinned along its edge at z = −0.175 m, the sheet hangs across the z axis: a wind along z
    # blows it up to one side or the other.
    for wind in (None, [0.0, 0.0, 8.0], [0.0, 0.0, -8.0]):
        sim = hooke.Simulation.from_arrays(vertices, triangles, MATERIAL, pins=list(range(8)), scene=scene)
        sim.set_wind(wind)
        sim.step(90)
        z.append(float((sim.masses * sim.positions[:, 2]).sum() / sim.masses.sum()))
    still, north, south = z
    assert north > still + 0.08 and south < still - 0.08, z
    with pytest.raises(ValueError, match="velocity"):
        sim.set_wind([1.0, float("nan"), 0.0])


def test_a_simulation_steps_from_another_thread_and_ctrl_c_stops_a_batch(tmp_path):
    import _thread
    import signal
    import threading
    import time

    vertices, triangles, _ = sheet(6, 6)
    sim = hooke.Simulation.from_arrays(vertices, triangles, MATERIAL, pins=[0, 5])
    t = threading.Thread(target=sim.step, args=(10,))
    t.start()
    t.join()
    assert sim.time == pytest.approx(10 / 60)
    # Ctrl-C during a batch stops it after the current frame, keeping no half-made sample.
    scene = ROOT / "scenes" / "rope_pendulum.toml"
    manifest = tmp_path / "long.toml"
    manifest.write_text(f'[[sweep]]\nscene = {json.dumps(str(scene))}\nset = {{ "solver.frames" = 100000 }}\n'
                        'vary = { "rope.0.end_mass" = [1.0, 2.0] }\n')
    # A process started in the background by a shell without job control inherits SIGINT
    # ignored, and then Python installs no handler and interrupt_main does nothing: install
    # Python's own handler for the duration of the check.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        threading.Timer(1.0, _thread.interrupt_main).start()
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            hooke.run_batch(manifest, out=tmp_path / "data")
        assert time.monotonic() - started < 5.0
    finally:
        signal.signal(signal.SIGINT, previous)
    leftovers = [p.name for p in (tmp_path / "data" / "samples").iterdir()]
    assert leftovers == [], leftovers
