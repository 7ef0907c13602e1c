//! The TOML schema of a scene file, as plain serde types. Every table rejects unknown keys.
//!
//! Units are SI: metres, kilograms, seconds, N/m; angles in degrees. See `scenes/` for
//! examples and the README for the full list of keys.

use serde::Deserialize;
use std::collections::BTreeMap;

/// Fixed-size arrays read exactly: serde's own `[T; N]` takes the first N values of a longer
/// TOML array and drops the rest without a word; these refuse it ("invalid length 4, expected
/// 3 values"), naming the key through the scene loader's path.
mod exact {
    use serde::de::{Deserialize, Deserializer, Error};

    fn fixed<'de, D: Deserializer<'de>, T, const N: usize>(v: Vec<T>) -> Result<[T; N], D::Error> {
        let len = v.len();
        v.try_into().map_err(|_| D::Error::invalid_length(len, &format!("{N} values").as_str()))
    }

    pub fn array<'de, D: Deserializer<'de>, T: Deserialize<'de>, const N: usize>(d: D) -> Result<[T; N], D::Error> {
        fixed::<D, T, N>(Vec::deserialize(d)?)
    }

    pub fn opt_array<'de, D: Deserializer<'de>, T: Deserialize<'de>, const N: usize>(
        d: D,
    ) -> Result<Option<[T; N]>, D::Error> {
        array(d).map(Some)
    }

    pub fn vec_of_arrays<'de, D: Deserializer<'de>, T: Deserialize<'de>, const N: usize>(
        d: D,
    ) -> Result<Vec<[T; N]>, D::Error> {
        Vec::<Vec<T>>::deserialize(d)?.into_iter().map(fixed::<D, T, N>).collect()
    }

    pub fn opt_vec_of_arrays<'de, D: Deserializer<'de>, T: Deserialize<'de>, const N: usize>(
        d: D,
    ) -> Result<Option<Vec<[T; N]>>, D::Error> {
        vec_of_arrays(d).map(Some)
    }

    pub fn opt_array_of_arrays<'de, D: Deserializer<'de>, T: Deserialize<'de>, const N: usize, const M: usize>(
        d: D,
    ) -> Result<Option<[[T; N]; M]>, D::Error> {
        let rows = Vec::<Vec<T>>::deserialize(d)?.into_iter().map(fixed::<D, T, N>).collect::<Result<Vec<_>, _>>()?;
        fixed::<D, [T; N], M>(rows).map(Some)
    }
}

/// A whole scene file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SceneFile {
    /// Scene name, used for the output folder and cache file names (default: the file stem).
    pub name: Option<String>,
    /// Solver settings.
    #[serde(default)]
    pub solver: SolverSection,
    /// Gravity (m/s²), default [0, −9.81, 0].
    #[serde(default, deserialize_with = "exact::opt_array")]
    pub gravity: Option<[f32; 3]>,
    /// Wind velocity (m/s), default [0, 0, 0].
    #[serde(default, deserialize_with = "exact::opt_array")]
    pub wind: Option<[f32; 3]>,
    /// Gusts on top of the steady wind: `{ amplitude = [x, y, z], period = s }` adds
    /// amplitude·sin(2πt/period) (m/s).
    pub gust: Option<GustSection>,
    /// Air for aerodynamic forces; absent: no aerodynamics.
    pub air: Option<AirSection>,
    /// Output settings.
    #[serde(default)]
    pub output: OutputSection,
    /// Named materials.
    #[serde(default)]
    pub materials: BTreeMap<String, MaterialSection>,
    /// Cloths (`[[cloth]]`).
    #[serde(default)]
    pub cloth: Vec<ClothSection>,
    /// Ropes (`[[rope]]`).
    #[serde(default)]
    pub rope: Vec<RopeSection>,
    /// Colliders (`[[collider]]`).
    #[serde(default)]
    pub collider: Vec<ColliderSection>,
    /// Scripted cuts (`[[cut]]`).
    #[serde(default)]
    pub cut: Vec<CutSection>,
    /// Worlds 1, 2, … (`[[world]]`): independent scenes in the same model, each with its own
    /// gravity and wind; a body or collider joins one with `world = k` (0, the default, is the
    /// top level's). Made by the batch runner's packing (issue #13).
    #[serde(default)]
    pub world: Vec<WorldSection>,
}

/// `[[world]]`: a world's environment.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorldSection {
    /// Gravity (m/s²), default [0, −9.81, 0].
    #[serde(default, deserialize_with = "exact::opt_array")]
    pub gravity: Option<[f32; 3]>,
    /// Wind velocity (m/s), default [0, 0, 0].
    #[serde(default, deserialize_with = "exact::opt_array")]
    pub wind: Option<[f32; 3]>,
    /// Gusts on top of the steady wind.
    pub gust: Option<GustSection>,
}

/// `[solver]`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SolverSection {
    /// `"xpbd"` (default), `"pbd"`, or a force-based integrator: `"forward-euler"`,
    /// `"symplectic-euler"`, `"verlet"`, `"implicit-euler"`.
    #[serde(default = "default_method")]
    pub method: String,
    /// Substeps per frame (default 20).
    #[serde(default = "default_substeps")]
    pub substeps: i64,
    /// The most substeps the tension limit may split a frame into (XPBD on the CPU, default
    /// 1000; `max_substeps = substeps` keeps every frame at `substeps`). See
    /// `hooke::solver::xpbd::stability`.
    pub max_substeps: Option<i64>,
    /// Iterations per substep (default 1), or `"auto"`: iterate to half the residual
    /// tolerance, at most `max_iterations` (XPBD on the CPU).
    #[serde(default = "default_iterations")]
    pub iterations: IterationsKey,
    /// With `iterations = "auto"`: the most iterations per substep (default 50).
    pub max_iterations: Option<i64>,
    /// PBD stiffness factor in [0, 1] (only for `method = "pbd"`, default 1).
    pub pbd_stiffness: Option<f32>,
    /// Relative residual at which conjugate gradient stops (implicit Euler only, default 1e-6).
    pub cg_tolerance: Option<f64>,
    /// Conjugate gradient iteration cap (implicit Euler only, default 200).
    pub cg_max_iterations: Option<i64>,
    /// How ropes are solved: `"direct"` (default; XPBD and PBD) or `"gauss-seidel"`.
    pub rope_solver: Option<String>,
    /// How the constraints of cloths are solved: `"gauss-seidel"` (default), `"global"` (every
    /// distance constraint of a cloth together, by conjugate gradients or a sparse
    /// factorisation) or `"global-hinges"` (its hinges too); XPBD, finite stiffness, one
    /// world; on the GPU for narrow cloths (a banded factorisation per cloth).
    pub cloth_solver: Option<String>,
    /// Tethers (long-range attachments) from particles to pins (default true; XPBD and PBD).
    pub tethers: Option<bool>,
    /// Global air damping rate (1/s, default 0.05).
    #[serde(default = "default_air_damping")]
    pub air_damping: f32,
    /// Frames per second of the output (default 60); the frame time step is 1/fps.
    #[serde(default = "default_fps")]
    pub fps: f32,
    /// Number of frames to simulate (default 240).
    #[serde(default = "default_frames")]
    pub frames: i64,
    /// Convergence tolerance: the largest residual stretch strain (dimensionless, 0.02 = 2 %)
    /// a body may keep away from its pins before `hooke run` warns (`--strict`: fails);
    /// default 0.02; `inf` never warns. See `hooke::diagnostics`.
    pub residual_tolerance: Option<f32>,
    /// Blow-up speed limit (m/s): a particle faster than this stops the run; `inf` disables
    /// it. Default: derived from the scene's size, gravity, wind and
    /// collider motion (`hooke_io::scene::derived_max_speed`).
    pub max_speed: Option<f32>,
    /// Make each tear by strain beside the next frame — on a GPU, on a host thread while the
    /// device solves that frame — and take it after that frame (default false: at once). The
    /// tear then takes effect one frame after the strain that makes it (`hooke_sim::Tearing`).
    pub tear_overlap: Option<bool>,
}

impl Default for SolverSection {
    fn default() -> Self {
        SolverSection {
            method: default_method(),
            substeps: default_substeps(),
            max_substeps: None,
            iterations: default_iterations(),
            max_iterations: None,
            pbd_stiffness: None,
            cg_tolerance: None,
            cg_max_iterations: None,
            rope_solver: None,
            cloth_solver: None,
            tethers: None,
            air_damping: default_air_damping(),
            fps: default_fps(),
            frames: default_frames(),
            residual_tolerance: None,
            max_speed: None,
            tear_overlap: None,
        }
    }
}

fn default_method() -> String {
    "xpbd".into()
}
fn default_substeps() -> i64 {
    20
}
fn default_iterations() -> IterationsKey {
    IterationsKey::Count(1)
}

/// `[solver] iterations`: a count or a word (`"auto"`).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum IterationsKey {
    /// A fixed count.
    Count(i64),
    /// A number that is not a whole one (refused when the solver is made, with its value).
    Number(f64),
    /// `"auto"` (anything else is refused when the solver is made).
    Word(String),
}
fn default_air_damping() -> f32 {
    0.05
}
fn default_fps() -> f32 {
    60.0
}
fn default_frames() -> i64 {
    240
}

/// `[air]`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AirSection {
    /// Air density (kg/m³, default 1.225).
    pub density: Option<f32>,
    /// Drag coefficient C_d of the normal pressure force (default 1).
    pub drag_coefficient: Option<f32>,
    /// Lift coefficient C_l of the force perpendicular to the relative wind (default 0).
    pub lift_coefficient: Option<f32>,
}

/// `gust = { amplitude = [x, y, z], period = s }`.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GustSection {
    /// Peak gust velocity (m/s).
    #[serde(deserialize_with = "exact::array")]
    pub amplitude: [f32; 3],
    /// Period (s), > 0.
    pub period: f32,
}

/// `[output]`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputSection {
    /// `"usda"` (default), `"obj"` or `"pc2"`.
    pub format: Option<String>,
    /// Output folder (default `out/<scene name>`), relative to the working directory.
    pub dir: Option<String>,
}

/// `[materials.NAME]`: used by cloths (per-area quantities) and ropes (per-length ones).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MaterialSection {
    /// Density: kg/m² for cloth, kg/m for rope.
    pub density: Option<f32>,
    /// Cloth only: the stretch strain |xᵢ − xⱼ|/L₀ − 1 at which a structural or shear
    /// constraint breaks and the cloth tears (default: never).
    pub tear_strain: Option<f32>,
    /// Cloth only: the elastic energy per unit area (J/m²), ½·K·ε² for a constraint of
    /// membrane modulus K at strain ε, at which a structural or shear constraint breaks
    /// (default: no energy criterion; with `tear_strain`, whichever comes first).
    pub tear_energy: Option<f32>,
    /// Stretch stiffness: membrane modulus in N/m for cloth, axial EA in N for rope. `inf` is rigid.
    pub stretch_stiffness: Option<f32>,
    /// Compression stiffness, same units (default: the stretch stiffness).
    pub compression_stiffness: Option<f32>,
    /// Shear modulus (N/m), cloth only.
    pub shear_stiffness: Option<f32>,
    /// Modulus of the bend springs (`bending = "springs"`): N/m for cloth, N for rope.
    pub bend_stiffness: Option<f32>,
    /// Bending modulus of angle bending (`bending = "angle"`): the flexural rigidity B in N·m
    /// for cloth, EI in N·m² for rope. `inf` is rigid.
    pub bending_modulus: Option<f32>,
    /// Axial damping time τ = k_d/k (s).
    pub damping: Option<f32>,
    /// Cloth thickness (m): collision radius is half of it.
    pub thickness: Option<f32>,
    /// Rope radius (m).
    pub radius: Option<f32>,
    /// Static friction μₛ between particles in self-contact (default 0.5).
    pub self_static_friction: Option<f32>,
    /// Kinetic friction μₖ between particles in self-contact (default 0.4, or μₛ when that is
    /// given).
    pub self_kinetic_friction: Option<f32>,
}

/// `[[cloth]]`: a grid (`rows`, `columns`, `spacing`) or a mesh (`mesh`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClothSection {
    /// Body name (default `cloth<N>`).
    pub name: Option<String>,
    /// The world it belongs to (default 0; see [`WorldSection`]).
    pub world: Option<usize>,
    /// Name of a `[materials.NAME]` table (default: the engine's default cloth material).
    pub material: Option<String>,
    /// Grid rows (particles).
    pub rows: Option<i64>,
    /// Grid columns (particles).
    pub columns: Option<i64>,
    /// Grid spacing (m).
    pub spacing: Option<f32>,
    /// Triangle mesh file (OBJ), relative to the scene file.
    pub mesh: Option<String>,
    /// Uniform scale of the mesh (default 1).
    pub scale: Option<f32>,
    /// Weld coincident vertices of the mesh (default true): vertices split by UV seams, flat
    /// shading or the exporter are joined into one particle.
    pub weld: Option<bool>,
    /// Distance within which mesh vertices are welded, in the mesh file's units before
    /// `scale` (default 10⁻⁶ × the mesh's bounding-box diagonal; 0 welds equal positions only).
    pub weld_tolerance: Option<f32>,
    /// Position (m): the grid's centre, or the mesh's translation.
    #[serde(default, deserialize_with = "exact::opt_array")]
    pub center: Option<[f32; 3]>,
    /// Rotation, XYZ Euler angles in degrees.
    #[serde(default, deserialize_with = "exact::opt_array")]
    pub rotation: Option<[f32; 3]>,
    /// Initial velocity (m/s), grids only.
    #[serde(default, deserialize_with = "exact::opt_array")]
    pub velocity: Option<[f32; 3]>,
    /// Structural springs (default true; grids).
    pub structural: Option<bool>,
    /// Shear springs (default true; grids).
    pub shear: Option<bool>,
    /// Bending model: `"angle"` (dihedral angles), `"springs"` (bend springs) or `"none"`;
    /// by default `"springs"` if the material sets `bend_stiffness`, else `"angle"`.
    pub bending: Option<String>,
    /// Mass of every particle (kg) instead of density × area.
    pub particle_mass: Option<f32>,
    /// Stiffness of every spring (N/m) instead of the material moduli (grids).
    pub spring_stiffness: Option<f32>,
    /// Pin whole rows (grids).
    #[serde(default)]
    pub pin_rows: Vec<i64>,
    /// Pin whole columns (grids).
    #[serde(default)]
    pub pin_columns: Vec<i64>,
    /// Pin [row, column] cells (grids); negative values count from the end.
    #[serde(default, deserialize_with = "exact::vec_of_arrays")]
    pub pin_cells: Vec<[i64; 2]>,
    /// Pin particles by local index — for a mesh, by the file's vertex index (0-based, welded
    /// vertices pin their shared particle); negative values count from the end.
    #[serde(default)]
    pub pin_indices: Vec<i64>,
    /// Pin every particle initially inside this world-space box.
    pub pin_box: Option<BoxSection>,
    /// Release this body's pins at this time (s): the article's "cut".
    pub release_pins_at: Option<f64>,
    /// Groups of pins that move (`[[cloth.pin_groups]]`), each held along its keyframes.
    #[serde(default)]
    pub pin_groups: Vec<PinGroupSection>,
    /// Particle contacts within the cloth and with every other body that has them on
    /// (default false; the material's thickness is the contact distance).
    pub self_collision: Option<bool>,
    /// With self-collision, cap each substep's displacement at 0.2 × the thickness (speed
    /// ≤ 0.2·thickness/h; default false).
    pub self_collision_speed_clamp: Option<bool>,
    /// Contact distance of self-collision (m), when it should differ from the material's
    /// thickness (which stays the distance kept from colliders); default: the thickness.
    pub self_collision_thickness: Option<f32>,
    /// The cloth's triangles collide with colliders too, through virtual particles at their
    /// centroids and edge midpoints, so collider edges and corners do not poke between the
    /// particles (default true; XPBD, PBD, implicit Euler).
    pub triangle_contact: Option<bool>,
}

/// `[[cut]]`: at `time`, a blade along the polyline `points` and extending along `direction`
/// cuts every cloth constraint that crosses it (`hooke::tearing::cut`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CutSection {
    /// When (s).
    pub time: f64,
    /// The blade's polyline (m), at least two points.
    #[serde(deserialize_with = "exact::vec_of_arrays")]
    pub points: Vec<[f32; 3]>,
    /// The direction the blade extends in (default [0, 0, 1]: a cut drawn in the x–y plane).
    #[serde(default, deserialize_with = "exact::opt_array")]
    pub direction: Option<[f32; 3]>,
}

/// `[[cloth.pin_groups]]`: pins, chosen like the cloth's own pin keys, that move along
/// keyframed translations from where they start (a sheet pulled apart by two edges, say).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PinGroupSection {
    /// Rows (grids); negative values count from the end.
    #[serde(default)]
    pub rows: Vec<i64>,
    /// Columns (grids).
    #[serde(default)]
    pub columns: Vec<i64>,
    /// [row, column] cells (grids).
    #[serde(default, deserialize_with = "exact::vec_of_arrays")]
    pub cells: Vec<[i64; 2]>,
    /// Particles by local index (a mesh: its file's vertex index).
    #[serde(default)]
    pub indices: Vec<i64>,
    /// Translations (m) from the start over time; rotations are not allowed.
    pub keyframes: Vec<KeyframeSection>,
    /// Release these pins at this time (s).
    pub release_at: Option<f64>,
}

/// An axis-aligned box `{ min = [...], max = [...] }` (m).
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BoxSection {
    /// Lower corner (m).
    #[serde(deserialize_with = "exact::array")]
    pub min: [f32; 3],
    /// Upper corner (m).
    #[serde(deserialize_with = "exact::array")]
    pub max: [f32; 3],
}

/// `[[rope]]`: straight (`start`, `end`) or along `points`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RopeSection {
    /// Body name (default `rope<N>`).
    pub name: Option<String>,
    /// The world it belongs to (default 0; see [`WorldSection`]).
    pub world: Option<usize>,
    /// Name of a `[materials.NAME]` table.
    pub material: Option<String>,
    /// First end (m).
    #[serde(default, deserialize_with = "exact::opt_array")]
    pub start: Option<[f32; 3]>,
    /// Last end (m).
    #[serde(default, deserialize_with = "exact::opt_array")]
    pub end: Option<[f32; 3]>,
    /// Polyline (m), instead of start/end.
    #[serde(default, deserialize_with = "exact::opt_vec_of_arrays")]
    pub points: Option<Vec<[f32; 3]>>,
    /// Number of particles.
    pub particles: i64,
    /// Bending model: `"angle"` (joint angles), `"springs"` (i–i+2 springs) or `"none"`; by
    /// default `"springs"` if the material sets `bend_stiffness`, else `"angle"`.
    pub bending: Option<String>,
    /// Mass of every particle (kg).
    pub particle_mass: Option<f32>,
    /// Mass of the last particle (kg), e.g. a pendulum bob.
    pub end_mass: Option<f32>,
    /// Pin particles by index; negative values count from the end.
    #[serde(default)]
    pub pin_indices: Vec<i64>,
    /// Release this body's pins at this time (s).
    pub release_pins_at: Option<f64>,
    /// Particle contacts within the rope and with every other body that has them on
    /// (default false; the material's radius is the contact radius).
    pub self_collision: Option<bool>,
    /// With self-collision, cap each substep's displacement at 0.2 × the diameter (default
    /// false).
    pub self_collision_speed_clamp: Option<bool>,
}

/// `[[collider]]`: `shape` is `"plane"`, `"sphere"`, `"capsule"`, `"box"` or `"mesh"`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColliderSection {
    /// Name (default `<shape><N>`).
    pub name: Option<String>,
    /// The world it belongs to (default 0; see [`WorldSection`]).
    pub world: Option<usize>,
    /// Shape kind.
    pub shape: String,
    /// Plane: a point on it (m).
    #[serde(default, deserialize_with = "exact::opt_array")]
    pub point: Option<[f32; 3]>,
    /// Plane: outward normal.
    #[serde(default, deserialize_with = "exact::opt_array")]
    pub normal: Option<[f32; 3]>,
    /// Sphere and box: centre (m); mesh: translation of the file's origin (m).
    #[serde(default, deserialize_with = "exact::opt_array")]
    pub center: Option<[f32; 3]>,
    /// Sphere and capsule: radius (m).
    pub radius: Option<f32>,
    /// Capsule: first end of the axis (m).
    #[serde(default, deserialize_with = "exact::opt_array")]
    pub a: Option<[f32; 3]>,
    /// Capsule: second end of the axis (m).
    #[serde(default, deserialize_with = "exact::opt_array")]
    pub b: Option<[f32; 3]>,
    /// Box: half extents (m).
    #[serde(default, deserialize_with = "exact::opt_array")]
    pub half_extents: Option<[f32; 3]>,
    /// Box: rotation, XYZ Euler degrees; mesh: rotation about the file's origin.
    #[serde(default, deserialize_with = "exact::opt_array")]
    pub rotation: Option<[f32; 3]>,
    /// Mesh: the OBJ file, relative to the scene file; it must be closed unless `sign` is
    /// `"winding-number"`.
    pub path: Option<String>,
    /// Mesh: uniform scale from file units to metres (default 1).
    pub scale: Option<f32>,
    /// Mesh: cells of the signed distance grid along the mesh's longest side (default 64).
    pub resolution: Option<i64>,
    /// Mesh: cell size of the signed distance grid (m), instead of `resolution`.
    pub cell_size: Option<f32>,
    /// Mesh: free space around the mesh covered by the grid (m; default 3 cells).
    pub margin: Option<f32>,
    /// Mesh: the box the grid covers instead, `[[x0, y0, z0], [x1, y1, z1]]` (m, in the scene's
    /// frame, where the placed mesh lies); not with `margin`. `resolution` then counts cells
    /// along the box's longest side.
    #[serde(default, deserialize_with = "exact::opt_array_of_arrays")]
    pub bounds: Option<[[f32; 3]; 2]>,
    /// Mesh: how inside is told from outside — `"pseudo-normals"` (default; a closed mesh) or
    /// `"winding-number"` (open or non-manifold meshes).
    pub sign: Option<String>,
    /// Static friction coefficient μₛ (default 0).
    pub static_friction: Option<f32>,
    /// Kinetic friction coefficient μₖ (default: μₛ).
    pub kinetic_friction: Option<f32>,
    /// Keyframed motion: translation and rotation about the collider's origin.
    #[serde(default)]
    pub keyframes: Vec<KeyframeSection>,
}

/// `{ time = t, translation = [x, y, z], rotation = [rx, ry, rz] }`.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyframeSection {
    /// Time (s).
    pub time: f32,
    /// Translation (m) from the rest placement (default none).
    #[serde(default, deserialize_with = "exact::opt_array")]
    pub translation: Option<[f32; 3]>,
    /// Rotation about the collider's origin (its centre; a plane's point, a capsule's
    /// midpoint), XYZ Euler degrees (default none).
    #[serde(default, deserialize_with = "exact::opt_array")]
    pub rotation: Option<[f32; 3]>,
}
