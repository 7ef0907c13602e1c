"""hooke: cloth and rope simulation (XPBD/PBD, collisions with Coulomb friction, tearing).

Scenes come from TOML scene files (the format of the `hooke` command, see the README) or from
NumPy arrays; they are stepped from Python and their positions read into NumPy; they can be
baked to caches (USD, OBJ sequences, PC2) and run as batches of samples, shard by shard.

Units are SI throughout: metres, kilograms, seconds, newtons per metre. Arrays of positions
are float32 of shape (n, 3), one row per particle. A scene gives the same positions here as
with the `hooke` command line, bit for bit.

Errors: bad input raises ValueError (naming the argument or scene key and what is wrong), or
TypeError for a value of the wrong kind; files that cannot be read or written raise OSError; a
simulation that blows up raises SimulationError.
"""

from os import PathLike
from typing import Any, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

__version__: str

_Path = Union[str, PathLike]
_Vec3 = Union[Sequence[float], npt.ArrayLike]

class SimulationError(RuntimeError):
    """A simulation that blew up (a particle faster than the scene's speed limit, a NaN) or
    could not go on; the message names the particle, the time and what it reached."""

class Simulation:
    """A simulation: a model (particles, constraints, colliders), its solver and its state.

    One thread at a time: while `step` runs (it releases the interpreter's lock), another
    thread's call on the same Simulation raises RuntimeError ("Already borrowed" or "Already
    mutably borrowed") instead of waiting; give each thread its own Simulation, or a lock.
    """

    @staticmethod
    def from_scene(path: _Path, set: Optional[Mapping[str, Any]] = None, backend: str = "cpu") -> "Simulation":
        """Loads a scene file.

        path: a scene file (TOML; relative mesh paths resolve against its folder).
        set: scene keys to change, as dotted paths: {"solver.substeps": 40,
            "materials.cotton.stretch_stiffness": 1e4, "cloth.0.rows": 32}.
        backend: "cpu", or "gpu" (wgpu compute; XPBD and PBD scenes).

        Raises OSError if the file cannot be read, ValueError for a bad key or value.
        """
    @staticmethod
    def from_arrays(
        vertices: npt.ArrayLike,
        triangles: npt.ArrayLike,
        material: Mapping[str, Any],
        pins: Union[None, int, Sequence[int]] = None,
        uvs: Optional[npt.ArrayLike] = None,
        scene: Optional[Mapping[str, Any]] = None,
        backend: str = "cpu",
        name: str = "cloth",
    ) -> "Simulation":
        """A cloth from arrays, built as a scene's mesh cloth is.

        vertices: (n, 3) positions (m); each vertex is a particle (nothing is welded).
        triangles: (t, 3) vertex indices, counter-clockwise seen from the front.
        material: the keys of a scene's [materials.X] table: density (kg/m²),
            stretch_stiffness (N/m), shear_stiffness (N/m), bending_modulus (N·m), thickness
            (m), damping, friction, tear_strain, tear_energy (J/m²), ...
        pins: vertex indices held where they are (an int or a sequence of ints; booleans are refused).
        uvs: (n, 2) texture coordinates (needed for tearing); default: none.
        scene: the rest of a scene file as a dict: "solver" ({"substeps": 20, "iterations":
            2, "fps": 60, "frames": 240, ...}), "gravity" (m/s²), "wind" (m/s), "air",
            "collider" (a list of collider tables), ...
        backend: "cpu" or "gpu".

        Raises ValueError naming the argument for an array of the wrong shape, a NaN, an index
        out of range, or a bad material or scene key.
        """
    def step(self, frames: int = 1) -> None:
        """Advances `frames` frames of 1/fps s each (the scene's substeps — more where the CPU's tension limit raises them for a rope — and iterations each).

        Raises SimulationError if the simulation blows up; the state is then the last good one.
        The interpreter's lock is released while it runs; Ctrl-C stops between frames.
        """
    @property
    def positions(self) -> npt.NDArray[np.float32]:
        """Particle positions (m): a new (n, 3) float32 array."""
    @property
    def velocities(self) -> npt.NDArray[np.float32]:
        """Particle velocities (m/s): a new (n, 3) float32 array."""
    def read_positions(self, out: npt.NDArray[np.float32]) -> None:
        """Copies the particle positions (m) into `out`, a C-contiguous (n, 3) float32 array,
        with no allocation (for reading every frame). Raises ValueError for another shape."""
    @property
    def masses(self) -> npt.NDArray[np.float32]:
        """Particle masses (kg): a new (n,) float32 array."""
    @property
    def triangles(self) -> npt.NDArray[np.uint32]:
        """Triangles of every cloth as particle indices: a new (t, 3) uint32 array."""
    @property
    def time(self) -> float:
        """Simulated time (s)."""
    @property
    def fps(self) -> float:
        """Frames per second: `step` advances 1/fps s per frame."""
    @property
    def frames(self) -> int:
        """The scene's frame count ([solver] frames)."""
    @property
    def particle_count(self) -> int:
        """Particles (a tearing cloth gains some when it splits)."""
    @property
    def name(self) -> str:
        """The scene's name."""
    def pin(self, particles: Union[int, Sequence[int]], targets: Optional[npt.ArrayLike] = None) -> None:
        """Pins particles: at `targets`, an (len(particles), 3) array of positions (m), or
        where they are now. A pinned particle moves to its target and stays there. Raises
        ValueError naming `particles` for a particle given twice, `targets` for a row that is
        not finite in f32 (beyond ±3.4e38)."""
    def release(self, particles: Union[int, Sequence[int]]) -> None:
        """Releases particles, including pins of the scene file."""
    def set_wind(self, velocity: Optional[_Vec3] = None) -> None:
        """Sets the steady wind (m/s, 3 numbers; the scene's gusts are dropped), or goes back
        to the scene's wind with None. Acts through the scene's [air] (aerodynamic drag and
        lift); without one it acts on nothing (air damping slows particles toward rest, not
        toward the wind). Raises ValueError naming `velocity`
        when it is not finite in f32 or its square is not (as a scene's wind)."""
    def place_collider(self, collider: Union[int, str], translation: _Vec3, rotation: Optional[_Vec3] = None) -> None:
        """Places a collider (by index or name): translated by `translation` (m) and rotated
        by `rotation` (degrees about x, y, z, in that order) from its rest placement, from the
        next frame on. Raises ValueError for an unknown collider, and naming `translation` or
        `rotation` for values not finite in f32."""
    def diagnostics(self) -> dict:
        """The state measured: time_s, max_stretch_strain, max_penetration_m (into a
        collider), nan_count, max_speed_m_per_s, kinetic_energy_j, gravity_energy_j,
        elastic_energy_j."""

def bake(
    scene: _Path,
    out: _Path,
    set: Optional[Mapping[str, Any]] = None,
    format: str = "usda",
    backend: str = "cpu",
    strict: bool = False,
) -> dict:
    """Bakes a scene file into the folder `out`, as `hooke run` does: the cache ("usda",
    "obj" or "pc2") and diagnostics.csv. Returns frames, time_s, seconds, max_stretch_strain,
    max_residual_strain, max_penetration_m, files, diagnostics.

    Raises SimulationError if it blows up or meets a tear it cannot make (a mesh cloth without
    texture coordinates cut across; the frames before it are kept, in `out/failed/`, so that
    a complete cache of an earlier run in `out` is not replaced) or, with `strict`,
    does not converge (nothing is kept). Interrupted (Ctrl-C), it raises KeyboardInterrupt
    and keeps the frames done in `out/failed/` likewise. Raises ValueError, before simulating,
    naming `solver.frames`, when the cache cannot fit the file system of `out` (at least 12
    bytes a point and frame), and naming `out` when it is empty ("." is this folder).
    """

def run_batch(
    manifest: _Path,
    out: Optional[_Path] = None,
    shard: Union[None, str, Tuple[int, int]] = None,
    resume: bool = False,
    backend: str = "cpu",
    jobs: int = 1,
    worlds: Optional[int] = None,
) -> list:
    """Runs the samples of a batch manifest (the format of `hooke batch`) in shard `shard`
    ("i/n" or (i, n); default: all), each into its own folder under `out` (default: the
    manifest's). Returns the records of the samples it ran (dicts: sample, scene, set, status,
    reason, files, frames, max_residual_strain, max_penetration_m, ...). A sample that blows
    up or fails a quality check is recorded as failed and the shard goes on. `jobs` samples
    are baked at the same time, each on a thread of its own (the results are the same).
    Up to `worlds` samples are packed into one model of worlds and solved together, with the
    same results bit for bit: runs of consecutive samples that share their [solver] and [air],
    up to 2**20 particles a pack; a sample that tears or iterates "auto" runs alone; not with
    `jobs`. On the GPU a pack is one model solved by the same dispatches. Default (None): 256
    on the GPU, 1 on the CPU or with `jobs` > 1.

    Raises ValueError for a bad manifest, samples already there without `resume`, an empty
    `out`, or samples whose caches cannot fit the file system of `out` together (before
    simulating; naming the largest sample and its `solver.frames`).
    """

def write_index(out: _Path, manifest: Optional[_Path] = None) -> list:
    """Writes out/index.jsonl from every complete sample under `out`, and returns the records
    in sample order; with `manifest`, each record is checked against it (ValueError naming the
    sample if it is not the manifest's). `run_batch` writes it too when its shard ends."""
