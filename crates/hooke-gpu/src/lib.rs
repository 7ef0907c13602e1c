//! # hooke-gpu — hooke's XPBD solver as WGSL compute shaders on wgpu
//!
//! This crate runs the position-based solver of [`hooke`] (article §3) on a GPU, following the
//! article's §5 (parallel constraint solving) and §6 (normals). [`GpuXpbdSolver`] implements
//! [`hooke::Solver`] with the same [`hooke::XpbdSettings`], so it is a drop-in replacement for
//! [`hooke::XpbdSolver`], and agrees with it to f32 rounding on the same model.
//!
//! ## Why graph colouring (§5.1–5.2)
//!
//! Gauss–Seidel projects constraints one after another, each seeing the corrections of the
//! previous ones. Run naively in parallel, two threads projecting constraints that share a
//! particle would both read its old position and one write would be lost — a data race. The
//! model's constraints are therefore partitioned into *colours* such that no two constraints
//! of a colour share a particle (hooke's `model::colouring`; a rope needs 2 + 2 colours, a
//! cloth grid 12). All constraints of one colour are independent and run as one dispatch; the
//! colours run one after another. The sweep is thus exactly the CPU's colour-ordered
//! Gauss–Seidel, and the result does not depend on how threads are scheduled.
//!
//! ## One frame (§5.3–5.4)
//!
//! With substeps of length h (Macklin et al. 2019), each particle keeps x⁰, its position at
//! the start of the substep (with its inverse mass w in the fourth lane), and d, its
//! displacement in the substep — two buffers of 16-byte `vec4` records, plus one for the
//! velocity v. Per substep, the stages of every hooke solver (`hooke::solver::stages`), from
//! the frame's `hooke::SubstepPlan` (computed on the host and uploaded):
//!
//! 1. **aerodynamics** (if the air is active, article §1.4): drag and lift per triangle,
//!    gathered per particle and limited to f/(1 + h w c) so that no step carries a particle
//!    past the wind (`hooke::forces::aerodynamics::limited_force`);
//! 2. **predict**: v ← v e^{−c h} + h(g + w f), d ← h v; pinned particles (w = 0) follow their
//!    targets;
//! 3. **solve_distance**, `iterations` × (one dispatch per colour): the XPBD update
//!    Δλ = (−C − α̃λ − γΔC)/((1+γ)Σw + α̃) with α̃ = α/h², γ = τ/h, ΔC the change of length
//!    over the substep, λ reset per substep —
//!    or, with [`GpuSolve::Jacobi`], `iterations` × one dispatch over particles (see
//!    [`GpuSolve`]); the hinges and tethers after the distance constraints in each iteration;
//!    where every body fits in one workgroup's memory, all of a substep's iterations in one
//!    dispatch, a workgroup per body ([`GpuSettings::local`], `local_sweep.wgsl`);
//! 4. particle contacts (self-collision): the spatial hash rebuilt, then one Jacobi gather;
//! 5. **collide**: projection out of planes, spheres, capsules, boxes and mesh colliders'
//!    distance grids, each at its placement of the substep (translated and turned), then
//!    clamped Coulomb friction relative to the collider's surface motion; then the cloth
//!    triangles' virtual particles (**push**, **gather** in `triangle_contact.wgsl`; where
//!    every triangle of a model of one world takes part, **push_all** there and **gather_all**
//!    in `triangle_gather.wgsl`, over the model's own triangle lists);
//! 6. **finish**: v ← d/h, x⁰ ← x⁰ + d, d ← 0 — without aerodynamics, done with the next
//!    substep's predict in one pass over the particles (so stage times count that predict
//!    under finish).
//!
//! After the last substep, **normals** (§6), **tangents** (for models with UVs) and the
//! **health** check run. A whole frame — its constants uploaded, then substeps × iterations ×
//! colours dispatches in one compute pass — is recorded into one command encoder: the
//! caller's own with [`GpuXpbdSolver::encode_frame`] (a renderer records its draw after it,
//! no CPU synchronisation), or one that [`hooke::Solver::step`] submits. Per-dispatch
//! constants (substep, colour) come from uniform slots selected by dynamic offsets. Nothing is
//! read back unless asked for — the health record every [`GpuSettings::health_interval`]
//! steps, or on a read: [`GpuXpbdSolver::position_buffer`], [`GpuXpbdSolver::normal_buffer`]
//! and [`GpuXpbdSolver::triangle_buffer`] are meant to be bound by a renderer directly. The
//! kernels are compiled once per device ([`GpuContext`] keeps them), so a second solver, a
//! material change ([`hooke::Solver::notify_model_changed`]: new parameters uploaded into
//! the same buffers) or a rebuild ([`hooke::Solver::rebuild`]: new buffers) compiles nothing.
//!
//! ## Matching the CPU
//!
//! Each kernel does the CPU's floating-point operations in the CPU's order (no `dot()` or
//! `cross()` builtins whose summation order is unspecified, no fused multiply-add written by
//! hand), and the per-substep constants (h, 1/h, 1/h², e^{−c h}, 1 − s of a pin's path,
//! collider translations) are computed once on the CPU and uploaded. Where a shader compiler
//! was seen to rewrite an expression (Mesa turns a·p + b·q with a common factor into a
//! different rounding), the products are passed through an identity it cannot see through
//! (`opaque3` in `common.wgsl`). On Mesa's lavapipe the GPU trajectories are then bit for bit
//! those of the CPU solver — with pins, collisions, friction, moving colliders and wind; on a
//! GPU whose compiler contracts a·b + c into fused multiply-adds or divides approximately they
//! differ by rounding, which the parity tests' tolerances allow for.
//!
//! ## Many scenes, many small bodies
//!
//! A model of several worlds ([`hooke::World`], issue #13) runs on the same dispatches: each
//! kernel that needs a world's gravity, wind or colliders finds the particle's world by a
//! binary search over the worlds' particle ranges (`worlds.wgsl`), and each world's positions
//! are bit for bit those of its scene alone. With [`GpuSettings::tiles`], each body's
//! constraints are swept by a workgroup of its own, every colour of a set in one dispatch
//! (`tiles.wgsl`), the colour sweep's result again bit for bit: fewer dispatches for many
//! small bodies, a slower sweep for one large one.
//!
//! ## Kernels
//!
//! One `.wgsl` file beside each `.rs` file that dispatches it; the sources are in [`shaders`].
//! No optional wgpu feature is used: fixed-point `atomic<i32>` instead of float atomics, no
//! f64, no subgroups, no push constants. (Benchmarks may open a device with
//! `TIMESTAMP_QUERY` through [`GpuContext::with_timestamps`] to time frames on the GPU with
//! [`GpuXpbdSolver::time_frames`]; the kernels do not depend on it.)
//!
//! ```no_run
//! use std::sync::Arc;
//! use hooke::{ClothGrid, Control, ModelBuilder, Solver, XpbdSettings};
//! use hooke_gpu::{GpuContext, GpuXpbdSolver};
//!
//! let mut b = ModelBuilder::new();
//! let id = b.add_cloth_grid(&ClothGrid::new("cloth", 16, 16, 0.05)).unwrap();
//! let model = Arc::new(b.finalize().unwrap());
//! let mut control = Control::new();
//! control.pin(model.bodies()[id.0].grid_index(0, 0).unwrap());
//! let ctx = GpuContext::new().expect("a GPU or lavapipe");
//! let mut solver = GpuXpbdSolver::new(ctx, model, XpbdSettings::default()).unwrap();
//! for _ in 0..60 {
//!     solver.step(&control, 1.0 / 60.0).unwrap();
//! }
//! let mut x = Vec::new();
//! solver.read_positions(&mut x);
//! ```
#![warn(missing_docs)]

mod aerodynamics;
mod buffers;
pub mod chebyshev;
mod collide;
mod contact_lists;
mod context;
mod dihedral;
mod distance;
mod finish;
pub mod global_cloth;
mod health;
mod jacobi;
mod kernel;
mod local_sweep;
mod normals;
mod patch;
mod predict;
mod raycast;
mod readback;
mod rope_bending;
mod rope_solver;
mod self_collision;
mod set_sweep;
pub mod shaders;
mod solver;
mod spatial_hash;
mod tangents;
mod tethers;
mod timing;
mod triangle_contact;
mod worlds;

pub use contact_lists::{AUTO_MEMBERS, LIST_CAPACITY};
pub use context::{GpuContext, GpuError};
pub use local_sweep::{LOCAL_MANY_BODIES, LOCAL_SMALL_BODY};
pub use self_collision::ALL_PAIRS_MEMBERS;
pub use solver::{
    ContactSearch, GpuSettings, GpuSolve, GpuXpbdSolver, LocalSweepMode, applies_tension_limit, iterates_to_tolerance,
};
