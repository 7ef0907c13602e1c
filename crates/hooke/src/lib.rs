//! # hooke — cloth and rope simulation
//!
//! hooke simulates cloth and rope as particles joined by distance constraints — the springs of
//! a mass-spring model (structural, shear and bending, article §1.1) — solved with XPBD or PBD
//! (§3) or as spring forces with explicit and implicit integrators (§2), with analytic
//! colliders, signed distances and Coulomb friction (§4).
//!
//! The data flow follows NVIDIA Warp's `sim` design:
//!
//! * [`ModelBuilder`] → [`Model`]: immutable particles, constraint sets (already coloured for
//!   parallel Gauss–Seidel, §5.2), triangles and collider shapes.
//! * [`State`]: positions and velocities; [`Control`]: wind, pins and collider placements,
//!   per frame.
//! * [`Solver`]: one trait for every solver; [`XpbdSolver`] is the CPU XPBD/PBD solver,
//!   [`ForceSolver`] the force-based mass–spring solver (forward, symplectic and implicit Euler,
//!   Verlet; article §2). All run the same [substep stages](solver::stages) from one
//!   [`SubstepPlan`](solver::SubstepPlan) per frame.
//!
//! The floating-point environment (flushing subnormals, which x86 handles slowly) is the
//! caller's choice: see [`fp`].
//!
//! Units are SI throughout (m, kg, s, N/m; compliance in m/N); Y is up; gravity is
//! (0, −9.81, 0) m/s² by default.
//!
//! ```
//! use std::sync::Arc;
//! use hooke::{ClothGrid, Control, ModelBuilder, Solver, XpbdSettings, XpbdSolver};
//! use glam::{Quat, Vec3};
//!
//! let mut builder = ModelBuilder::new();
//! let mut grid = ClothGrid::new("flag", 10, 10, 0.05);
//! grid.rotation = Quat::from_rotation_x(std::f32::consts::FRAC_PI_2); // hang it, row 0 on top
//! let flag = builder.add_cloth_grid(&grid).unwrap();
//! let model = Arc::new(builder.finalize().unwrap());
//! let mut control = Control::new();
//! for c in 0..10 {
//!     control.pin(model.bodies()[flag.0].grid_index(0, c).unwrap());
//! }
//! let mut solver = XpbdSolver::new(model.clone(), XpbdSettings::default()).unwrap();
//! for _ in 0..10 {
//!     solver.step(&control, 1.0 / 60.0).unwrap();
//! }
//! let mut x = Vec::new();
//! solver.read_positions(&mut x);
//! assert!(x.iter().all(|p| p.is_finite()));
//! ```
#![warn(missing_docs)]

pub mod angle;
pub mod collision;
pub mod control;
pub mod diagnostics;
mod error;
pub mod forces;
pub mod fp;
pub mod model;
pub mod parallel;
pub mod picking;
pub mod solver;
pub mod state;
pub mod surface;
pub mod tearing;
pub mod tethers;

pub use control::{ColliderMotion, Control, Gust, Pin};
pub use diagnostics::Diagnostics;
pub use error::ModelError;
pub use glam;
pub use model::{
    Air, Bending, Body, BodyId, BodyKind, BodyMaterial, ClothGrid, ClothMaterial, ClothMesh, ConstraintFamily,
    ConstraintSet, DihedralBending, DistanceConstraint, Model, ModelBuilder, ParticleConstraint, Rope, RopeBending,
    RopeMaterial, World,
};
pub use solver::{
    AutoIterations, ClothSolver, ForceSettings, ForceSolver, Integrator, Method, RopeSolver, Solver, SolverError,
    SolverInfo, Stage, StageTimes, StepReport, SubstepPlan, XpbdSettings, XpbdSolver,
};
pub use state::State;
