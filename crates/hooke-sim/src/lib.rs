//! # hooke-sim — running hooke scenes
//!
//! The application layer between scene files ([`hooke_io::scene`]) and solvers: one factory
//! that makes a scene's solver on the CPU ([`hooke::XpbdSolver`], [`hooke::ForceSolver`]) or
//! on the GPU ([`hooke_gpu::GpuXpbdSolver`]), for the command line, the viewer and batch runs
//! alike.
//!
//! ```no_run
//! use hooke::Solver;
//! use hooke_sim::{Backend, SolverOptions, make_solver};
//!
//! let scene = hooke_io::scene::load(std::path::Path::new("scenes/flag.toml"), 1 << 30).unwrap();
//! let mut made = make_solver(&scene, &SolverOptions::new(Backend::Cpu)).unwrap();
//! for _ in 0..scene.frames {
//!     let control = scene.control_at(made.solver.time());
//!     made.solver.step(&control, 1.0 / scene.fps).unwrap();
//! }
//! ```
#![warn(missing_docs)]

pub mod bake;
pub mod batch;
mod factory;
mod json_keys;
pub mod space;
pub mod tearing;
pub mod worlds;

pub use bake::{
    Bake, BakeError, BakeSettings, Baked, ConvergenceMonitor, FAILED_FOLDER, Failure, TornTotals, check_format,
};
pub use factory::{
    Backend, FactoryError, MadeSolver, SolverOptions, gpu_settings, make_cpu_solver, make_gpu_solver, make_solver,
};
pub use tearing::{TearCounts, TearError, Tearing};
