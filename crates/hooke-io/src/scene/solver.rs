//! The `[solver]` section: which solver a scene runs, with its numerical settings.

use super::schema::SolverSection;
use hooke::solver::force_based::{ForceSettings, Integrator};
use hooke::{Method, RopeSolver, SolverError, XpbdSettings};

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
        .filter(|&n| n >= 1)
        .ok_or(format!("solver.substeps: must be ≥ 1, got {}", s.substeps))?;
    let iterations = u32::try_from(s.iterations)
        .ok()
        .filter(|&n| n >= 1)
        .ok_or(format!("solver.iterations: must be ≥ 1, got {}", s.iterations))?;
    let rope_solver = match s.rope_solver.as_deref() {
        None | Some("direct") => RopeSolver::Direct,
        Some("gauss-seidel") => RopeSolver::GaussSeidel,
        Some(other) => {
            return Err(format!("solver.rope_solver: unknown rope solver {other:?} (expected direct or gauss-seidel)"));
        }
    };
    let position = |method| {
        SolverChoice::Position(XpbdSettings {
            substeps,
            iterations,
            method,
            air_damping: s.air_damping,
            rope_solver,
            tethers: s.tethers.unwrap_or(true),
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
    if s.rope_solver.is_some() && matches!(solver, SolverChoice::Force(_)) {
        return Err("solver.rope_solver: only applies to method = \"xpbd\" or \"pbd\"".into());
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
    solver.validate().map_err(|e| e.to_string())?;
    if !(s.fps.is_finite() && s.fps > 0.0) {
        return Err(format!(
            "solver.fps: the frame rate must be finite and > 0 (the time step is 1/fps), got {}",
            s.fps
        ));
    }
    Ok(solver)
}
