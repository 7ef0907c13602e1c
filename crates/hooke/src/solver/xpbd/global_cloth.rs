//! The global cloth solve: every distance constraint of a cloth — its structural, shear and
//! bend springs — and, under `cloth_solver = "global-hinges"`
//! ([`ClothSolver::GlobalWithHinges`](super::ClothSolver::GlobalWithHinges)), its hinges
//! (dihedral bending) solved together, each iteration, on XPBD's linearised system, instead of
//! one constraint at a time by Gauss–Seidel.
//!
//! # Why
//!
//! Gauss–Seidel carries a correction one constraint per sweep. A sheet held stretched by its
//! pins (pulled apart until it tears, or hung from a row under a heavy load) must rebuild the
//! multipliers λ of its whole width from zero in every substep, since XPBD resets λ at each
//! substep: at a few sweeps per substep it cannot, and the constraints keep a residual
//! r = C + α̃λ that is a fixed fraction of the strain — `scenes/tear_pull.toml` keeps 23 %
//! residual strain at 20 substeps × 8 sweeps, and more substeps lower it only in proportion to
//! the cost (issue #9). Bending is worse: a stiff strip clamped at one end (a cantilever) must
//! carry its bending moment from the tip to the clamp through a chain of hinges, and the
//! budget that Gauss–Seidel needs to reach its equilibrium grows with about n⁴ for n segments
//! (at 20 × 1 a 16-, 32- and 64-segment strip droop 0.24, 0.37 and 0.40 m where the
//! equilibrium is 16–17 mm). Solving the constraints together carries the tension and the
//! moment across the cloth in one iteration: with its hinges in the system the cantilever
//! droops 17.3, 16.3 and 15.8 mm at 20 × 2, implicit Euler's 17.2, 16.3 and 15.8 (test
//! `global_xpbd_cantilevered_strip_droops_the_same_at_every_resolution`). The hinges stay out
//! of the system unless asked for: where they turn fast (a torn flap's recoil in
//! `scenes/tear_pull.toml`) their linearisation is poor, and that scene reached 4.9 % residual
//! strain with them in it against 2.2 % without.
//!
//! # The system
//!
//! The same as the direct rope solver's ([`super::direct_rope`]): for the m distance constraints
//! C_k of a cloth, with gradients ∇C_k (taken at the start of the substep unless the constraint
//! turned by more than 25°, the rule of the shared update in [`super::projection`]), inverse
//! masses W, α̃_k = α_k/h² and γ_k = τ_k/h, one linearised XPBD step for all of them at once is
//!
//! (J W Jᵀ + D) Δλ = b,  D_k = α̃_k/(1 + γ_k),  b_k = (−C_k − α̃_k λ_k − γ_k ΔC_k)/(1 + γ_k)
//!
//! (Macklin, Müller & Chentanez 2016, "XPBD", eq. 11–12, whose Gauss–Seidel form takes only
//! the diagonal of J W Jᵀ), then λ += Δλ and d += W Jᵀ Δλ, with ΔC_k the damping's rate (a
//! distance's change of length over the substep, a hinge's ∇C_k·d;
//! [`ParticleConstraint::damping_rate`]). A single constraint gives exactly the shared update. (PBD would solve J W Jᵀ Δλ = −s C, which is singular for a cloth: the solver
//! refuses it, see the safeguards; the code keeps the PBD form for completeness.)
//!
//! # The solve
//!
//! The matrix of a cloth couples every pair of constraints that share a particle: it is sparse
//! but not banded. A hinge is a row like a distance constraint, with four particles' gradients
//! (Bridson et al. 2003) instead of two, its residual an angle (rad) instead of a length.
//!
//! - **Conjugate gradients**, first: Jacobi-preconditioned (Hestenes & Stiefel 1952; the preconditioner is the diagonal
//!   D_k + Σ_p w_p ‖∇_pC_k‖², the denominator of the Gauss–Seidel update), matrix-free: a
//!   product (J W Jᵀ + D) u is D u + J (W (Jᵀ u)), one pass over the particles (each summing its
//!   rows' gradients, `touch`) and one over the rows. It stops when every distance row's
//!   equation holds to [`REDUCTION`] of the largest residual strain it started from (or to
//!   [`STRAIN_FLOOR`]) and every hinge's to the same fraction of the largest residual angle —
//!   the residual of equation k, (b − A Δλ)_k·(1 + γ_k), is the linearised
//!   C_k + α̃_k λ_k + γ_k ΔC_k that the step leaves, the monitor's residual strain times L_k —
//!   or after [`MAX_ITERATIONS`]. The bound is relative because what the solve leaves becomes
//!   velocity, Δx/h: a fixed bound of 0.1 % strain kept a hanging sheet jittering at 3 cm/s,
//!   where a relative one lets it come to rest. Conjugate gradients need about √κ iterations
//!   for a condition number κ, which grows with the square of the cloth's width in particles
//!   when the cloth is stiff (α̃ ≪ w), and with its fourth power for the hinges (bending
//!   couples rows over a strip's whole length: a fourth-order operator).
//! - **Direct**, where conjugate gradients have not converged by the iteration count that costs
//!   as much as a factorisation (about nnz(L)²/m flops against a product's; a cloth of at most
//!   [`DIRECT_ROWS`] rows): the lower triangle of J W Jᵀ + D is assembled in compressed
//!   columns — its pattern, every pair of rows that share a particle, and its symbolic
//!   factorisation (an approximate-minimum-degree ordering, supernodal) made once with the
//!   system — and the step's values are factorised (sparse Cholesky, faer, sequential) and
//!   solved, exactly; the next [`DIRECT_SPELL`] steps go straight to it. The 64-segment
//!   cantilever took thousands of conjugate-gradient iterations per step; `tear_pull`'s sheet
//!   (3 703 rows; its factor has 487 000 entries, about 800 iterations' worth) took 60–100.
//!
//! Both work in `f64`, in a fixed order, so the result does not depend on threads. Two
//! iterations per substep are advised: the exact step at one iteration let the 64-segment
//! cantilever grow a swing until it buckled (at 20 × 1, and at 10 × 2), which 20 × 2 did not.
//! The cost grows with the fill of the factor: the 16-, 32- and 64-segment cantilevers
//! (21 × 3, 41 × 5 and 81 × 9 particles) took 1.2, 7.6 and 48.6 s for 150 frames at 20 × 2 on
//! the 2-core development machine, factorised at every step — about 0.2, 1.3 and 8 ms per
//! step, nearly all of it the factorisation.
//!
//! Each cloth body is its own system, solved on its own thread (rayon): one body's iteration
//! count never depends on another's (worlds stay independent). A row whose particles are all
//! pinned, or whose gradient vanishes, is left out (Δλ = 0). The GPU solver (`hooke-gpu`'s
//! `global_cloth`) solves the same step in the particles' unknowns, (M + Jᵀ D⁻¹ J) Δx =
//! Jᵀ D⁻¹ b, by a banded `f32` factorisation per cloth, for cloths narrow enough (strips,
//! ribbons).
//!
//! # Safeguards
//!
//! - **Tension.** Like the direct rope solver's, one linearised solve leaves the geometric
//!   stiffness T/L of a constraint under tension T out of the system, and the zigzag of
//!   particles across stretched constraints is then unstable once h·√(T(wᵢ + wⱼ)/L) passes
//!   √2. The solve reports the largest T(wᵢ + wⱼ)/L, and XPBD's tension limit
//!   ([`super::stability`]) raises the frame's substeps as it does for ropes. Without it,
//!   `scenes/tear_pull.toml` held at 20 % strain (h·√(T(wᵢ + wⱼ)/L) ≈ 5 at 20 substeps) blew up
//!   as soon as its first tear shook the sheet.
//! - **Turning.** Each row's gradient is taken along its pair's direction at the start of the
//!   substep (the shared update's rule, [`super::projection`]), and the one linear solve per
//!   iteration is linearised there: a pair that turns by φ within the substep is solved along
//!   a direction φ off its own. (Its damping term's rate is the change of its length, which a
//!   turn does not change; with the linearised rate ∇C·Δx, which reads a turn as an approach
//!   of |r|(1 − cos φ), a torn flap of `tear_pull` whipping at 30–40 m/s kept 2–4 % residual
//!   strain whatever the iterations.) The solve also reports the largest
//!   sin²φ/(h·[`TURN_MARGIN`])², the turn limit's rate, and the tension limit
//!   ([`super::stability`]) raises the substeps so that no pair turns by more than
//!   sin φ = [`TURN_MARGIN`] = 0.1 (about 6°) a substep: `tear_pull` keeps 0.03 % residual
//!   with it, 0.21 % without (in about the same time, 31.5 and 33.5 s: fewer substeps, more
//!   frames taken again).
//! - **Fast turning.** Where constraints turn fast within a substep (a tear's recoil), the
//!   linearised step can leave the largest residual strain (or angle) larger than it found it.
//!   The body's rows then get one Gauss–Seidel sweep after the step, whose projections are
//!   exact for each constraint (the step undone first if it more than doubled that residual,
//!   or left a NaN), and another step from there, up to [`MAX_STEPS`] steps. Residuals are
//!   floored at [`ROUNDING`] (1e-4) for this comparison: a rise below it is the f32 positions'
//!   rounding, not the step's doing.
//! - **What it refuses.** The system needs compliance: a grid has more distance constraints than
//!   free degrees of freedom (both shear diagonals), so with D = 0 — PBD, or a rigid material —
//!   J W Jᵀ is singular and b is not in its range, and conjugate gradients diverge.
//!   [`XpbdSolver::new`](super::XpbdSolver::new) refuses the global solve for PBD and for a
//!   cloth with a rigid (infinite-stiffness) distance constraint or hinge, and for a model of several
//!   worlds (whose shared substep count the tension limit does not raise). A very stiff finite
//!   material converges slowly (the condition number grows with w/α̃ = k·h²/m as well as with the
//!   cloth's width); a step that does not converge within [`MAX_ITERATIONS`] is caught by the
//!   rule above.
//! - **Two compliances.** A cloth's constraints are softer in compression than in stretch: a
//!   row takes the compliance of the side λ is on (or C, while λ = 0), which the step can
//!   cross. A second iteration per substep takes the side the first found; `tear_pull` after
//!   its tear keeps 2–10 % residual strain at one iteration and under 2 % at two.

use super::direct_rope::evaluate;
use super::distance_kernel::Sweep;
use super::stability::TURN_MARGIN;
use crate::model::{DihedralBending, DistanceConstraint, ParticleConstraint};
use crate::solver::state::Particle;
use crate::{BodyKind, Model};
use faer::dyn_stack::{MemBuffer, MemStack, StackReq};
use faer::sparse::linalg::SupernodalThreshold;
use faer::sparse::linalg::cholesky::{
    CholeskySymbolicParams, SymbolicCholesky, SymmetricOrdering, factorize_symbolic_cholesky,
};
use faer::sparse::{SparseColMatRef, SymbolicSparseColMat};
use faer::{Conj, Par, Side};
use glam::DVec3;
use rayon::prelude::*;
use std::sync::Arc;

/// The conjugate-gradient solve stops once the largest residual strain of its distance rows
/// (a row's residual over its rest length) is this fraction of the largest it started from,
/// and the largest residual angle of its hinges likewise.
pub const REDUCTION: f64 = 1e-2;

/// ... or once it is below this strain (and, for the hinges, this angle in radians), whatever
/// it started from.
pub const STRAIN_FLOOR: f64 = 1e-7;

/// A residual strain (or angle, rad) below which a step that leaves some constraint further
/// from its equation than it found it is not taken for a failed step: f32 positions round
/// a particle 1 m from the origin to 0.12 µm, 1e-5 of a 1 cm segment.
pub const ROUNDING: f64 = 1e-4;

/// The most linearised steps of one solve: a step that leaves some constraint further from
/// its equation than it found it is followed by a Gauss–Seidel sweep and, up to this count,
/// by another step from there.
pub const MAX_STEPS: u32 = 3;

/// The most conjugate-gradient iterations of one step.
pub const MAX_ITERATIONS: u32 = 2000;

/// The most rows (distance constraints and hinges) of a cloth that may be solved by a sparse
/// Cholesky factorisation; a larger cloth's system is solved by conjugate gradients alone.
pub const DIRECT_ROWS: usize = 20_000;

/// The steps solved by the factorisation, without conjugate gradients, after conjugate
/// gradients did not converge within the iterations that cost as much.
pub const DIRECT_SPELL: u32 = 16;

/// The largest residuals of a system's rows: the distance rows' strain and the hinges' angle
/// (rad), each NaN if any of its rows is.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Worst {
    strain: f64,
    angle: f64,
}

impl Worst {
    /// Whether either residual is above the other's, or not a number.
    fn exceeds(self, other: Worst) -> bool {
        !(self.strain <= other.strain && self.angle <= other.angle)
    }

    /// The tolerance of a solve that starts from these residuals.
    fn tolerance(self) -> Worst {
        Worst { strain: (REDUCTION * self.strain).max(STRAIN_FLOOR), angle: (REDUCTION * self.angle).max(STRAIN_FLOOR) }
    }

    /// Each residual raised to at least `floor`.
    fn at_least(self, floor: f64) -> Worst {
        Worst { strain: self.strain.max(floor), angle: self.angle.max(floor) }
    }

    /// Each residual times `factor`.
    fn scaled(self, factor: f64) -> Worst {
        Worst { strain: factor * self.strain, angle: factor * self.angle }
    }
}

/// One cloth body's system: its rows — its distance constraints, then its hinges (dihedral
/// bending) — and, for each of its particles, the rows that touch it with the slot of the
/// particle in the row.
#[derive(Clone, Debug, Default)]
struct System {
    /// The distance-set indices of the distance rows (rows 0 … rows.len() − 1).
    rows: Vec<u32>,
    /// The dihedral-set indices of the hinge rows (the rows after the distance rows).
    hinges: Vec<u32>,
    first_particle: u32,
    /// CSR over the body's particles: `touch[offsets[p]..offsets[p + 1]]`.
    offsets: Vec<u32>,
    touch: Vec<(u32, u8)>,
    /// Each row's particles, local to the body (a distance row's two, then unused slots).
    ends: Vec<[u32; 4]>,
    /// How many of `ends` each row uses (2 or 4).
    arity: Vec<u8>,
    /// Scratch: the gradients ∇_pC of each row's particles, the diagonal term D_k, the
    /// inverse of the preconditioner, and the vectors of the solve.
    grad: Vec<[DVec3; 4]>,
    damp: Vec<f64>,
    /// (1 + γ_k)/L_k for a distance row, (1 + γ_k) for a hinge: a row's residual to its
    /// residual strain or angle (0 for a row left out).
    inv_norm: Vec<f64>,
    inv_diag: Vec<f64>,
    /// w_p ∇_pC of each `touch` entry.
    weighted: Vec<DVec3>,
    x: Vec<f64>,
    r: Vec<f64>,
    z: Vec<f64>,
    p: Vec<f64>,
    q: Vec<f64>,
    /// The right-hand side b of the step.
    b: Vec<f64>,
    /// λ of each row, copied in before a solve and out after it.
    lam: Vec<f32>,
    /// Steps left to solve by the factorisation without trying conjugate gradients first.
    direct_spell: u32,
    /// W Jᵀ u per particle.
    v: Vec<DVec3>,
    /// The largest T(wᵢ + wⱼ)/L (1/s²) of a row in tension, or turn limit's rate
    /// sin²φ/(h·[`TURN_MARGIN`])² of a distance row, since the last take.
    peak: f32,
    /// The body's displacements before the last step was applied.
    saved: Vec<glam::Vec4>,
    /// The matrix's sparse Cholesky factorisation, for a system of at most [`DIRECT_ROWS`]
    /// rows (conjugate gradients otherwise).
    direct: Option<Direct>,
}

/// The direct solve of a [`System`]: the lower triangle of J W Jᵀ + D in compressed columns,
/// its pattern (every pair of rows that share a particle) fixed when the system is made and
/// its symbolic factorisation (supernodal, after an approximate-minimum-degree ordering) made
/// once; each step fills the values and factorises them, sequentially (faer).
#[derive(Clone, Debug)]
struct Direct {
    pattern: Arc<SymbolicSparseColMat<u32>>,
    symbolic: Arc<SymbolicCholesky<u32>>,
    values: Vec<f64>,
    /// The factor's values.
    factor: Vec<f64>,
    /// The diagonal's value index of each row.
    diagonal: Vec<u32>,
    /// For each particle's pair of `touch` entries (a, b) with row(a) ≥ row(b), the value
    /// index of the matrix entry they add to: w_p ∇_pC_a · ∇_pC_b.
    pairs: Vec<(u32, u32, u32)>,
    /// The factorisation's and the solve's workspace (its size and alignment: faer's temporary
    /// matrices need their alignment, which a byte count alone would lose).
    scratch: StackReq,
    /// The conjugate-gradient iterations that cost about as much as one factorisation: its
    /// flops, about nnz(L)²/m for a factor of nnz(L) entries over m columns, over a matrix-free
    /// product's, about 6 per `touch` entry and 4 per row (at least 20, at most
    /// [`MAX_ITERATIONS`]).
    cg_cap: u32,
}

impl Direct {
    /// The pattern of the system of `m` rows whose particles' `touch` lists (CSR by
    /// `offsets`) are given, and its symbolic factorisation; `None` if that fails.
    fn new(m: usize, offsets: &[u32], touch: &[(u32, u8)]) -> Option<Direct> {
        let mut columns: Vec<Vec<u32>> = (0..m as u32).map(|r| vec![r]).collect();
        for p in 0..offsets.len() - 1 {
            let rows = &touch[offsets[p] as usize..offsets[p + 1] as usize];
            for &(a, _) in rows {
                for &(b, _) in rows {
                    if a > b {
                        columns[b as usize].push(a);
                    }
                }
            }
        }
        let mut col_ptr = Vec::with_capacity(m + 1);
        let mut row_idx = Vec::new();
        col_ptr.push(0u32);
        for c in &mut columns {
            c.sort_unstable();
            c.dedup();
            row_idx.extend_from_slice(c);
            col_ptr.push(row_idx.len() as u32);
        }
        let index = |row: u32, col: u32| -> u32 {
            let (start, end) = (col_ptr[col as usize] as usize, col_ptr[col as usize + 1] as usize);
            start as u32 + row_idx[start..end].binary_search(&row).expect("in the pattern") as u32
        };
        let diagonal = (0..m as u32).map(|r| index(r, r)).collect();
        let mut pairs = Vec::new();
        for p in 0..offsets.len() - 1 {
            let range = offsets[p]..offsets[p + 1];
            for ta in range.clone() {
                for tb in range.clone() {
                    let (a, b) = (touch[ta as usize].0, touch[tb as usize].0);
                    if a >= b {
                        pairs.push((ta, tb, index(a, b)));
                    }
                }
            }
        }
        let nnz = row_idx.len();
        let pattern = SymbolicSparseColMat::new_checked(m, m, col_ptr, None, row_idx);
        let params = CholeskySymbolicParams {
            supernodal_flop_ratio_threshold: SupernodalThreshold::FORCE_SUPERNODAL,
            ..Default::default()
        };
        let symbolic =
            factorize_symbolic_cholesky(pattern.as_ref(), Side::Lower, SymmetricOrdering::Amd, params).ok()?;
        let scratch = symbolic
            .factorize_numeric_llt_scratch::<f64>(Par::Seq, Default::default())
            .or(symbolic.solve_in_place_scratch::<f64>(1, Par::Seq));
        let factor_flops = (symbolic.len_val() as f64).powi(2) / m.max(1) as f64;
        let product_flops = (6 * touch.len() + 4 * m) as f64;
        let cg_cap = (factor_flops / product_flops).clamp(20.0, MAX_ITERATIONS as f64) as u32;
        Some(Direct {
            cg_cap,
            factor: vec![0.0; symbolic.len_val()],
            pattern: Arc::new(pattern),
            symbolic: Arc::new(symbolic),
            values: vec![0.0; nnz],
            diagonal,
            pairs,
            scratch,
        })
    }

    /// Solves (J W Jᵀ + D) x = b in place of `b` with the values in `values`; `false` if the
    /// matrix is not positive definite (or not finite).
    fn solve(&mut self, b: &mut [f64]) -> bool {
        let mut buffer = MemBuffer::new(self.scratch);
        let matrix = SparseColMatRef::new(self.pattern.as_ref().as_ref(), &self.values);
        let stack = MemStack::new(&mut buffer);
        let regularization = Default::default();
        let params = Default::default();
        let Ok(llt) = self.symbolic.factorize_numeric_llt(
            &mut self.factor,
            matrix,
            Side::Lower,
            regularization,
            Par::Seq,
            stack,
            params,
        ) else {
            return false;
        };
        let n = b.len();
        llt.solve_in_place_with_conj(
            Conj::No,
            faer::MatMut::from_column_major_slice_mut(b, n, 1),
            Par::Seq,
            MemStack::new(&mut buffer),
        );
        b.iter().all(|v| v.is_finite())
    }
}

/// Why the global solve that `solver` asks for (of the distance constraints, and of the hinges
/// under [`ClothSolver::GlobalWithHinges`](super::ClothSolver::GlobalWithHinges)) cannot run
/// `model` under `method`, if it cannot: PBD, a cloth with a rigid distance constraint or
/// (with the hinges) a rigid hinge (zero compliance), or several worlds; `None` for
/// Gauss–Seidel, which asks for none. See the safeguards in the
/// [module documentation](self).
pub fn refusal(model: &Model, method: super::Method, solver: super::ClothSolver) -> Option<String> {
    if !solver.is_global() {
        return None;
    }
    let hinges = solver == super::ClothSolver::GlobalWithHinges;
    if method != super::Method::Xpbd {
        return Some("the global cloth solve needs XPBD's compliance (method = xpbd); PBD's rigid constraints make its system singular".into());
    }
    if model.worlds().len() > 1 {
        return Some(format!(
            "the global cloth solve needs the tension limit on the substeps, which a model of {} worlds does not apply; run the worlds one by one, or use gauss-seidel",
            model.worlds().len()
        ));
    }
    let set = model.distance();
    for (k, c) in set.constraints().iter().enumerate() {
        let Some(b) = set.body_of(k) else { continue };
        let body = &model.bodies()[b];
        if body.kind != BodyKind::Rope && (c.compliance_stretch <= 0.0 || c.compliance_compression <= 0.0) {
            return Some(format!(
                "cloth {:?} has a rigid {} constraint (particles {}–{}: infinite stiffness), which makes the global cloth solve's system singular; give it a finite stiffness, or use gauss-seidel",
                body.name,
                set.families()[k].name(),
                c.i,
                c.j
            ));
        }
    }
    let set = model.dihedral();
    for (k, c) in set.constraints().iter().enumerate().filter(|_| hinges) {
        if c.compliance <= 0.0 {
            let name = set.body_of(k).map(|b| model.bodies()[b].name.as_str()).unwrap_or("?");
            return Some(format!(
                "cloth {name:?} has a rigid hinge (particles {}–{}: infinite bending modulus), which makes the global cloth solve's system singular; give it a finite bending_modulus, or use gauss-seidel",
                c.particles[0], c.particles[1]
            ));
        }
    }
    None
}

/// The rows of each cloth body's global system: (the body's index, its distance constraints in
/// the colours that `swept` (one flag per colour of the distance set) leaves out, in increasing
/// order, and with `with_hinges` all its hinges), for the bodies with any. The CPU's systems and
/// the GPU's (`hooke-gpu`'s `global_cloth`) are made from it.
pub fn system_rows(model: &Model, swept: &[bool], with_hinges: bool) -> Vec<(usize, Vec<u32>, Vec<u32>)> {
    let set = model.distance();
    let dihedral = model.dihedral();
    let mut global = vec![false; set.len()];
    for (r, &s) in set.colour_ranges().iter().zip(swept) {
        if !s {
            global[r.start as usize..r.end as usize].iter_mut().for_each(|g| *g = true);
        }
    }
    let mut hinges_of = vec![Vec::new(); model.bodies().len()];
    if with_hinges {
        for k in 0..dihedral.len() {
            if let Some(b) = dihedral.body_of(k) {
                hinges_of[b].push(k as u32);
            }
        }
    }
    let mut out = Vec::new();
    for (b, body) in model.bodies().iter().enumerate().filter(|(_, b)| b.kind != BodyKind::Rope) {
        let mut rows: Vec<u32> = Vec::new();
        for p in body.particles.clone() {
            for &k in set.particle_constraints(p as usize) {
                let c = set.constraints()[k as usize];
                if c.i.min(c.j) == p && global[k as usize] {
                    rows.push(k);
                }
            }
        }
        rows.sort_unstable();
        let hinges = std::mem::take(&mut hinges_of[b]);
        if !rows.is_empty() || !hinges.is_empty() {
            out.push((b, rows, hinges));
        }
    }
    out
}

/// The global solve of every cloth of a model. See the [module documentation](self).
#[derive(Clone, Debug, Default)]
pub struct ClothSystems {
    systems: Vec<System>,
}

impl ClothSystems {
    /// One system per cloth body of `model` with at least one distance constraint (or hinge,
    /// with `with_hinges`): its distance constraints in the colours not swept by Gauss–Seidel
    /// (`swept`, one per colour of the distance set) and, with `with_hinges`, all its hinges.
    pub fn new(model: &Model, swept: &[bool], with_hinges: bool) -> ClothSystems {
        let set = model.distance();
        let dihedral = model.dihedral();
        let mut systems = Vec::new();
        for (b, rows, hinges) in system_rows(model, swept, with_hinges) {
            let range = model.bodies()[b].particles.clone();
            let local = |q: u32| q - range.start;
            let mut ends: Vec<[u32; 4]> = rows
                .iter()
                .map(|&k| {
                    let c = set.constraints()[k as usize];
                    [local(c.i), local(c.j), 0, 0]
                })
                .collect();
            let mut arity = vec![2u8; rows.len()];
            for &k in &hinges {
                ends.push(dihedral.constraints()[k as usize].particles.map(local));
                arity.push(4);
            }
            let n = range.len();
            let mut offsets = vec![0u32; n + 1];
            for (e, &a) in ends.iter().zip(&arity) {
                for &q in &e[..a as usize] {
                    offsets[q as usize + 1] += 1;
                }
            }
            for p in 0..n {
                offsets[p + 1] += offsets[p];
            }
            let mut fill = offsets.clone();
            let mut touch = vec![(0u32, 0u8); offsets[n] as usize];
            for (r, (e, &a)) in ends.iter().zip(&arity).enumerate() {
                for (slot, &q) in e[..a as usize].iter().enumerate() {
                    touch[fill[q as usize] as usize] = (r as u32, slot as u8);
                    fill[q as usize] += 1;
                }
            }
            let m = ends.len();
            let direct = if m <= DIRECT_ROWS { Direct::new(m, &offsets, &touch) } else { None };
            systems.push(System {
                rows,
                hinges,
                first_particle: range.start,
                offsets,
                weighted: vec![DVec3::ZERO; touch.len()],
                touch,
                ends,
                arity,
                grad: vec![[DVec3::ZERO; 4]; m],
                damp: vec![0.0; m],
                inv_norm: vec![0.0; m],
                inv_diag: vec![0.0; m],
                x: vec![0.0; m],
                r: vec![0.0; m],
                z: vec![0.0; m],
                p: vec![0.0; m],
                q: vec![0.0; m],
                b: vec![0.0; m],
                lam: vec![0.0; m],
                direct_spell: 0,
                v: vec![DVec3::ZERO; n],
                saved: vec![glam::Vec4::ZERO; n],
                peak: 0.0,
                direct,
            });
        }
        ClothSystems { systems }
    }

    /// Whether the model has no cloth with distance constraints or hinges.
    pub fn is_empty(&self) -> bool {
        self.systems.is_empty()
    }

    /// How many hinges (dihedral bending constraints) the systems solve: all of the model's
    /// (with hinges, unless there are no systems) or none.
    pub(crate) fn hinge_count(&self) -> usize {
        self.systems.iter().map(|s| s.hinges.len()).sum()
    }

    /// Each system's count of steps left to go straight to the factorisation (the only state
    /// a solve carries to the next besides λ), to put back with [`Self::set_spells`] when a
    /// frame is taken again.
    pub(crate) fn spells(&self) -> Vec<u32> {
        self.systems.iter().map(|s| s.direct_spell).collect()
    }

    /// Puts back counts from [`Self::spells`]; an empty slice sets every count to 0, as a new
    /// solver has them (after a state is written in).
    pub(crate) fn set_spells(&mut self, spells: &[u32]) {
        for (k, s) in self.systems.iter_mut().enumerate() {
            s.direct_spell = spells.get(k).copied().unwrap_or(0);
        }
    }

    /// The largest T(wᵢ + wⱼ)/L (1/s²) of a cloth's constraint in tension, T = −λ/h² (N), or
    /// turn limit's rate sin²φ/(h·[`TURN_MARGIN`])² of its distance constraints (φ the turn of
    /// a pair within the substep), at the end of any solve since the last call (0 if none);
    /// resets it. For the tension and turn limits ([`super::stability`]): one linearised solve
    /// per iteration leaves the geometric stiffness out, as the direct rope solver's does, and
    /// takes each pair along its direction at the start of the substep.
    pub(crate) fn take_peak(&mut self) -> f32 {
        self.systems.iter_mut().map(|s| std::mem::take(&mut s.peak)).fold(0.0, f32::max)
    }

    /// One global solve of every cloth: λ of the distance set (`lambda`) and of the hinges
    /// (`lambda_dihedral`) and the displacements updated. `sweep` as for the Gauss–Seidel
    /// sweeps; `pbd` for PBD mode; `parallel` solves the bodies on the rayon pool (the same
    /// result).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn solve(
        &mut self,
        model: &Model,
        particles: &mut [Particle],
        lambda: &mut [f32],
        lambda_dihedral: &mut [f32],
        sweep: Sweep,
        pbd: bool,
        parallel: bool,
    ) {
        let constraints = (model.distance().constraints(), model.dihedral().constraints());
        for s in &mut self.systems {
            let nd = s.rows.len();
            for (l, &k) in s.lam[..nd].iter_mut().zip(&s.rows) {
                *l = lambda[k as usize];
            }
            for (l, &k) in s.lam[nd..].iter_mut().zip(&s.hinges) {
                *l = lambda_dihedral[k as usize];
            }
        }
        // Each body's own particles (bodies are disjoint ranges, in increasing order).
        let mut jobs: Vec<(&mut System, &mut [Particle])> = Vec::with_capacity(self.systems.len());
        let (mut rest, mut offset) = (particles, 0usize);
        for s in &mut self.systems {
            let (_, tail) = rest.split_at_mut(s.first_particle as usize - offset);
            let (body, tail) = tail.split_at_mut(s.v.len());
            offset = s.first_particle as usize + s.v.len();
            rest = tail;
            jobs.push((s, body));
        }
        if parallel && jobs.len() > 1 {
            jobs.into_par_iter().for_each(|(s, ps)| s.solve(constraints, ps, sweep, pbd));
        } else {
            jobs.into_iter().for_each(|(s, ps)| s.solve(constraints, ps, sweep, pbd));
        }
        if !pbd {
            for s in &self.systems {
                let nd = s.rows.len();
                for (l, &k) in s.lam[..nd].iter().zip(&s.rows) {
                    lambda[k as usize] = *l;
                }
                for (l, &k) in s.lam[nd..].iter().zip(&s.hinges) {
                    lambda_dihedral[k as usize] = *l;
                }
            }
        }
    }
}

/// The larger of two values, NaN if either is (`f64::max` would drop a NaN).
fn nan_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() { f64::NAN } else { a.max(b) }
}

/// A system's constraint sets: the distance constraints and the hinges.
type Sets<'a> = (&'a [DistanceConstraint], &'a [DihedralBending]);

impl System {
    /// q = (J W Jᵀ + D) p, with W Jᵀ p left in `v`.
    fn product(&mut self) {
        for (k, v) in self.v.iter_mut().enumerate() {
            let range = self.offsets[k] as usize..self.offsets[k + 1] as usize;
            let mut s = DVec3::ZERO;
            for (&(r, _), g) in self.touch[range.clone()].iter().zip(&self.weighted[range]) {
                s += *g * self.p[r as usize];
            }
            *v = s;
        }
        for (r, q) in self.q.iter_mut().enumerate() {
            let (e, g) = (&self.ends[r], &self.grad[r]);
            let mut s = self.damp[r] * self.p[r];
            for slot in 0..self.arity[r] as usize {
                s += g[slot].dot(self.v[e[slot] as usize]);
            }
            *q = s;
        }
    }

    /// The largest |r_k|·(1 + γ_k)/L_k over the distance rows and |r_k|·(1 + γ_k) over the
    /// hinges: the linearised residual strain and angle the step leaves.
    fn residual(&self) -> Worst {
        let nd = self.rows.len();
        let worst = |range: std::ops::Range<usize>| {
            self.r[range.clone()].iter().zip(&self.inv_norm[range]).map(|(r, n)| r.abs() * n).fold(0.0, nan_max)
        };
        Worst { strain: worst(0..nd), angle: worst(nd..self.r.len()) }
    }

    /// Fills row `r` from constraint `c` (on the body's own particles) with multiplier `lam`:
    /// its gradients, D_k, b_k (into r, since Δλ starts at 0), its norm (1/`length` of a
    /// distance row's, 1 for a hinge) and the preconditioner.
    #[allow(clippy::too_many_arguments)]
    fn fill_row<T: ParticleConstraint<N>, const N: usize>(
        &mut self,
        r: usize,
        c: &T,
        lam: f32,
        length: f64,
        particles: &[Particle],
        sweep: Sweep,
        pbd: bool,
    ) {
        let ps = c.particles();
        let w = ps.map(|q| particles[q as usize].x.w as f64);
        let eval = if w.iter().sum::<f64>() == 0.0 { None } else { evaluate::<_, N>(c, particles, lam) };
        let leave_out = |s: &mut System| {
            s.grad[r] = [DVec3::ZERO; 4];
            s.damp[r] = 0.0;
            s.inv_norm[r] = 0.0;
            s.r[r] = 0.0;
            s.inv_diag[r] = 0.0;
        };
        let Some((value, grad, alpha, tau, rate)) = eval else {
            leave_out(self);
            return;
        };
        let (damp, rhs, scale) = if pbd {
            (0.0, -(sweep.pbd_stiffness * value) as f64, 1.0)
        } else {
            let alpha = alpha * sweep.inv_h2;
            let gamma = if alpha > 0.0 { tau * sweep.inv_h } else { 0.0 };
            let scale = 1.0 / (1.0 + gamma as f64);
            (alpha as f64 * scale, (-value - alpha * lam - gamma * rate) as f64 * scale, scale)
        };
        let mut g = [DVec3::ZERO; 4];
        let mut diag = damp;
        for k in 0..N {
            g[k] = grad[k].as_dvec3();
            diag += w[k] * g[k].length_squared();
        }
        if diag > 1e-30 {
            self.grad[r] = g;
            self.damp[r] = damp;
            self.inv_norm[r] = 1.0 / (scale * length);
            self.r[r] = rhs;
            self.inv_diag[r] = 1.0 / diag;
        } else {
            leave_out(self);
        }
    }

    /// Fills every row (see [`System::fill_row`]) at the current displacements and λ; returns
    /// the largest nonlinear residuals, |C_k + α̃_k λ_k + γ_k ΔC_k|/L_k of the distance rows
    /// and |C_k + α̃_k λ_k + γ_k ΔC_k| of the hinges (ΔC_k the damping's rate,
    /// [`ParticleConstraint::damping_rate`]).
    fn setup_rows(&mut self, sets: Sets<'_>, particles: &[Particle], sweep: Sweep, pbd: bool) -> Worst {
        let first = self.first_particle;
        let nd = self.rows.len();
        for r in 0..nd {
            // The constraint on the body's own particles.
            let c = sets.0[self.rows[r] as usize];
            let c = DistanceConstraint { i: c.i - first, j: c.j - first, ..c };
            self.fill_row(r, &c, self.lam[r], c.rest_length as f64, particles, sweep, pbd);
        }
        for h in 0..self.hinges.len() {
            let c = sets.1[self.hinges[h] as usize];
            let c = c.with_particles(c.particles.map(|q| q - first));
            self.fill_row(nd + h, &c, self.lam[nd + h], 1.0, particles, sweep, pbd);
        }
        self.residual()
    }

    /// Δλ into `x` by the sparse Cholesky factorisation of J W Jᵀ + D, from the rows'
    /// gradients, `weighted`, D and `b`; `false` (and `x` untouched) without a
    /// factorisation or where it fails (a matrix not positive definite: a NaN).
    fn solve_direct(&mut self) -> bool {
        let Some(direct) = &mut self.direct else { return false };
        direct.values.iter_mut().for_each(|v| *v = 0.0);
        for (r, &d) in direct.diagonal.iter().enumerate() {
            // A row left out (no gradient) gets a 1 on its diagonal and b = 0: Δλ = 0.
            direct.values[d as usize] = if self.inv_diag[r] == 0.0 { 1.0 } else { self.damp[r] };
        }
        for &(a, b, v) in &direct.pairs {
            let (rb, slot) = self.touch[b as usize];
            direct.values[v as usize] += self.weighted[a as usize].dot(self.grad[rb as usize][slot as usize]);
        }
        self.q.copy_from_slice(&self.b);
        if !direct.solve(&mut self.q) {
            return false;
        }
        self.x.copy_from_slice(&self.q);
        true
    }

    /// One solve: up to [`MAX_STEPS`] linearised steps, each after the previous one was
    /// followed by a Gauss–Seidel sweep (see [`System::step`]).
    fn solve(&mut self, sets: Sets<'_>, particles: &mut [Particle], sweep: Sweep, pbd: bool) {
        for _ in 0..MAX_STEPS {
            if !self.step(sets, particles, sweep, pbd) {
                break;
            }
        }
        if !pbd {
            self.peak = self.peak.max(self.turn_rate(particles, sweep));
        }
    }

    /// The turn limit's rate (see [`super::stability`]): the largest sin²φ/(h·[`TURN_MARGIN`])²
    /// (1/s²) of a distance row whose pair of particles turned by φ since the start of the
    /// substep (h its length; a turn past 90° counts as sin φ = 1). Rows of two held particles,
    /// which the solve leaves out, are left out.
    fn turn_rate(&self, particles: &[Particle], sweep: Sweep) -> f32 {
        let mut most = 0.0f32;
        for e in &self.ends[..self.rows.len()] {
            let (p, q) = (&particles[e[0] as usize], &particles[e[1] as usize]);
            if p.x.w == 0.0 && q.x.w == 0.0 {
                continue;
            }
            let start = (q.x - p.x).truncate();
            let now = start + (q.d - p.d).truncate();
            let sin2 = start.cross(now).length_squared() / (start.length_squared() * now.length_squared());
            let sin2 = if start.dot(now) < 0.0 { 1.0 } else { sin2 };
            if sin2.is_finite() {
                most = most.max(sin2);
            }
        }
        most * sweep.inv_h2 / (TURN_MARGIN * TURN_MARGIN)
    }

    /// One linearised step; `true` if it left some constraint further from its equation than
    /// it found it (and a Gauss–Seidel sweep followed).
    fn step(&mut self, sets: Sets<'_>, particles: &mut [Particle], sweep: Sweep, pbd: bool) -> bool {
        let start = self.setup_rows(sets, particles, sweep, pbd);
        let tol = start.tolerance();
        // Each particle's rows' gradients weighted by its w: v = W Jᵀ u is then a plain sum.
        for (k, q) in particles.iter().enumerate().take(self.v.len()) {
            let w = q.x.w as f64;
            let range = self.offsets[k] as usize..self.offsets[k + 1] as usize;
            for (&(r, slot), g) in self.touch[range.clone()].iter().zip(&mut self.weighted[range]) {
                *g = self.grad[r as usize][slot as usize] * w;
            }
        }
        // Δλ by preconditioned conjugate gradients from Δλ = 0, or by the factorisation: during
        // a spell of it, or when conjugate gradients have not converged by the iteration count
        // that costs as much as a factorisation (see `Direct::cg_cap`).
        self.x.iter_mut().for_each(|x| *x = 0.0);
        self.b.copy_from_slice(&self.r);
        let nd = self.rows.len();
        let mut iterations = 0;
        let cap = self.direct.as_ref().map_or(MAX_ITERATIONS, |d| d.cg_cap);
        if !start.exceeds(tol) {
            // Already converged: Δλ = 0.
        } else if self.direct_spell > 0 && self.solve_direct() {
            self.direct_spell -= 1;
            iterations = 1;
        } else {
            for ((z, r), d) in self.z.iter_mut().zip(&self.r).zip(&self.inv_diag) {
                *z = r * d;
            }
            self.p.copy_from_slice(&self.z);
            let mut rz: f64 = self.r.iter().zip(&self.z).map(|(r, z)| r * z).sum();
            let mut converged = false;
            while iterations < cap {
                iterations += 1;
                self.product();
                let pq: f64 = self.p.iter().zip(&self.q).map(|(p, q)| p * q).sum();
                if pq.is_nan() || pq <= 0.0 || !(rz / pq).is_finite() {
                    break;
                }
                let a = rz / pq;
                // x += a p, r −= a q; the residual's largest strain and angle; z = P⁻¹ r and
                // r·z.
                let (mut worst, mut rz_next) = (Worst::default(), 0.0f64);
                for k in 0..self.x.len() {
                    self.x[k] += a * self.p[k];
                    let r = self.r[k] - a * self.q[k];
                    self.r[k] = r;
                    let size = r.abs() * self.inv_norm[k];
                    if k < nd {
                        worst.strain = nan_max(worst.strain, size);
                    } else {
                        worst.angle = nan_max(worst.angle, size);
                    }
                    let z = r * self.inv_diag[k];
                    self.z[k] = z;
                    rz_next += r * z;
                }
                if !worst.exceeds(tol) {
                    converged = true;
                    break;
                }
                let beta = rz_next / rz;
                rz = rz_next;
                for (p, z) in self.p.iter_mut().zip(&self.z) {
                    *p = z + beta * *p;
                }
            }
            if !converged && self.solve_direct() {
                self.direct_spell = DIRECT_SPELL;
            }
        }
        // λ += Δλ, d += W Jᵀ Δλ (the state before kept, to undo a step gone far wrong).
        for (k, q) in particles.iter().enumerate().take(self.v.len()) {
            self.saved[k] = q.d;
        }
        if !pbd {
            for (l, &x) in self.lam.iter_mut().zip(&self.x) {
                *l += x as f32;
            }
        }
        // The tension limit's rate (see `stability`): the largest T(wᵢ + wⱼ)/L of a distance
        // row in tension, T = −λ/h².
        if !pbd {
            for ((&l, e), &k) in self.lam.iter().zip(&self.ends).zip(&self.rows) {
                if l < 0.0 {
                    let w = particles[e[0] as usize].x.w + particles[e[1] as usize].x.w;
                    let rate = -l * sweep.inv_h2 * w / sets.0[k as usize].rest_length;
                    if !rate.is_nan() {
                        self.peak = self.peak.max(rate);
                    }
                }
            }
        }
        for (k, q) in particles.iter_mut().enumerate().take(self.v.len()) {
            let range = self.offsets[k] as usize..self.offsets[k + 1] as usize;
            let mut s = DVec3::ZERO;
            for (&(r, _), g) in self.touch[range.clone()].iter().zip(&self.weighted[range]) {
                s += *g * self.x[r as usize];
            }
            q.d += s.as_vec3().extend(0.0);
        }
        // The step is linearised: where the constraints turn fast (a tear's recoil), it can
        // leave some further from their equations than it found them. Then the body's rows get
        // one Gauss–Seidel sweep after it, whose projections are exact for each constraint, in
        // the colour sweep's order (rows are in constraint order, which is colour order): the
        // distance rows, then the hinges.
        if iterations > 0 {
            let after = self.setup_rows(sets, particles, sweep, pbd);
            // Residuals below `ROUNDING` are the f32 positions' rounding: a rise there is not
            // the step's doing.
            let start = start.at_least(ROUNDING);
            if after.exceeds(start) {
                // A step that made things much worse (or not finite) is undone first.
                if after.exceeds(start.scaled(2.0)) {
                    for (k, q) in particles.iter_mut().enumerate().take(self.v.len()) {
                        q.d = self.saved[k];
                    }
                    if !pbd {
                        for (l, &x) in self.lam.iter_mut().zip(&self.x) {
                            *l -= x as f32;
                        }
                    }
                }
                let first = self.first_particle;
                let ptr = particles.as_mut_ptr();
                for (r, &k) in self.rows.iter().enumerate() {
                    let c = sets.0[k as usize];
                    let c = DistanceConstraint { i: c.i - first, j: c.j - first, ..c };
                    // SAFETY: the row's particles are the body's, within `particles`.
                    unsafe {
                        if pbd {
                            super::distance_kernel::project_one::<true>(&c, &mut self.lam[r], ptr, sweep);
                        } else {
                            super::distance_kernel::project_one::<false>(&c, &mut self.lam[r], ptr, sweep);
                        }
                    }
                }
                for (h, &k) in self.hinges.iter().enumerate() {
                    let c = sets.1[k as usize];
                    let c = c.with_particles(c.particles.map(|q| q - first));
                    let lam = &mut self.lam[nd + h];
                    // SAFETY: the hinge's particles are the body's, within `particles`.
                    unsafe {
                        if pbd {
                            super::projection::project::<_, 4, true>(&c, lam, ptr, sweep);
                        } else {
                            super::projection::project::<_, 4, false>(&c, lam, ptr, sweep);
                        }
                    }
                }
                return true;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ClothGrid, ModelBuilder};
    use glam::{Vec3, Vec4};

    /// The sparse matrix the direct solve factorises is the matrix-free operator conjugate
    /// gradients apply: on a jittered 7 × 6 cloth with hinges and three pinned particles (rows
    /// of a pinned particle keep the free one's terms; the row between two pinned ones is left
    /// out, a 1 on its diagonal), the factorised solution x of
    /// (J W Jᵀ + D) x = b gives back b through the matrix-free product to 1e-9 of |b| (checked
    /// to fail with the off-diagonal entries left out, and with one particle's share of them).
    #[test]
    fn the_factorised_matrix_is_the_matrix_free_operator() {
        let mut g = ClothGrid::new("c", 7, 6, 0.05);
        g.material.bending_modulus = 1e-3;
        let mut b = ModelBuilder::new();
        b.add_cloth_grid(&g).unwrap();
        let model = b.finalize().unwrap();
        let swept = vec![false; model.distance().colour_count()];
        let mut systems = ClothSystems::new(&model, &swept, true);
        assert_eq!(systems.hinge_count(), model.dihedral().len());
        let s = &mut systems.systems[0];
        assert!(s.direct.is_some() && !s.hinges.is_empty());
        let mut seed = 17u32;
        let mut rnd = move || {
            seed = seed.wrapping_mul(1664525).wrapping_add(1013904223);
            (seed >> 8) as f32 / (1u32 << 24) as f32 - 0.5
        };
        let mut particles: Vec<Particle> = model
            .particle_position()
            .iter()
            .zip(model.particle_inv_mass())
            .enumerate()
            .map(|(k, (x, &w))| {
                // Particles 0 and 1 pinned: the row between them is left out.
                let w = if k <= 1 || k == 5 { 0.0 } else { w };
                let d = Vec3::new(rnd(), rnd(), rnd()) * 0.01;
                Particle { x: x.extend(w), d: d.extend(0.0) }
            })
            .collect();
        particles[3].d = Vec4::ZERO;
        let sweep = Sweep { inv_h: 1200.0, inv_h2: 1200.0 * 1200.0, pbd_stiffness: 1.0 };
        let sets = (model.distance().constraints(), model.dihedral().constraints());
        s.lam.iter_mut().for_each(|l| *l = rnd() * 1e-6);
        s.setup_rows(sets, &particles, sweep, false);
        for (k, q) in particles.iter().enumerate() {
            let w = q.x.w as f64;
            let range = s.offsets[k] as usize..s.offsets[k + 1] as usize;
            for (&(r, slot), g) in s.touch[range.clone()].iter().zip(&mut s.weighted[range]) {
                *g = s.grad[r as usize][slot as usize] * w;
            }
        }
        let b = s.r.clone();
        s.b.copy_from_slice(&b);
        assert!(s.solve_direct());
        s.p.copy_from_slice(&s.x);
        s.product();
        let norm = b.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let error = s.q.iter().zip(&b).fold(0.0f64, |m, (q, b)| m.max((q - b).abs()));
        assert!(norm > 0.0 && error <= 1e-9 * norm, "|Ax − b| = {error:e}, |b| = {norm:e}");
    }
}
