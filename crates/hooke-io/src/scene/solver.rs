//! The `[solver]` section: which solver a scene runs, with its numerical settings.

use super::schema::IterationsKey;
use super::schema::SolverSection;
use glam::Vec3;
use hooke::collision::{Motion, Shape};
use hooke::solver::force_based::{ForceSettings, Integrator};
use hooke::{AutoIterations, ClothSolver, Gust, Method, Model, RopeSolver, SolverError, XpbdSettings};
use std::sync::Arc;

/// The default `max_iterations` of `iterations = "auto"`.
pub const DEFAULT_MAX_ITERATIONS: u32 = 50;

/// The residual stretch strain `iterations = "auto"` iterates to, for a scene's
/// `residual_tolerance`: half of it (the monitor measures after the colliders, which add some);
/// half the default where the tolerance is infinite ("never warn").
pub fn auto_tolerance(residual_tolerance: f32) -> f32 {
    0.5 * if residual_tolerance.is_finite() { residual_tolerance } else { DEFAULT_RESIDUAL_TOLERANCE }
}

/// The default `residual_tolerance`: 2 % residual stretch strain.
pub const DEFAULT_RESIDUAL_TOLERANCE: f32 = 0.02;

/// The lowest derived blow-up speed limit (m/s), for scenes where nothing sets a speed (no
/// gravity, no wind, nothing moving).
pub const MIN_DERIVED_MAX_SPEED: f32 = 50.0;

/// How many times the scene's reference speed the derived blow-up limit is: a rigid 100 m
/// rope released horizontally whips its tip to 4.6 × √(2gL) (measured, converged at 200
/// substeps × 20 iterations); a runaway grows by orders of magnitude in a few frames, so the
/// margin costs at most a frame or two of detection.
pub const MAX_SPEED_FACTOR: f32 = 20.0;

/// The blow-up speed limit (m/s) a scene gets when it does not set `[solver] max_speed`:
///
/// max(50 m/s, 20 · (√(2|g|D) + |wind| + |gust amplitude| + v_colliders + v₀ + v_tear)),
///
/// with |g| the strongest gravity of the model's worlds, `wind` and `gust` those of the
/// windiest world, D (m) the diagonal of the box that holds every particle and every collider (a
/// collider as the sphere about its origin that holds it — a plane as its point — at rest
/// and at each keyframe), so √(2|g|D) is the speed of a fall across the whole scene;
/// v_colliders (m/s) the fastest keyframed motion, (|Δtranslation| + Δθ·D)/Δt between
/// consecutive keyframes (its rim, at most D from its origin, at the turn Δθ in radians), of
/// the colliders (`collider_motion`, one entry per collider, in the model's order) and of any
/// further motions listed after them (a scene's moving pins, which drag their cloth); v₀ the fastest initial particle speed; and v_tear the recoil of a tearing cloth
/// ([`tear_recoil_speed`]). A 1 m cloth falling 1 m gets about
/// 140 m/s; a 100 m scene about 900 m/s ([`MIN_DERIVED_MAX_SPEED`], [`MAX_SPEED_FACTOR`]).
/// Non-finite inputs are ignored.
pub fn derived_max_speed(
    model: &Model,
    wind: Vec3,
    gust: Option<Gust>,
    collider_motion: &[Option<Arc<Motion>>],
) -> f32 {
    let (mut lo, mut hi) = (Vec3::splat(f32::INFINITY), Vec3::splat(f32::NEG_INFINITY));
    let mut add = |p: Vec3, r: f32| {
        if p.is_finite() && r.is_finite() {
            lo = lo.min(p - Vec3::splat(r));
            hi = hi.max(p + Vec3::splat(r));
        }
    };
    for &x in model.particle_position() {
        add(x, 0.0);
    }
    // Each collider as the sphere about its origin that holds it.
    let spheres: Vec<(Vec3, f32)> = model
        .colliders()
        .iter()
        .map(|c| match c.shape {
            Shape::Sdf(ref grid) => (grid.centre(), grid.half_diagonal()),
            Shape::Plane { point, .. } => (point, 0.0),
            Shape::Sphere { center, radius } => (center, radius),
            Shape::Capsule { a, b, radius } => (0.5 * (a + b), 0.5 * (b - a).length() + radius),
            Shape::Box { center, half_extents, .. } => (center, half_extents.length()),
        })
        .collect();
    for (k, &(origin, r)) in spheres.iter().enumerate() {
        add(origin, r);
        if let Some(Some(m)) = collider_motion.get(k) {
            for key in m.keys() {
                add(origin + key.translation, r);
            }
        }
    }
    let diagonal = if lo.cmple(hi).all() { (hi - lo).length() } else { 0.0 };
    let mut collider_speed = 0.0f32;
    for m in collider_motion.iter().flatten() {
        for w in m.keys().windows(2) {
            let dt = w[1].time - w[0].time;
            if dt > 0.0 {
                let turn = w[0].rotation.angle_between(w[1].rotation);
                let v = ((w[1].translation - w[0].translation).length() + turn * diagonal) / dt;
                if v.is_finite() {
                    collider_speed = collider_speed.max(v);
                }
            }
        }
    }
    let initial = model.particle_velocity().iter().map(|v| v.length()).filter(|v| v.is_finite()).fold(0.0, f32::max);
    let finite = |v: f32| if v.is_finite() { v } else { 0.0 };
    // The strongest gravity of any world (each world falls at its own).
    let g = model.worlds().iter().map(|w| finite(w.gravity.length())).fold(0.0, f32::max);
    let fall = finite((2.0 * g * diagonal).sqrt());
    let air = finite(wind.length()) + gust.map_or(0.0, |g| finite(g.amplitude.length()));
    let reference = fall + air + collider_speed + initial + tear_recoil_speed(model);
    (MAX_SPEED_FACTOR * reference).max(MIN_DERIVED_MAX_SPEED)
}

/// The speed (m/s) at which a tearing cloth's free edge may recoil: for each structural and shear
/// constraint of a cloth that tears at strain ε (its `tear_strain`, or where it holds its
/// `tear_energy`), ε·L₀·√(k/m) — a chain of springs k and masses m held at strain ε and cut
/// unloads behind a wave of speed c = L₀·√(k/m), leaving its particles at ε·c (k = 1/α, the
/// stretch compliance's inverse; m the lighter end's mass; ε at most the blow-up strain, 10); the largest over the constraints, 0 without tearing (a rigid constraint, whose recoil has no bound, is
/// left out). `scenes/tear_pull.toml` (4 000 N/m, ε = 0.2, 2 cm
/// spacing): 40 m/s for its 40 mg inner particles, 80 at its 10 mg corners; under the global
/// cloth solve its torn edges recoil at about 70 m/s, which the former floor of 50 m/s stopped
/// as a blow-up.
pub fn tear_recoil_speed(model: &Model) -> f32 {
    let set = model.distance();
    let mass = model.particle_mass();
    let mut fastest = 0.0f32;
    for (k, c) in set.constraints().iter().enumerate() {
        // Only structural and shear constraints tear (bend springs do not).
        if !matches!(set.families()[k], hooke::ConstraintFamily::Structural | hooke::ConstraintFamily::Shear) {
            continue;
        }
        let Some(b) = set.body_of(k) else { continue };
        let hooke::BodyMaterial::Cloth(m) = &model.bodies()[b].material else { continue };
        let strain = m.breaking_strain(set.families()[k]);
        if !strain.is_finite() {
            continue;
        }
        // A constraint stretched past the blow-up strain stops the run before it can break: a
        // tear energy of 10³⁸ J/m² (a strain of about 10¹⁸) would otherwise set a speed limit
        // that nothing reaches.
        let strain = strain.min(XpbdSettings::default().max_strain);
        let lighter = mass[c.i as usize].min(mass[c.j as usize]);
        let v = strain * c.rest_length * (1.0 / (c.compliance_stretch * lighter)).sqrt();
        if v.is_finite() {
            fastest = fastest.max(v);
        }
    }
    fastest
}

/// Which solver a scene runs, with its numerical settings (`hooke_sim::make_solver` makes it).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SolverChoice {
    /// XPBD or PBD ([`hooke::XpbdSolver`]).
    Position(XpbdSettings),
    /// A force-based integrator ([`hooke::ForceSolver`]).
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
    /// The iterations in words: `4 iterations`, or `iterations to 1.00 % (at most 50)`.
    pub fn iterations_text(&self) -> String {
        match self {
            SolverChoice::Position(XpbdSettings { auto_iterations: Some(a), .. }) => {
                format!("iterations to {:.2} % (at most {})", 100.0 * a.tolerance, a.max_iterations)
            }
            _ if self.iterations() == 1 => "1 iteration".into(),
            _ => format!("{} iterations", self.iterations()),
        }
    }
    /// Sets the substeps per frame.
    pub fn set_substeps(&mut self, n: u32) {
        match self {
            SolverChoice::Position(s) => s.substeps = n,
            SolverChoice::Force(s) => s.substeps = n,
        }
    }
    /// Sets a fixed count of iterations per substep (`"auto"` no more; ignored by force-based
    /// integrators).
    pub fn set_iterations(&mut self, n: u32) {
        if let SolverChoice::Position(s) = self {
            s.iterations = n;
            s.auto_iterations = None;
        }
    }
    /// Runs on the rayon pool or sequentially.
    pub fn set_parallel(&mut self, parallel: bool) {
        match self {
            SolverChoice::Position(s) => s.parallel = parallel,
            SolverChoice::Force(s) => s.parallel = parallel,
        }
    }
    /// The blow-up speed limit (m/s).
    pub fn max_speed(&self) -> f32 {
        match self {
            SolverChoice::Position(s) => s.max_speed,
            SolverChoice::Force(s) => s.max_speed,
        }
    }
    /// Sets the blow-up speed limit (m/s).
    pub fn set_max_speed(&mut self, v: f32) {
        match self {
            SolverChoice::Position(s) => s.max_speed = v,
            SolverChoice::Force(s) => s.max_speed = v,
        }
    }
    /// Checks the settings ([`XpbdSettings::validate`], [`ForceSettings::validate`]).
    ///
    /// # Errors
    /// The setting that is out of range.
    pub fn validate(&self) -> Result<(), SolverError> {
        match self {
            SolverChoice::Position(s) => s.validate(),
            SolverChoice::Force(s) => s.validate(),
        }
    }
}

/// The solver of a `[solver]` section.
pub(super) fn solver_choice(s: &SolverSection) -> Result<SolverChoice, String> {
    let substeps = u32::try_from(s.substeps)
        .ok()
        .filter(|&n| (1..=100_000).contains(&n))
        .ok_or(format!("solver.substeps: must be between 1 and 100000, got {}", s.substeps))?;
    let max_substeps = match s.max_substeps {
        None => hooke::solver::xpbd::DEFAULT_MAX_SUBSTEPS,
        // At or below `substeps` it keeps every frame at `substeps` (the limit only raises).
        Some(n) => u32::try_from(n)
            .ok()
            .filter(|&n| (1..=100_000).contains(&n))
            .ok_or(format!("solver.max_substeps: must be between 1 and 100000, got {n}"))?,
    };
    let (iterations, auto) = match &s.iterations {
        IterationsKey::Count(n) => {
            let n =
                u32::try_from(*n).ok().filter(|&n| n >= 1).ok_or(format!("solver.iterations: must be ≥ 1, got {n}"))?;
            (n, false)
        }
        IterationsKey::Number(x) => {
            return Err(format!("solver.iterations: expected a whole count ≥ 1 or \"auto\", got {x}"));
        }
        IterationsKey::Word(w) if w == "auto" => (1, true),
        IterationsKey::Word(w) => {
            return Err(format!("solver.iterations: expected a count ≥ 1 or \"auto\", got {w:?}"));
        }
    };
    let max_iterations = match s.max_iterations {
        None => DEFAULT_MAX_ITERATIONS,
        Some(_) if !auto => return Err("solver.max_iterations: only applies to iterations = \"auto\"".into()),
        Some(n) => u32::try_from(n)
            .ok()
            .filter(|&n| (1..=10_000).contains(&n))
            .ok_or(format!("solver.max_iterations: must be between 1 and 10000, got {n}"))?,
    };
    let tolerance = auto_tolerance(s.residual_tolerance.unwrap_or(DEFAULT_RESIDUAL_TOLERANCE));
    let auto_iterations = auto.then_some(AutoIterations { tolerance, max_iterations });
    let rope_solver = match s.rope_solver.as_deref() {
        None | Some("direct") => RopeSolver::Direct,
        Some("gauss-seidel") => RopeSolver::GaussSeidel,
        Some(other) => {
            return Err(format!("solver.rope_solver: unknown rope solver {other:?} (expected direct or gauss-seidel)"));
        }
    };
    let cloth_solver = match s.cloth_solver.as_deref() {
        None | Some("gauss-seidel") => ClothSolver::GaussSeidel,
        Some("global") => ClothSolver::Global,
        Some("global-hinges") => ClothSolver::GlobalWithHinges,
        Some(other) => {
            return Err(format!(
                "solver.cloth_solver: unknown cloth solver {other:?} (expected gauss-seidel, global or global-hinges)"
            ));
        }
    };
    let position = |method| {
        SolverChoice::Position(XpbdSettings {
            substeps,
            max_substeps,
            iterations,
            method,
            air_damping: s.air_damping,
            rope_solver,
            cloth_solver,
            tethers: s.tethers.unwrap_or(true),
            auto_iterations,
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
            if s.iterations != IterationsKey::Count(1) {
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
    if s.rope_solver.is_some() && matches!(solver, SolverChoice::Force(_)) {
        return Err("solver.rope_solver: only applies to method = \"xpbd\" or \"pbd\"".into());
    }
    if s.cloth_solver.is_some() && matches!(solver, SolverChoice::Force(_)) {
        return Err("solver.cloth_solver: only applies to method = \"xpbd\"".into());
    }
    if cloth_solver.is_global()
        && matches!(solver, SolverChoice::Position(XpbdSettings { method: Method::Pbd { .. }, .. }))
    {
        return Err(format!(
            "solver.cloth_solver: {:?} needs method = \"xpbd\" (PBD's rigid constraints make its system singular)",
            cloth_solver.name()
        ));
    }
    if s.max_substeps.is_some() && !matches!(solver, SolverChoice::Position(XpbdSettings { method: Method::Xpbd, .. }))
    {
        return Err(
            "solver.max_substeps: only applies to method = \"xpbd\" (the tension limit reads XPBD's multipliers)"
                .into(),
        );
    }
    if s.tethers.is_some() && matches!(solver, SolverChoice::Force(_)) {
        return Err("solver.tethers: only applies to method = \"xpbd\" or \"pbd\"".into());
    }
    if s.pbd_stiffness.is_some() && !s.method.eq_ignore_ascii_case("pbd") {
        return Err("solver.pbd_stiffness: only applies to method = \"pbd\"".into());
    }
    if (s.cg_tolerance.is_some() || s.cg_max_iterations.is_some()) && s.method != "implicit-euler" {
        return Err("solver.cg_tolerance/cg_max_iterations: only apply to method = \"implicit-euler\"".into());
    }
    if let Some(v) = s.max_speed
        && (v.is_nan() || v <= 0.0)
    {
        return Err(format!("solver.max_speed: the blow-up speed limit must be > 0 m/s (inf: no limit), got {v}"));
    }
    if let Some(t) = s.residual_tolerance
        && (t.is_nan() || t <= 0.0)
    {
        return Err(format!(
            "solver.residual_tolerance: must be a residual strain > 0 (0.02 = 2 %; inf: never warn), got {t}"
        ));
    }
    solver.validate().map_err(|e| e.to_string())?;
    check_fps(s.fps).map_err(|e| format!("solver.fps: {e}"))?;
    Ok(solver)
}

/// The frame rates a scene may run at (frames per second): a frame of 1000 s to 1 µs. Outside,
/// the substep's h² and 1/h² leave f32's comfortable range (a compliance α/h² overflows), and
/// the run would end in a "blow-up" that names nothing.
pub const FPS_RANGE: std::ops::RangeInclusive<f32> = 1e-3..=1e6;

/// Checks a frame rate `fps` (1/s) against [`FPS_RANGE`].
///
/// # Errors
/// A message giving the value and the range (without the key; the caller names it).
pub fn check_fps(fps: f32) -> Result<(), String> {
    if FPS_RANGE.contains(&fps) {
        Ok(())
    } else {
        Err(format!(
            "the frame rate must be between {:e} and {:e} frames per second (the time step is 1/fps), got {fps}",
            FPS_RANGE.start(),
            FPS_RANGE.end()
        ))
    }
}
