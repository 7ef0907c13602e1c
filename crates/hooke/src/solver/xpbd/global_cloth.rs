//! The global cloth solve: every distance constraint of a cloth — its structural, shear and
//! bend springs — solved together, each iteration, by conjugate gradients on XPBD's linearised
//! system, instead of one constraint at a time by Gauss–Seidel.
//!
//! # Why
//!
//! Gauss–Seidel carries a correction one constraint per sweep. A sheet held stretched by its
//! pins (pulled apart until it tears, or hung from a row under a heavy load) must rebuild the
//! multipliers λ of its whole width from zero in every substep, since XPBD resets λ at each
//! substep: at a few sweeps per substep it cannot, and the constraints keep a residual
//! r = C + α̃λ that is a fixed fraction of the strain — `scenes/tear_pull.toml` keeps 23 %
//! residual strain at 20 substeps × 8 sweeps, and more substeps lower it only in proportion to
//! the cost (issue #9). Solving the constraints together carries the tension across the sheet
//! in one iteration.
//!
//! # The system
//!
//! The same as the direct rope solver's ([`super::direct_rope`]): for the m distance constraints
//! C_k of a cloth, with gradients ∇C_k (taken at the start of the substep unless the constraint
//! turned by more than 25°, the rule of the shared update in [`super::projection`]), inverse
//! masses W, α̃_k = α_k/h² and γ_k = τ_k/h, one linearised XPBD step for all of them at once is
//!
//! (J W Jᵀ + D) Δλ = b,  D_k = α̃_k/(1 + γ_k),  b_k = (−C_k − α̃_k λ_k − γ_k ∇C_k·d)/(1 + γ_k)
//!
//! (Macklin, Müller & Chentanez 2016, "XPBD", eq. 11–12, whose Gauss–Seidel form takes only
//! the diagonal of J W Jᵀ), then λ += Δλ and d += W Jᵀ Δλ. A single constraint gives exactly the
//! shared update. (PBD would solve J W Jᵀ Δλ = −s C, which is singular for a cloth: the solver
//! refuses it, see the safeguards; the code keeps the PBD form for completeness.)
//!
//! # The solve
//!
//! The matrix of a cloth couples every pair of constraints that share a particle: it is sparse
//! but not banded, so instead of the rope's factorisation it is solved by Jacobi-preconditioned
//! conjugate gradients (Hestenes & Stiefel 1952; the preconditioner is the diagonal
//! D_k + Σ_p w_p ‖∇_pC_k‖², the denominator of the Gauss–Seidel update). The matrix is never
//! formed: a product (J W Jᵀ + D) u is D u + J (W (Jᵀ u)), one pass over the particles (each
//! summing its rows' gradients, `touch`) and one over the rows. The vectors and sums are in
//! `f64`, in a fixed order, so the result does not depend on threads.
//!
//! The solve stops when every row's equation holds to [`REDUCTION`] of the largest residual
//! strain it started from (or to [`STRAIN_FLOOR`]) — the residual of equation k,
//! (b − A Δλ)_k·(1 + γ_k), is the linearised C_k + α̃_k λ_k + γ_k ∇C_k·d that the step leaves,
//! the monitor's residual strain times L_k — or after [`MAX_ITERATIONS`]. The bound is relative
//! because what the solve leaves becomes velocity, Δx/h: a fixed bound of 0.1 % strain kept a
//! hanging sheet jittering at 3 cm/s, where a relative one lets it come to rest. Conjugate gradients need about √κ iterations for a condition number κ,
//! which grows with the square of the cloth's width in particles when the cloth is stiff
//! (α̃ ≪ w): tens for a 24 × 24 sheet, hundreds for 256². It is meant for small and medium
//! cloths held stretched; large soft cloths are cheaper with Gauss–Seidel and tethers.
//!
//! Each cloth body is its own system, solved on its own thread (rayon): one body's iteration
//! count never depends on another's (worlds stay independent). A row whose particles are all
//! pinned, or whose gradient vanishes, is left out (Δλ = 0). CPU only: the GPU solver refuses
//! the setting.
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
//! - **Fast turning.** Where constraints turn fast within a substep (a tear's recoil), the
//!   linearised step can leave the largest residual strain larger than it found it. The body's
//!   rows then get one Gauss–Seidel sweep after the step, whose projections are exact for each
//!   constraint (the step undone first if it more than doubled that residual, or left a NaN),
//!   and another step from there, up to [`MAX_STEPS`] steps.
//! - **What it refuses.** The system needs compliance: a grid has more distance constraints than
//!   free degrees of freedom (both shear diagonals), so with D = 0 — PBD, or a rigid material —
//!   J W Jᵀ is singular and b is not in its range, and conjugate gradients diverge.
//!   [`XpbdSolver::new`](super::XpbdSolver::new) refuses the global solve for PBD and for a
//!   cloth with a rigid (infinite-stiffness) distance constraint, and for a model of several
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
use crate::model::DistanceConstraint;
use crate::solver::state::Particle;
use crate::{BodyKind, Model};
use glam::DVec3;
use rayon::prelude::*;

/// The conjugate-gradient solve stops once the largest residual strain of its rows (a row's
/// residual over its rest length) is this fraction of the largest it started from.
pub const REDUCTION: f64 = 1e-2;

/// ... or once it is below this strain, whatever it started from.
pub const STRAIN_FLOOR: f64 = 1e-7;

/// The most linearised steps of one solve: a step that leaves some constraint further from
/// its equation than it found it is followed by a Gauss–Seidel sweep and, up to this count,
/// by another step from there.
pub const MAX_STEPS: u32 = 3;

/// The most conjugate-gradient iterations of one step.
pub const MAX_ITERATIONS: u32 = 2000;

/// One cloth body's system: its rows (distance-set indices) and, for each of its particles, the
/// rows that touch it with the particle's end (0 = i, 1 = j).
#[derive(Clone, Debug, Default)]
struct System {
    rows: Vec<u32>,
    first_particle: u32,
    /// CSR over the body's particles: `touch[offsets[p]..offsets[p + 1]]`.
    offsets: Vec<u32>,
    touch: Vec<(u32, u8)>,
    /// Each row's particles, local to the body (i, j).
    ends: Vec<(u32, u32)>,
    /// Scratch: the gradient ∇_iC of each row (∇_jC = −∇_iC), the diagonal term D_k, the
    /// inverse of the preconditioner, and the vectors of the solve.
    grad: Vec<DVec3>,
    damp: Vec<f64>,
    /// (1 + γ_k)/L_k: a row's residual to its residual strain (0 for a row left out).
    inv_norm: Vec<f64>,
    inv_diag: Vec<f64>,
    /// w_p ∇_pC of each `touch` entry.
    weighted: Vec<DVec3>,
    x: Vec<f64>,
    r: Vec<f64>,
    z: Vec<f64>,
    p: Vec<f64>,
    q: Vec<f64>,
    /// λ of each row, copied in before a solve and out after it.
    lam: Vec<f32>,
    /// W Jᵀ u per particle.
    v: Vec<DVec3>,
    /// The largest T(wᵢ + wⱼ)/L (1/s²) of a row in tension since the last take.
    peak: f32,
    /// The body's displacements before the last step was applied.
    saved: Vec<glam::Vec4>,
}

/// Why the global solve cannot run `model` under `method`, if it cannot: PBD, a cloth with a
/// rigid distance constraint (zero compliance on either side), or several worlds. See the
/// safeguards in the [module documentation](self).
pub fn refusal(model: &Model, method: super::Method) -> Option<String> {
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
    None
}

/// The global solve of every cloth of a model. See the [module documentation](self).
#[derive(Clone, Debug, Default)]
pub struct ClothSystems {
    systems: Vec<System>,
}

impl ClothSystems {
    /// One system per cloth body of `model` with at least one distance constraint, of its
    /// constraints in the colours not swept by Gauss–Seidel (`swept`, one per colour of the
    /// distance set).
    pub fn new(model: &Model, swept: &[bool]) -> ClothSystems {
        let set = model.distance();
        let mut global = vec![false; set.len()];
        for (r, &s) in set.colour_ranges().iter().zip(swept) {
            if !s {
                global[r.start as usize..r.end as usize].iter_mut().for_each(|g| *g = true);
            }
        }
        let mut systems = Vec::new();
        for body in model.bodies().iter().filter(|b| b.kind != BodyKind::Rope) {
            let range = body.particles.clone();
            let mut rows: Vec<u32> = Vec::new();
            for p in range.clone() {
                for &k in set.particle_constraints(p as usize) {
                    let c = set.constraints()[k as usize];
                    if c.i.min(c.j) == p && global[k as usize] {
                        rows.push(k);
                    }
                }
            }
            rows.sort_unstable();
            if rows.is_empty() {
                continue;
            }
            let n = range.len();
            let mut offsets = vec![0u32; n + 1];
            for &k in &rows {
                let c = set.constraints()[k as usize];
                offsets[(c.i - range.start) as usize + 1] += 1;
                offsets[(c.j - range.start) as usize + 1] += 1;
            }
            for p in 0..n {
                offsets[p + 1] += offsets[p];
            }
            let mut fill = offsets.clone();
            let mut touch = vec![(0u32, 0u8); offsets[n] as usize];
            for (r, &k) in rows.iter().enumerate() {
                let c = set.constraints()[k as usize];
                for (slot, q) in [c.i, c.j].into_iter().enumerate() {
                    let local = (q - range.start) as usize;
                    touch[fill[local] as usize] = (r as u32, slot as u8);
                    fill[local] += 1;
                }
            }
            let m = rows.len();
            let ends = rows
                .iter()
                .map(|&k| {
                    let c = set.constraints()[k as usize];
                    (c.i - range.start, c.j - range.start)
                })
                .collect();
            systems.push(System {
                rows,
                first_particle: range.start,
                offsets,
                weighted: vec![DVec3::ZERO; touch.len()],
                touch,
                ends,
                grad: vec![DVec3::ZERO; m],
                damp: vec![0.0; m],
                inv_norm: vec![0.0; m],
                inv_diag: vec![0.0; m],
                x: vec![0.0; m],
                r: vec![0.0; m],
                z: vec![0.0; m],
                p: vec![0.0; m],
                q: vec![0.0; m],
                lam: vec![0.0; m],
                v: vec![DVec3::ZERO; n],
                saved: vec![glam::Vec4::ZERO; n],
                peak: 0.0,
            });
        }
        ClothSystems { systems }
    }

    /// Whether the model has no cloth with distance constraints.
    pub fn is_empty(&self) -> bool {
        self.systems.is_empty()
    }

    /// The largest T(wᵢ + wⱼ)/L (1/s²) of a cloth's constraint in tension, T = −λ/h² (N), at
    /// the end of any solve since the last call (0 if none); resets it. For the tension limit
    /// ([`super::stability`]): one linearised solve per iteration leaves the geometric
    /// stiffness out, as the direct rope solver's does.
    pub(crate) fn take_peak(&mut self) -> f32 {
        self.systems.iter_mut().map(|s| std::mem::take(&mut s.peak)).fold(0.0, f32::max)
    }

    /// One global solve of every cloth: λ of the distance set (`lambda`) and the displacements
    /// updated. `sweep` as for the Gauss–Seidel sweeps; `pbd` for PBD mode; `parallel` solves
    /// the bodies on the rayon pool (the same result).
    pub(crate) fn solve(
        &mut self,
        model: &Model,
        particles: &mut [Particle],
        lambda: &mut [f32],
        sweep: Sweep,
        pbd: bool,
        parallel: bool,
    ) {
        let constraints = model.distance().constraints();
        for s in &mut self.systems {
            for (l, &k) in s.lam.iter_mut().zip(&s.rows) {
                *l = lambda[k as usize];
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
                for (l, &k) in s.lam.iter().zip(&s.rows) {
                    lambda[k as usize] = *l;
                }
            }
        }
    }
}

/// The larger of two values, NaN if either is (`f64::max` would drop a NaN).
fn nan_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() { f64::NAN } else { a.max(b) }
}

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
            let (i, j) = self.ends[r];
            *q = self.damp[r] * self.p[r] + self.grad[r].dot(self.v[i as usize] - self.v[j as usize]);
        }
    }

    /// The largest |r_k|·(1 + γ_k)/L_k over the rows: the linearised residual strain the step
    /// leaves.
    fn residual_strain(&self) -> f64 {
        self.r.iter().zip(&self.inv_norm).map(|(r, n)| r.abs() * n).fold(0.0, nan_max)
    }

    /// Fills the rows' gradients, D_k, b_k (into r, since Δλ starts at 0) and the
    /// preconditioner at the current displacements and λ; returns the largest residual strain
    /// |C_k + α̃_k λ_k + γ_k ∇C_k·d|/L_k, the nonlinear one.
    fn setup_rows(
        &mut self,
        constraints: &[DistanceConstraint],
        particles: &[Particle],
        sweep: Sweep,
        pbd: bool,
    ) -> f64 {
        let first = self.first_particle;
        for (r, &k) in self.rows.iter().enumerate() {
            // The constraint on the body's own particles.
            let c = constraints[k as usize];
            let c = DistanceConstraint { i: c.i - first, j: c.j - first, ..c };
            let lam = self.lam[r];
            let (wi, wj) = (particles[c.i as usize].x.w, particles[c.j as usize].x.w);
            let eval = if wi + wj == 0.0 { None } else { evaluate::<_, 2>(&c, particles, lam) };
            let Some((value, grad, alpha, tau)) = eval else {
                self.grad[r] = DVec3::ZERO;
                self.damp[r] = 0.0;
                self.inv_norm[r] = 0.0;
                self.r[r] = 0.0;
                self.inv_diag[r] = 0.0;
                continue;
            };
            let (damp, rhs, scale) = if pbd {
                (0.0, -(sweep.pbd_stiffness * value) as f64, 1.0)
            } else {
                let alpha = alpha * sweep.inv_h2;
                let gamma = if alpha > 0.0 { tau * sweep.inv_h } else { 0.0 };
                let d = (particles[c.i as usize].d - particles[c.j as usize].d).truncate();
                let rate = grad[0].dot(d);
                let scale = 1.0 / (1.0 + gamma as f64);
                (alpha as f64 * scale, (-value - alpha * lam - gamma * rate) as f64 * scale, scale)
            };
            let g = grad[0].as_dvec3();
            let diag = damp + (wi as f64 + wj as f64) * g.length_squared();
            if diag > 1e-30 {
                self.grad[r] = g;
                self.damp[r] = damp;
                self.inv_norm[r] = 1.0 / (scale * c.rest_length as f64);
                self.r[r] = rhs;
                self.inv_diag[r] = 1.0 / diag;
            } else {
                self.grad[r] = DVec3::ZERO;
                self.damp[r] = 0.0;
                self.inv_norm[r] = 0.0;
                self.r[r] = 0.0;
                self.inv_diag[r] = 0.0;
            }
        }
        self.residual_strain()
    }

    /// One solve: up to [`MAX_STEPS`] linearised steps, each after the previous one was
    /// followed by a Gauss–Seidel sweep (see [`System::step`]).
    fn solve(&mut self, constraints: &[DistanceConstraint], particles: &mut [Particle], sweep: Sweep, pbd: bool) {
        for _ in 0..MAX_STEPS {
            if !self.step(constraints, particles, sweep, pbd) {
                break;
            }
        }
    }

    /// One linearised step; `true` if it left some constraint further from its equation than
    /// it found it (and a Gauss–Seidel sweep followed).
    fn step(
        &mut self,
        constraints: &[DistanceConstraint],
        particles: &mut [Particle],
        sweep: Sweep,
        pbd: bool,
    ) -> bool {
        let start = self.setup_rows(constraints, particles, sweep, pbd);
        let tol = (REDUCTION * start).max(STRAIN_FLOOR);
        // Each particle's rows' gradients, signed and weighted by its w: v = W Jᵀ u is then a
        // plain sum.
        for (k, q) in particles.iter().enumerate().take(self.v.len()) {
            let w = q.x.w as f64;
            let range = self.offsets[k] as usize..self.offsets[k + 1] as usize;
            for (&(r, slot), g) in self.touch[range.clone()].iter().zip(&mut self.weighted[range]) {
                let gr = self.grad[r as usize] * w;
                *g = if slot == 0 { gr } else { -gr };
            }
        }
        // Preconditioned conjugate gradients from Δλ = 0.
        self.x.iter_mut().for_each(|x| *x = 0.0);
        let mut iterations = 0;
        if start > tol {
            for ((z, r), d) in self.z.iter_mut().zip(&self.r).zip(&self.inv_diag) {
                *z = r * d;
            }
            self.p.copy_from_slice(&self.z);
            let mut rz: f64 = self.r.iter().zip(&self.z).map(|(r, z)| r * z).sum();
            while iterations < MAX_ITERATIONS {
                iterations += 1;
                self.product();
                let pq: f64 = self.p.iter().zip(&self.q).map(|(p, q)| p * q).sum();
                if pq.is_nan() || pq <= 0.0 || !(rz / pq).is_finite() {
                    break;
                }
                let a = rz / pq;
                // x += a p, r −= a q; the residual's largest strain; z = P⁻¹ r and r·z.
                let (mut worst, mut rz_next) = (0.0f64, 0.0f64);
                for k in 0..self.x.len() {
                    self.x[k] += a * self.p[k];
                    let r = self.r[k] - a * self.q[k];
                    self.r[k] = r;
                    worst = nan_max(worst, r.abs() * self.inv_norm[k]);
                    let z = r * self.inv_diag[k];
                    self.z[k] = z;
                    rz_next += r * z;
                }
                if worst <= tol {
                    break;
                }
                let beta = rz_next / rz;
                rz = rz_next;
                for (p, z) in self.p.iter_mut().zip(&self.z) {
                    *p = z + beta * *p;
                }
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
        // The tension limit's rate (see `stability`): the largest T(wᵢ + wⱼ)/L of a row in
        // tension, T = −λ/h².
        if !pbd {
            for ((&l, &(i, j)), &k) in self.lam.iter().zip(&self.ends).zip(&self.rows) {
                if l < 0.0 {
                    let w = particles[i as usize].x.w + particles[j as usize].x.w;
                    let rate = -l * sweep.inv_h2 * w / constraints[k as usize].rest_length;
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
        // the colour sweep's order (rows are in constraint order, which is colour order).
        if iterations > 0 {
            let after = self.setup_rows(constraints, particles, sweep, pbd);
            // (NaN counts as worse.)
            if after.is_nan() || after > start {
                // A step that made things much worse (or not finite) is undone first.
                if after.is_nan() || after > 2.0 * start {
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
                    let c = constraints[k as usize];
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
                return true;
            }
        }
        false
    }
}
