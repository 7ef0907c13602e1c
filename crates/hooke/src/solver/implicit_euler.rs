//! Implicit (backward) Euler for mass–spring cloth, after Baraff & Witkin 1998, "Large steps
//! in cloth simulation" (SIGGRAPH), article §2.2.
//!
//! Backward Euler evaluates the forces at the end of the step:
//!
//! Δv = h M⁻¹ f(x + Δx, v + Δv),  Δx = h (v + Δv).
//!
//! Linearising f around the current state, f(x + Δx, v + Δv) ≈ f + K Δx + D Δv with the
//! stiffness Jacobian K = ∂f/∂x (N/m) and the damping Jacobian D = ∂f/∂v (N·s/m), gives one
//! linear system per step (Baraff & Witkin eq. 6):
//!
//! (M − h D − h² K) Δv = h (f + h K v),
//!
//! with M the diagonal mass matrix (kg). hooke takes exactly one such linearised step per
//! substep (no Newton iterations), then v⁺ = v + Δv and x⁺ = x + h v⁺.
//!
//! **Assembly.** For a spring between i and j, [`Spring::jacobian`] gives the 3×3 blocks
//! Kₛ = ∂fᵢ/∂xᵢ = −k[d̂d̂ᵀ + (1 − L₀/L)(I − d̂d̂ᵀ)] and Dₛ = ∂fᵢ/∂vᵢ = −k_d d̂d̂ᵀ (in `f64`); the
//! other blocks follow by sign (∂fᵢ/∂xⱼ = −Kₛ, ∂fⱼ/∂xⱼ = Kₛ). With Bₛ = −(h Dₛ + h² Kₛ), which is
//! symmetric positive semidefinite when compression is clamped, the system matrix is
//!
//! A_pp = m_p I + Σ_{s∋p} Bₛ,  A_pq = −Σ_{s=(p,q)} Bₛ,
//!
//! symmetric positive definite, stored as a [`BlockCsr`] whose pattern (the constraint graph,
//! the pairs of particles of each cloth hinge and rope joint, plus the diagonal) is built once; each substep computes Kₛ and Bₛ per spring (in parallel
//! over springs), then refills each row and its right-hand side
//! b_p = h (f_p + m_p g) + h² Σ_{s∋p} Kₛ (v_p − v_q) by gathering over the particle's springs (in
//! parallel over rows). Under compression the transverse term of Kₛ is negative and can make A
//! indefinite; [`ForceSettings::clamp_compression`](super::ForceSettings::clamp_compression)
//! drops it (Choi & Ko 2002). The angle sets (dihedral bending, rope bending) add their
//! Gauss–Newton blocks to A and b ([`implicit_angles`](super::implicit_angles)). The aerodynamic force and the air damping enter explicitly (f
//! and v are taken after the air damping e^{−c h}); they are not differentiated, but the
//! aerodynamic force enters in its limited form f/(1 + h w c)
//! ([`limited_force`](crate::forces::aerodynamics::limited_force)), so that a light cloth in a
//! strong wind is not carried past the wind's velocity in one step.
//!
//! **Solve.** The system is solved by the [filtered conjugate gradient](super::pcg) of Baraff &
//! Witkin §5.3 with a block-Jacobi preconditioner (the inverse of each 3×3 diagonal block).
//! Pinned particles are constrained degrees of freedom: their Δv is prescribed so that they
//! reach their pin target at the end of the step, and the filter keeps the solve off them. The
//! solve starts from the previous step's Δv on the free particles (a warm start, dropped when it
//! is worse than zero). Its iterations and relative residual are reported per frame in
//! [`StepReport::linear_iterations`](super::StepReport::linear_iterations) and
//! [`StepReport::linear_residual`](super::StepReport::linear_residual) (the largest over the
//! frame's substeps).
//!
//! **Stability.** For the undamped oscillator (a = −ω²x) the step is exact backward Euler: the
//! amplitude √(x² + (v/ω)²) shrinks by 1/√(1 + (ωh)²) per step, the inverse of forward Euler's
//! growth, and the energy never increases, at any h. The price is numerical damping of every
//! mode with ωh ≳ 1, and the cost of a linear solve per step.

use super::force_based::ForceSolver;
use super::force_based::explicit_pass::{Forces, particle_chunk};
use super::implicit_angles::AngleBlocks;
use super::pcg::{self, BlockCsr, PcgReport, PcgSettings, PcgWorkspace};
use super::plan::SubstepPlan;
use super::stage_times::{StageTimes, Stopwatch};
use super::stages::{self, Stage, colliders::Velocity, predict::PinMove};
use super::state::Particle;
use super::{SolverError, StepReport};
use crate::Model;
use crate::forces::spring::Spring;
use glam::{DMat3, DVec3, Vec3, Vec4};
use rayon::prelude::*;

/// One end of a spring, as seen from a particle.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Incidence {
    /// Index of the spring (distance constraint).
    pub constraint: u32,
    /// The particle at the other end.
    pub other: u32,
}

/// Rows per parallel task of the assembly.
const ROW_CHUNK: usize = 256;
/// Below this many springs the Jacobians are computed on the calling thread.
const PARALLEL_MIN_SPRINGS: usize = 4096;

/// What one implicit step reads.
pub(crate) struct ImplicitStep<'a> {
    pub model: &'a Model,
    pub springs: &'a [Spring],
    /// Positions (m) in the records' x (their d is 0 at the start of a substep).
    pub x: &'a [Particle],
    /// Velocities (m/s), after air damping.
    pub v: &'a [Vec3],
    /// Forces without gravity (N): springs and aerodynamics.
    pub force: &'a [Vec3],
    pub pinned: &'a [bool],
    /// Step (s).
    pub h: f32,
    pub clamp_compression: bool,
    pub pcg: PcgSettings,
}

/// The system matrix, its pattern bookkeeping and the solve's vectors, kept between steps.
pub(crate) struct ImplicitScratch {
    matrix: BlockCsr,
    /// Where the angle constraints' blocks sit in `matrix`.
    angles: AngleBlocks,
    /// Particle p's springs are `incidence[offsets[p]..offsets[p + 1]]` with the model's
    /// distance-set adjacency as `offsets`, each with the particle at its other end.
    incidence: Vec<Incidence>,
    /// For each incidence (particle p, spring s): where block (p, other) sits in p's row.
    incidence_slot: Vec<u32>,
    /// Where block (p, p) sits in p's row.
    diag_slot: Vec<u32>,
    /// Kₛ = ∂fᵢ/∂xᵢ per spring (N/m).
    stiffness: Vec<DMat3>,
    /// Bₛ = −(h Dₛ + h² Kₛ) per spring (kg).
    block: Vec<DMat3>,
    inv_diag: Vec<DMat3>,
    rhs: Vec<DVec3>,
    /// Δv (m/s): on entry to [`ImplicitScratch::solve`] the prescribed values of pinned
    /// particles (and the warm start elsewhere), on exit the solution.
    pub dv: Vec<DVec3>,
    work: PcgWorkspace,
}

impl ImplicitScratch {
    /// Builds the matrix pattern from the model's constraint graph.
    pub fn new(model: &Model) -> ImplicitScratch {
        let n = model.particle_count();
        let set = model.distance();
        let springs = set.constraints().iter().map(|c| (c.i, c.j));
        let matrix = BlockCsr::from_pairs(n, springs.chain(AngleBlocks::pairs(model)));
        let angles = AngleBlocks::new(model, &matrix);
        let (incidence_offsets, list) = set.adjacency();
        let incidence: Vec<Incidence> = (0..n)
            .flat_map(|p| {
                list[incidence_offsets[p] as usize..incidence_offsets[p + 1] as usize].iter().map(move |&k| {
                    let c = set.constraints()[k as usize];
                    Incidence { constraint: k, other: if c.i == p as u32 { c.j } else { c.i } }
                })
            })
            .collect();
        let mut incidence_slot = vec![0u32; incidence.len()];
        let mut diag_slot = vec![0u32; n];
        for p in 0..n {
            // The pattern holds (p, p) and (p, other) for every spring by construction.
            diag_slot[p] = matrix.position_in_row(p, p as u32).unwrap_or(0) as u32;
            for k in incidence_offsets[p] as usize..incidence_offsets[p + 1] as usize {
                incidence_slot[k] = matrix.position_in_row(p, incidence[k].other).unwrap_or(0) as u32;
            }
        }
        let springs = set.len();
        ImplicitScratch {
            matrix,
            angles,
            incidence,
            incidence_slot,
            diag_slot,
            stiffness: vec![DMat3::ZERO; springs],
            block: vec![DMat3::ZERO; springs],
            inv_diag: vec![DMat3::IDENTITY; n],
            rhs: vec![DVec3::ZERO; n],
            dv: vec![DVec3::ZERO; n],
            work: PcgWorkspace::default(),
        }
    }

    /// Assembles and solves one step; the solution is left in [`ImplicitScratch::dv`].
    pub fn solve(&mut self, s: &ImplicitStep) -> PcgReport {
        let h = s.h as f64;
        let (x, v) = (s.x, s.v);
        let cons = s.model.distance().constraints();
        // Per spring: Kₛ and Bₛ.
        let clamp = s.clamp_compression;
        let jac = |((k, b), (c, spring)): ((&mut DMat3, &mut DMat3), (&crate::DistanceConstraint, &Spring))| {
            let j = spring.jacobian(x[c.i as usize].x.truncate() - x[c.j as usize].x.truncate(), clamp);
            *k = j.dfdx;
            *b = -(j.dfdv * h + j.dfdx * (h * h));
        };
        let items = self.stiffness.iter_mut().zip(self.block.iter_mut()).zip(cons.iter().zip(s.springs));
        if s.pcg.parallel && cons.len() >= PARALLEL_MIN_SPRINGS {
            self.stiffness
                .par_iter_mut()
                .zip(self.block.par_iter_mut())
                .zip(cons.par_iter().zip(s.springs.par_iter()))
                .with_min_len(1024)
                .for_each(jac);
        } else {
            items.for_each(jac);
        }
        // Per row: A's row, the preconditioner block and b.
        let (stiffness, block) = (&self.stiffness, &self.block);
        let (slots, diag_slot) = (&self.incidence_slot, &self.diag_slot);
        let (offsets, _) = s.model.distance().adjacency();
        let incidence = &self.incidence;
        let (mass, gravity) = (s.model.particle_mass(), s.model.gravity().as_dvec3());
        let row = |(p, (values, b)): (usize, (&mut [DMat3], &mut DVec3))| {
            let m = mass[p] as f64;
            values.iter_mut().for_each(|b| *b = DMat3::ZERO);
            let mut diag = DMat3::from_diagonal(DVec3::splat(m));
            let mut kv = DVec3::ZERO;
            let vp = v[p].as_dvec3();
            for k in offsets[p] as usize..offsets[p + 1] as usize {
                let e = incidence[k];
                let c = e.constraint as usize;
                diag += block[c];
                values[slots[k] as usize] -= block[c];
                kv += stiffness[c] * (vp - v[e.other as usize].as_dvec3());
            }
            values[diag_slot[p] as usize] = diag;
            *b = (s.force[p].as_dvec3() + gravity * m) * h + kv * (h * h);
        };
        let mut rows = self.matrix.row_values_mut();
        if s.pcg.parallel && rows.len() >= pcg::PARALLEL_MIN_ROWS {
            rows.par_iter_mut()
                .map(|r| &mut **r)
                .zip(self.rhs.par_iter_mut())
                .enumerate()
                .with_min_len(ROW_CHUNK)
                .for_each(row);
        } else {
            rows.iter_mut().map(|r| &mut **r).zip(self.rhs.iter_mut()).enumerate().for_each(row);
        }
        drop(rows);
        self.angles.add(s.model, x, v, h, self.matrix.values_mut(), &mut self.rhs);
        // The block-Jacobi preconditioner: each diagonal block's inverse.
        let (values, offsets) = (self.matrix.values(), self.matrix.row_offsets());
        let invert = |(p, inv): (usize, &mut DMat3)| {
            let diag = values[offsets[p] as usize + diag_slot[p] as usize];
            let det = diag.determinant();
            *inv = if det.is_finite() && det > 0.0 {
                diag.inverse()
            } else {
                DMat3::from_diagonal(DVec3::splat(1.0 / mass[p] as f64))
            };
        };
        if s.pcg.parallel && self.inv_diag.len() >= pcg::PARALLEL_MIN_ROWS {
            self.inv_diag.par_iter_mut().enumerate().with_min_len(ROW_CHUNK).for_each(invert);
        } else {
            self.inv_diag.iter_mut().enumerate().for_each(invert);
        }
        pcg::solve_filtered(&self.matrix, &self.inv_diag, s.pinned, &self.rhs, &mut self.dv, &mut self.work, &s.pcg)
    }
}

/// What the substeps of a frame add up: the frame's report and, while measuring, the time
/// per stage.
pub(in crate::solver) struct Tally {
    pub report: StepReport,
    pub times: StageTimes,
    pub watch: Stopwatch,
}

/// The implicit Euler substep of a [`ForceSolver`], stage by stage.
impl ForceSolver {
    /// Fills `force` with the spring and aerodynamic forces (N, without gravity) of the
    /// current state (the explicit integrators fuse this into their particle pass).
    fn accumulate_forces(&mut self, wind: Vec3, h: f32, parallel: bool) {
        self.pack();
        let aero = self.triangle_forces(wind, parallel);
        let angles = self.angle_forces(parallel);
        let forces = Forces {
            model: &self.model,
            gather: &self.gather,
            phase: &self.phase[0],
            aero: aero.then_some(&self.triangle_force[..]),
            h,
            angles: angles.then_some(&self.angle_force[..]),
        };
        let fill = |start: usize, out: &mut [Vec3]| {
            forces.for_each(start..start + out.len(), &mut |p: usize, f: Vec4| out[p - start] = f.truncate())
        };
        match particle_chunk(self.force.len(), parallel) {
            Some(c) => self.force.par_chunks_mut(c).enumerate().for_each(|(k, out)| fill(k * c, out)),
            None => fill(0, &mut self.force),
        }
    }

    /// Substep `sub` of `plan`: air damping, forces (aerodynamics and springs), the
    /// linearised solve for Δv and v ← v + Δv, d ← h v (predict), pins, colliders (velocity
    /// corrected by Δd/h), x ← x + d (finish). With `trace`, checks after each stage.
    pub(in crate::solver) fn implicit_substep(
        &mut self,
        plan: &SubstepPlan,
        sub: u32,
        pins: &[PinMove],
        parallel: bool,
        trace: bool,
        tally: &mut Tally,
    ) -> Result<(), SolverError> {
        let Tally { report, times, watch } = tally;
        let slot = plan.slots[sub as usize];
        let (h, inv_h, t0) = (plan.h, plan.inv_h, slot.t0);
        if plan.decay != 1.0 {
            for (v, &pinned) in self.state.velocity.iter_mut().zip(&self.pinned) {
                if !pinned {
                    *v *= plan.decay;
                }
            }
        }
        // Aerodynamics and spring forces.
        self.accumulate_forces(slot.wind, h, parallel);
        if trace && let Some(p) = self.force.iter().position(|f| !f.is_finite()) {
            return Err(self.diagnose(t0, p, self.model.air().is_active()));
        }
        // Predict: the linearised solve, then v and d.
        let Some(mut scratch) = self.implicit.take() else { unreachable!("implicit scratch is made with the solver") };
        for pin in pins {
            let p = pin.particle as usize;
            let goal_v = (pin.start.lerp(pin.target, slot.frac) - self.state.particles[p].x.truncate()) * inv_h;
            scratch.dv[p] = (goal_v - self.state.velocity[p]).as_dvec3();
        }
        let s = &self.settings;
        let step = ImplicitStep {
            model: &self.model,
            springs: &self.springs,
            x: &self.state.particles,
            v: &self.state.velocity,
            force: &self.force,
            pinned: &self.pinned,
            h,
            clamp_compression: s.clamp_compression,
            pcg: PcgSettings { tolerance: s.cg_tolerance, max_iterations: s.cg_max_iterations, parallel },
        };
        let solve = scratch.solve(&step);
        report.linear_iterations = report.linear_iterations.max(solve.iterations);
        report.linear_residual = if solve.residual.is_nan() || report.linear_residual.is_nan() {
            f64::NAN
        } else {
            report.linear_residual.max(solve.residual)
        };
        let dv = &scratch.dv;
        let state = &mut self.state;
        for (p, ((v, q), &pinned)) in state.velocity.iter_mut().zip(&mut state.particles).zip(&self.pinned).enumerate()
        {
            if !pinned {
                *v = (v.as_dvec3() + dv[p]).as_vec3();
                q.d = (*v * h).extend(0.0);
            }
        }
        self.implicit = Some(scratch);
        if trace {
            self.check_finite(t0, Stage::Predict)?;
        }
        watch.lap(times, Some(Stage::Predict));
        for pin in pins {
            let q = &mut self.state.particles[pin.particle as usize];
            let d = pin.start.lerp(pin.target, slot.frac) - q.x.truncate();
            q.d = d.extend(0.0);
            self.state.velocity[pin.particle as usize] = d * inv_h;
        }
        // Contacts, colliders, finish.
        let model = std::sync::Arc::clone(&self.model);
        let velocity = Velocity::Correct { inv_h };
        report.particle_contacts =
            stages::contacts::solve(&model, &mut self.self_collision, &mut self.state, h, velocity, parallel);
        if trace {
            self.check_finite(t0, Stage::Contacts)?;
        }
        watch.lap(times, Some(Stage::Contacts));
        let placements = plan.placements(sub);
        report.contacts = stages::colliders::resolve(
            &model,
            &mut self.state,
            placements,
            true,
            &mut self.triangle_contact,
            Velocity::Correct { inv_h },
            parallel,
        );
        if trace {
            self.check_finite(t0, Stage::Colliders)?;
        }
        watch.lap(times, Some(Stage::Colliders));
        stages::finish::advance(&mut self.state);
        watch.lap(times, Some(Stage::Finish));
        Ok(())
    }
}
