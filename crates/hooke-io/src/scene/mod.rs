//! Scene files: TOML parsed into a typed schema ([`schema`]), validated, and built into a
//! [`Model`], a pin schedule and solver settings.
//!
//! Every error names the file, the table and key (or the line and column for syntax errors),
//! and what is wrong.

pub mod schema;

use glam::{EulerRot, Quat, Vec3};
use hooke::collision::{Collider, Keyframe, Motion, Shape};
use hooke::solver::force_based::{ForceSettings, ForceSolver, Integrator};
use hooke::{
    Air, ClothGrid, ClothMaterial, ClothMesh, Control, Method, Model, ModelBuilder, Pin, Rope, RopeMaterial, Solver,
    SolverError, XpbdSettings, XpbdSolver,
};
use schema::*;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The built-in default scene: the article's demo (§5.5), a cloth hung by two corners falling
/// onto a sphere in a light wind. Same text as `scenes/cloth_on_sphere.toml`.
pub const DEFAULT_SCENE: &str = include_str!("../../../../scenes/cloth_on_sphere.toml");

/// A scene file error: which file, and what is wrong where.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{file}: {message}")]
pub struct SceneError {
    /// The scene file (or `<built-in>`).
    pub file: String,
    /// Where and what: a key path such as `cloth[0] "flag": rows` and the problem, or the
    /// TOML parser's message with line and column.
    pub message: String,
}

/// A pin with the time (s) it is released, if ever.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScheduledPin {
    /// The pin.
    pub pin: Pin,
    /// Release time (s).
    pub release_at: Option<f64>,
}

/// Which solver a scene runs, with its numerical settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SolverChoice {
    /// XPBD or PBD ([`XpbdSolver`]).
    Position(XpbdSettings),
    /// A force-based integrator ([`ForceSolver`]).
    Force(ForceSettings),
}

impl SolverChoice {
    /// Substeps per frame.
    pub fn substeps(&self) -> u32 {
        match self {
            SolverChoice::Position(s) => s.substeps,
            SolverChoice::Force(s) => s.substeps,
        }
    }
    /// Constraint iterations per substep (1 for force-based integrators).
    pub fn iterations(&self) -> u32 {
        match self {
            SolverChoice::Position(s) => s.iterations,
            SolverChoice::Force(_) => 1,
        }
    }
    /// Sets the substeps per frame.
    pub fn set_substeps(&mut self, n: u32) {
        match self {
            SolverChoice::Position(s) => s.substeps = n,
            SolverChoice::Force(s) => s.substeps = n,
        }
    }
    /// Sets the iterations per substep (ignored by force-based integrators).
    pub fn set_iterations(&mut self, n: u32) {
        if let SolverChoice::Position(s) = self {
            s.iterations = n;
        }
    }
    /// Runs on the rayon pool or sequentially.
    pub fn set_parallel(&mut self, parallel: bool) {
        match self {
            SolverChoice::Position(s) => s.parallel = parallel,
            SolverChoice::Force(s) => s.parallel = parallel,
        }
    }
    /// Creates the solver for `model`.
    ///
    /// # Errors
    /// The solver's [`SolverError`] for settings out of range (or, for force-based
    /// integrators, a rigid constraint).
    pub fn build(&self, model: Arc<Model>) -> Result<Box<dyn Solver>, SolverError> {
        Ok(match *self {
            SolverChoice::Position(s) => Box::new(XpbdSolver::new(model, s)?),
            SolverChoice::Force(s) => Box::new(ForceSolver::new(model, s)?),
        })
    }
}

/// A parsed, validated and built scene.
#[derive(Clone, Debug)]
pub struct Scene {
    /// Scene name.
    pub name: String,
    /// The model.
    pub model: Arc<Model>,
    /// Solver and its settings.
    pub solver: SolverChoice,
    /// Frames per second.
    pub fps: f32,
    /// Frames to simulate.
    pub frames: usize,
    /// Wind velocity (m/s).
    pub wind: Vec3,
    /// Gusts on top of the wind.
    pub gust: Option<hooke::Gust>,
    /// Pins and their release times.
    pub pins: Vec<ScheduledPin>,
    /// Output settings from the file.
    pub output: OutputSection,
}

impl Scene {
    /// The [`Control`] in force at time `t` (s): wind, and the pins not yet released.
    pub fn control_at(&self, t: f64) -> Control {
        Control {
            wind: self.wind,
            gust: self.gust,
            pins: self.pins.iter().filter(|p| p.release_at.is_none_or(|r| t < r)).map(|p| p.pin).collect(),
        }
    }
}

/// Reads and builds a scene file.
///
/// # Errors
/// [`SceneError`] if the file cannot be read, is not valid TOML, has an unknown key or a value
/// out of range, or its model cannot be built (e.g. it would exceed `memory_limit` bytes).
pub fn load(path: &Path, memory_limit: u64) -> Result<Scene, SceneError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| SceneError { file: file.clone(), message: format!("cannot read the scene file: {e}") })?;
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("scene");
    parse(&text, &file, stem, path.parent(), memory_limit)
}

/// Parses and builds scene text. `file` names it in errors; `default_name` is used when the
/// scene has no `name`; relative mesh paths are resolved against `base_dir`.
///
/// # Errors
/// As [`load`].
pub fn parse(
    text: &str,
    file: &str,
    default_name: &str,
    base_dir: Option<&Path>,
    memory_limit: u64,
) -> Result<Scene, SceneError> {
    let err = |message: String| SceneError { file: file.to_string(), message };
    let scene: SceneFile = toml::from_str(text).map_err(|e| err(e.to_string().trim_end().to_string()))?;
    build(&scene, default_name, base_dir, memory_limit).map_err(err)
}

fn vec3(v: [f32; 3], key: &str) -> Result<Vec3, String> {
    let v = Vec3::from_array(v);
    if v.is_finite() { Ok(v) } else { Err(format!("{key}: must be finite, got {v}")) }
}

fn rotation(deg: Option<[f32; 3]>, key: &str) -> Result<Quat, String> {
    let r = vec3(deg.unwrap_or([0.0; 3]), key)?;
    Ok(Quat::from_euler(EulerRot::XYZ, r.x.to_radians(), r.y.to_radians(), r.z.to_radians()))
}

fn count(v: i64, key: &str) -> Result<usize, String> {
    usize::try_from(v).map_err(|_| format!("{key}: must be a count ≥ 0, got {v}"))
}

/// Resolves a possibly negative index into `0..len`.
fn index(v: i64, len: usize, key: &str) -> Result<usize, String> {
    let k = if v < 0 { len as i64 + v } else { v };
    if k >= 0 && (k as usize) < len {
        Ok(k as usize)
    } else {
        Err(format!("{key}: index {v} is out of range for {len} elements"))
    }
}

fn build(f: &SceneFile, default_name: &str, base_dir: Option<&Path>, memory_limit: u64) -> Result<Scene, String> {
    let s = &f.solver;
    let substeps = u32::try_from(s.substeps)
        .ok()
        .filter(|&n| n >= 1)
        .ok_or(format!("solver.substeps: must be ≥ 1, got {}", s.substeps))?;
    let iterations = u32::try_from(s.iterations)
        .ok()
        .filter(|&n| n >= 1)
        .ok_or(format!("solver.iterations: must be ≥ 1, got {}", s.iterations))?;
    let position = |method| {
        SolverChoice::Position(XpbdSettings {
            substeps,
            iterations,
            method,
            air_damping: s.air_damping,
            ..XpbdSettings::default()
        })
    };
    let solver = match s.method.as_str() {
        "xpbd" => position(Method::Xpbd),
        "pbd" => position(Method::Pbd { stiffness: s.pbd_stiffness.unwrap_or(1.0) }),
        other => {
            let integrator: Integrator = other.parse().map_err(|_| {
                format!("solver.method: unknown method {other:?} (expected xpbd, pbd, forward-euler, symplectic-euler, verlet or implicit-euler)")
            })?;
            if s.iterations != 1 {
                return Err(format!(
                    "solver.iterations: a force-based integrator ({other}) has no constraint iterations"
                ));
            }
            let d = ForceSettings::default();
            let cg_max = match s.cg_max_iterations {
                Some(n) => u32::try_from(n)
                    .ok()
                    .filter(|&n| n >= 1)
                    .ok_or(format!("solver.cg_max_iterations: must be between 1 and {}, got {n}", u32::MAX))?,
                None => d.cg_max_iterations,
            };
            SolverChoice::Force(ForceSettings {
                integrator,
                substeps,
                air_damping: s.air_damping,
                cg_tolerance: s.cg_tolerance.unwrap_or(d.cg_tolerance),
                cg_max_iterations: cg_max,
                ..d
            })
        }
    };
    if s.pbd_stiffness.is_some() && !s.method.eq_ignore_ascii_case("pbd") {
        return Err("solver.pbd_stiffness: only applies to method = \"pbd\"".into());
    }
    if (s.cg_tolerance.is_some() || s.cg_max_iterations.is_some()) && s.method != "implicit-euler" {
        return Err("solver.cg_tolerance/cg_max_iterations: only apply to method = \"implicit-euler\"".into());
    }
    // Let the solver's own validation speak for the remaining settings.
    solver.build(Arc::new(tiny_model())).map_err(|e| e.to_string())?;
    if !(s.fps.is_finite() && s.fps > 0.0) {
        return Err(format!(
            "solver.fps: the frame rate must be finite and > 0 (the time step is 1/fps), got {}",
            s.fps
        ));
    }
    let frames = count(s.frames, "solver.frames")?;
    if frames == 0 {
        return Err("solver.frames: must be ≥ 1, got 0".into());
    }

    let mut b = ModelBuilder::new();
    b.set_memory_limit(memory_limit);
    if let Some(g) = f.gravity {
        b.set_gravity(vec3(g, "gravity")?).map_err(|e| e.to_string())?;
    }
    let wind = vec3(f.wind.unwrap_or([0.0; 3]), "wind")?;
    let gust = match f.gust {
        Some(g) => {
            let amplitude = vec3(g.amplitude, "gust.amplitude")?;
            if !(g.period.is_finite() && g.period > 0.0) {
                return Err(format!("gust.period: must be a time > 0 s, got {}", g.period));
            }
            Some(hooke::Gust { amplitude, period: g.period })
        }
        None => None,
    };
    if let Some(a) = &f.air {
        let air = Air {
            density: a.density.unwrap_or(1.225),
            drag_coefficient: a.drag_coefficient.unwrap_or(1.0),
            ..Air::default()
        };
        b.set_air(air).map_err(|e| e.to_string())?;
    }
    let material = |name: &Option<String>, key: &str| -> Result<MaterialSection, String> {
        match name {
            None => Ok(MaterialSection::default()),
            Some(n) => f.materials.get(n).cloned().ok_or_else(|| {
                let known: Vec<&String> = f.materials.keys().collect();
                format!("{key}.material: no material named {n:?} (defined: {known:?})")
            }),
        }
    };
    let mut pins = Vec::new();
    for (k, c) in f.cloth.iter().enumerate() {
        let name = c.name.clone().unwrap_or(format!("cloth{k}"));
        let key = format!("cloth[{k}] {name:?}");
        let m = material(&c.material, &key)?;
        let d = ClothMaterial::default();
        let stretch = m.stretch_stiffness.unwrap_or(d.stretch_stiffness);
        let mat = ClothMaterial {
            areal_density: m.density.unwrap_or(d.areal_density),
            stretch_stiffness: stretch,
            compression_stiffness: m.compression_stiffness.unwrap_or(if m.stretch_stiffness.is_some() {
                stretch
            } else {
                d.compression_stiffness
            }),
            shear_stiffness: m.shear_stiffness.unwrap_or(d.shear_stiffness),
            bend_stiffness: m.bend_stiffness.unwrap_or(d.bend_stiffness),
            damping: m.damping.unwrap_or(d.damping),
            thickness: m.thickness.unwrap_or(d.thickness),
        };
        if m.radius.is_some() {
            return Err(format!(
                "{key}: material {:?} sets `radius`, which is for ropes (cloth uses `thickness`)",
                c.material.as_deref().unwrap_or("")
            ));
        }
        let center = vec3(c.center.unwrap_or([0.0; 3]), &format!("{key}: center"))?;
        let rot = rotation(c.rotation, &format!("{key}: rotation"))?;
        let (id, grid) = if let Some(mesh) = &c.mesh {
            for (set, field) in [
                (c.rows.is_some(), "rows"),
                (c.columns.is_some(), "columns"),
                (c.spacing.is_some(), "spacing"),
                (c.velocity.is_some(), "velocity"),
                (c.spring_stiffness.is_some(), "spring_stiffness"),
                (c.structural.is_some(), "structural"),
                (c.shear.is_some(), "shear"),
            ] {
                if set {
                    return Err(format!("{key}: `{field}` applies to grids, not to a `mesh` cloth"));
                }
            }
            if !c.pin_rows.is_empty() || !c.pin_columns.is_empty() || !c.pin_cells.is_empty() {
                return Err(format!(
                    "{key}: pin_rows/pin_columns/pin_cells apply to grids; use pin_indices or pin_box"
                ));
            }
            let path = base_dir.map_or_else(|| PathBuf::from(mesh), |d| d.join(mesh));
            let obj = crate::mesh::load_obj(&path).map_err(|e| format!("{key}: mesh: {e}"))?;
            let mut cm = ClothMesh::new(name.clone(), obj.positions, obj.triangles);
            cm.uvs = obj.uvs;
            cm.scale = c.scale.unwrap_or(1.0);
            cm.rotation = rot;
            cm.translation = center;
            cm.material = mat;
            cm.bending = c.bending.unwrap_or(true);
            cm.particle_mass = c.particle_mass;
            (b.add_cloth_mesh(&cm).map_err(|e| e.to_string())?, None)
        } else {
            let (Some(rows), Some(columns), Some(spacing)) = (c.rows, c.columns, c.spacing) else {
                return Err(format!("{key}: a grid cloth needs `rows`, `columns` and `spacing` (or give a `mesh`)"));
            };
            if c.scale.is_some() {
                return Err(format!("{key}: `scale` applies to mesh cloths"));
            }
            let mut g = ClothGrid::new(
                name.clone(),
                count(rows, &format!("{key}: rows"))?,
                count(columns, &format!("{key}: columns"))?,
                spacing,
            );
            g.center = center;
            g.rotation = rot;
            g.velocity = vec3(c.velocity.unwrap_or([0.0; 3]), &format!("{key}: velocity"))?;
            g.material = mat;
            g.structural = c.structural.unwrap_or(true);
            g.shear = c.shear.unwrap_or(true);
            g.bending = c.bending.unwrap_or(true);
            g.particle_mass = c.particle_mass;
            g.spring_stiffness = c.spring_stiffness;
            (b.add_cloth_grid(&g).map_err(|e| e.to_string())?, Some((g.rows, g.columns)))
        };
        let body = b.body(id).clone();
        let n = body.particles.len();
        let mut local = Vec::new();
        if let Some((rows, columns)) = grid {
            for &r in &c.pin_rows {
                let r = index(r, rows, &format!("{key}: pin_rows"))?;
                local.extend((0..columns).map(|col| r * columns + col));
            }
            for &col in &c.pin_columns {
                let col = index(col, columns, &format!("{key}: pin_columns"))?;
                local.extend((0..rows).map(|r| r * columns + col));
            }
            for &[r, col] in &c.pin_cells {
                let (r, col) =
                    (index(r, rows, &format!("{key}: pin_cells"))?, index(col, columns, &format!("{key}: pin_cells"))?);
                local.push(r * columns + col);
            }
        }
        for &i in &c.pin_indices {
            local.push(index(i, n, &format!("{key}: pin_indices"))?);
        }
        let first = body.particles.start as usize;
        let mut global: Vec<u32> = local.iter().map(|&l| (first + l) as u32).collect();
        if let Some(bx) = c.pin_box {
            let (lo, hi) =
                (vec3(bx.min, &format!("{key}: pin_box.min"))?, vec3(bx.max, &format!("{key}: pin_box.max"))?);
            if lo.cmpgt(hi).any() {
                return Err(format!("{key}: pin_box.min {lo} must not exceed pin_box.max {hi} on any axis"));
            }
            // Positions are final only after finalize(); recompute the body's start positions.
            global.extend(pin_box_candidates(&b, &body, lo, hi));
            if global.is_empty() {
                return Err(format!("{key}: pin_box contains no particle of this cloth"));
            }
        }
        push_pins(&mut pins, global, c.release_pins_at, &key)?;
    }
    for (k, r) in f.rope.iter().enumerate() {
        let name = r.name.clone().unwrap_or(format!("rope{k}"));
        let key = format!("rope[{k}] {name:?}");
        let m = material(&r.material, &key)?;
        if m.shear_stiffness.is_some() || m.thickness.is_some() {
            return Err(format!(
                "{key}: material {:?} sets shear_stiffness or thickness, which are for cloth",
                r.material.as_deref().unwrap_or("")
            ));
        }
        let d = RopeMaterial::default();
        let stretch = m.stretch_stiffness.unwrap_or(d.stretch_stiffness);
        let mat = RopeMaterial {
            linear_density: m.density.unwrap_or(d.linear_density),
            stretch_stiffness: stretch,
            compression_stiffness: m.compression_stiffness.unwrap_or(stretch),
            bend_stiffness: m.bend_stiffness.unwrap_or(d.bend_stiffness),
            damping: m.damping.unwrap_or(d.damping),
            radius: m.radius.unwrap_or(d.radius),
        };
        let points: Vec<Vec3> = match (&r.points, r.start, r.end) {
            (Some(p), None, None) => {
                p.iter().enumerate().map(|(i, &q)| vec3(q, &format!("{key}: points[{i}]"))).collect::<Result<_, _>>()?
            }
            (None, Some(a), Some(e)) => vec![vec3(a, &format!("{key}: start"))?, vec3(e, &format!("{key}: end"))?],
            _ => return Err(format!("{key}: give either `start` and `end`, or `points`")),
        };
        let mut rope = Rope::polyline(name.clone(), points, count(r.particles, &format!("{key}: particles"))?);
        rope.material = mat;
        rope.bending = r.bending.unwrap_or(true);
        rope.particle_mass = r.particle_mass;
        let id = b.add_rope(&rope).map_err(|e| e.to_string())?;
        let body = b.body(id).clone();
        if let Some(m) = r.end_mass {
            b.set_particle_mass(body.particles.end - 1, m).map_err(|e| format!("{key}: end_mass: {e}"))?;
        }
        let n = body.particles.len();
        let global = r
            .pin_indices
            .iter()
            .map(|&i| index(i, n, &format!("{key}: pin_indices")).map(|l| body.particles.start + l as u32))
            .collect::<Result<Vec<_>, _>>()?;
        push_pins(&mut pins, global, r.release_pins_at, &key)?;
    }
    for (k, c) in f.collider.iter().enumerate() {
        let name = c.name.clone().unwrap_or(format!("{}{k}", c.shape));
        let key = format!("collider[{k}] {name:?}");
        let need = |v: Option<[f32; 3]>, field: &str| -> Result<Vec3, String> {
            vec3(v.ok_or(format!("{key}: a {} needs `{field}`", c.shape))?, &format!("{key}: {field}"))
        };
        let need_r = || c.radius.ok_or(format!("{key}: a {} needs `radius`", c.shape));
        let allowed: &[&str] = match c.shape.as_str() {
            "plane" => &["point", "normal"],
            "sphere" => &["center", "radius"],
            "capsule" => &["a", "b", "radius"],
            "box" => &["center", "half_extents", "rotation"],
            other => return Err(format!("{key}: unknown shape {other:?} (expected plane, sphere, capsule or box)")),
        };
        let given = [
            ("point", c.point.is_some()),
            ("normal", c.normal.is_some()),
            ("center", c.center.is_some()),
            ("radius", c.radius.is_some()),
            ("a", c.a.is_some()),
            ("b", c.b.is_some()),
            ("half_extents", c.half_extents.is_some()),
            ("rotation", c.rotation.is_some()),
        ];
        if let Some((field, _)) = given.iter().find(|(f, set)| *set && !allowed.contains(f)) {
            return Err(format!("{key}: `{field}` does not apply to a {}", c.shape));
        }
        let shape = match c.shape.as_str() {
            "plane" => Shape::Plane { point: need(c.point, "point")?, normal: need(c.normal, "normal")? },
            "sphere" => Shape::Sphere { center: need(c.center, "center")?, radius: need_r()? },
            "capsule" => Shape::Capsule { a: need(c.a, "a")?, b: need(c.b, "b")?, radius: need_r()? },
            _ => Shape::Box {
                center: need(c.center, "center")?,
                half_extents: need(c.half_extents, "half_extents")?,
                rotation: rotation(c.rotation, &format!("{key}: rotation"))?,
            },
        };
        let mu_s = c.static_friction.unwrap_or(0.0);
        let mu_k = c.kinetic_friction.unwrap_or(mu_s);
        let keys = c
            .keyframes
            .iter()
            .map(|k| Keyframe { time: k.time, translation: Vec3::from_array(k.translation) })
            .collect();
        let motion = Motion::new(keys).map_err(|e| format!("{key}: {e}"))?;
        b.add_collider(Collider::new(name, shape).with_friction(mu_s, mu_k).with_motion(motion))
            .map_err(|e| e.to_string())?;
    }
    let model = b.finalize().map_err(|e| e.to_string())?;
    let name = f.name.clone().unwrap_or(default_name.to_string());
    if name.is_empty() || name.contains(['/', '\\']) || name.starts_with('.') {
        return Err(format!("name: {name:?} cannot be used as a folder and file name"));
    }
    let model = Arc::new(model);
    // Force-based integrators need finite stiffness everywhere, and symplectic Euler and Verlet
    // a step under their stability limit: check now, not at run time.
    if let SolverChoice::Force(settings) = solver {
        let force = ForceSolver::new(model.clone(), settings).map_err(|e| e.to_string())?;
        force.check_step(1.0 / s.fps).map_err(|e| e.to_string())?;
    }
    Ok(Scene { name, model, solver, fps: s.fps, frames, wind, gust, pins, output: f.output.clone() })
}

fn push_pins(pins: &mut Vec<ScheduledPin>, global: Vec<u32>, release_at: Option<f64>, key: &str) -> Result<(), String> {
    if let Some(t) = release_at
        && !(t.is_finite() && t >= 0.0)
    {
        return Err(format!("{key}: release_pins_at must be a time ≥ 0 s, got {t}"));
    }
    for p in global {
        if !pins.iter().any(|q: &ScheduledPin| q.pin.particle == p) {
            pins.push(ScheduledPin { pin: Pin { particle: p, target: None }, release_at });
        }
    }
    Ok(())
}

/// Particles of `body` whose initial position lies in the box [lo, hi].
fn pin_box_candidates(b: &ModelBuilder, body: &hooke::Body, lo: Vec3, hi: Vec3) -> Vec<u32> {
    body.particles
        .clone()
        .filter(|&p| {
            let x = b.particle_position(p);
            x.cmpge(lo).all() && x.cmple(hi).all()
        })
        .collect()
}

/// A one-particle model, to run the solver's settings validation.
fn tiny_model() -> Model {
    let mut b = ModelBuilder::new();
    b.add_rope(&Rope::straight("r", Vec3::ZERO, Vec3::X, 2)).expect("valid rope");
    b.finalize().expect("valid model")
}
