//! The Jacobi distance-constraint solve (`jacobi.wgsl`), the alternative to the colour
//! Gauss–Seidel sweep of [`distance`](crate::distance), selected by
//! [`GpuSolve::Jacobi`](crate::GpuSolve::Jacobi).
//!
//! ## The update
//!
//! Gauss–Seidel projects the constraints one colour after another, each seeing the corrections
//! of the colours before it: a cloth grid costs 12 dispatches per iteration. Jacobi instead
//! computes every constraint's correction from the *same* iterate k and applies them all at
//! once: for a distance constraint c = (i, j) with C = ‖xᵢ − xⱼ‖ − L₀, n its unit direction (see
//! **Direction** below),
//! α̃ = α/h², γ = τ/h (XPBD, Macklin, Müller and Chentanez 2016, "XPBD: position-based
//! simulation of compliant constrained dynamics"),
//!
//! Δλ_c = (−C(xᵏ) − α̃λ_cᵏ − γΔC(xᵏ)) / ((1+γ)(wᵢ+wⱼ) + α̃),
//!
//! λ_cᵏ⁺¹ = λ_cᵏ + ωΔλ_c,   dₚᵏ⁺¹ = dₚᵏ + ω wₚ Σ_{c ∋ p} ±n_c Δλ_c   (+ for p = i, − for p = j),
//!
//! with λ reset to 0 at the start of each substep, as in the Gauss–Seidel sweep. PBD mode uses
//! Δλ_c = −s C/(wᵢ+wⱼ) in the same way.
//!
//! **Relaxation ω.** Every constraint at a particle pushes it by its full correction as if it
//! were alone, so the corrections of constraints that share a particle add up and overshoot.
//! In the stiff limit (α̃ ≪ wᵢ + wⱼ) the iteration on λ is a relaxed Jacobi iteration for
//! (J W Jᵀ) λ = b, which converges only if ω < 2/μ_hi with μ_hi the largest eigenvalue of
//! D⁻¹ J W Jᵀ (D its diagonal): ≈ 4 for a cloth grid with structural and shear constraints
//! (up to 8 at a particle), ≈ 5 with distance bend springs, 2 for a rope. Compliance adds α̃
//! to the diagonal and shrinks the spectrum. Müller, Macklin, Chentanez, Jeschke and Kim
//! (2014, "Unified particle physics for real-time applications", §4.2) instead average each
//! particle's corrections over its constraint count and over-relax with ω ∈ [1, 2]; here a
//! single global ω scales every Δλ, and λ is advanced by the same ωΔλ that moves the
//! particles, so that λ and the displacements stay consistent (M Δx = ∇Cᵀλ): the converged
//! result, and XPBD's independence of the iteration count, are those of Gauss–Seidel.
//! Relaxing the displacements but not λ would divide the effective compliance by ω.
//!
//! **Direction.** The sweeps project a pair along its direction at the start of the substep
//! (which keeps the substep's angular momentum) until it has turned by 25°, and along its
//! direction now past that (`hooke::solver::xpbd::projection`). Under Chebyshev's extrapolation
//! that switch, made and unmade between iterations where a fold runs through a cloth, blew up
//! the article's demo cloth hung by two corners (64² at 10 substeps × 8 iterations, 128² at
//! 20 × 8) where plain Jacobi and Gauss–Seidel held it; a continuous blend of the two
//! directions between turns of 15° and 35° blew it up too. The Jacobi solve therefore takes the
//! start direction only up to a turn of 3° in the substep — resolved rotation, whose angular
//! momentum it then keeps (a sheet spun at 10 rad/s, 0.5° a substep, within 10⁻⁴ in a second)
//! — the direction now from 10°, and their normalised blend between (`blended_step` in
//! `jacobi.wgsl`; tests `chebyshev_jacobi_holds_the_demo_cloth_through_its_folds` and
//! `the_jacobi_solve_keeps_a_spinning_sheets_angular_momentum`). The direction now everywhere
//! also held the cloth but braked the spinning sheet by 7.7 % in a second.
//!
//! **Chebyshev acceleration.** Plain Jacobi converges slowly per iteration (information
//! crosses one constraint per iteration), so by default each iterate is blended with the one
//! before the previous by Chebyshev's semi-iterative weights ω_k (Wang 2015), and ω and the
//! spectral radius ρ behind the weights are chosen from an estimate of the spectrum of the
//! XPBD system D⁻¹((1+γ) J W Jᵀ + α̃) at the solver's substep, ρ capped so that no mode is over-corrected by more than a quarter at the end of a
//! substep — the bound that keeps an undamped cloth stable. The derivation, the choice and the
//! measurements are in the [`chebyshev`](crate::chebyshev) module. The weights are one uniform
//! slot per iteration; ω_k = 1 is plain Jacobi, bit for bit. ω is validated to (0, 2], ρ to
//! [0, 1).
//!
//! ## Vertex-centric gather, no atomics
//!
//! Scattering the corrections to the particles would need float atomics (an optional feature).
//! Instead one thread per particle p *gathers*: a CSR adjacency built once on the host lists
//! the constraints around each particle (4 bytes per entry: the constraint index; p's role is
//! `c.i == p`), and the thread recomputes Δλ_c of each from the previous iterate. Both
//! endpoints of a constraint evaluate the same expression in the constraint's i→j orientation,
//! so they get the same Δλ bit for bit and the update is exactly the Jacobi step above — each
//! Δλ is computed twice, which costs arithmetic but no synchronisation. Only the endpoint i
//! writes λ_c. The displacements and λ are double-buffered: iteration k reads one pair of
//! buffers and writes the other, and the bind groups swap; after an odd number of iterations a
//! copy brings d back into the buffer the later kernels read. The result does not depend on
//! thread scheduling.

use crate::buffers::{self, Buffers, UNIFORM_SLOT};
use crate::kernel::{Access::*, Bound, KernelSpec, Kernels, SharedLayouts};
use bytemuck::{Pod, Zeroable};
use hooke::Model;
use wgpu::util::DeviceExt;

/// The file's pipelines and bindings, in binding order.
pub(crate) const SPEC: KernelSpec = KernelSpec {
    name: "jacobi.wgsl",
    source: crate::shaders::JACOBI,
    entries: &["solve", "copy_back"],
    access: &[Read, Read, ReadWrite, Read, Read, ReadWrite, Read, ReadWrite],
    slot: true,
};

/// The per-dispatch uniform of `jacobi.wgsl` (`Sweep`), bound like a colour slot.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
struct JacobiSlot {
    first: u32,
    relaxation: f32,
    weight: f32,
    prev_zero: u32,
}

/// The Jacobi kernel with its own buffers: the CSR adjacency, the second displacement and λ
/// buffers, and one uniform slot per iteration of a substep (first iteration, relaxation,
/// Chebyshev weight).
pub(crate) struct Jacobi {
    bound: Bound,
    /// The second displacement buffer (`vec4<f32>` per particle), which even iterations write.
    pub displacement: wgpu::Buffer,
    /// The second λ buffer (one `f32` per distance constraint), which even iterations write.
    lambda: wgpu::Buffer,
    /// Reads (displacement, λ) and writes the second pair; and the reverse.
    groups: [wgpu::BindGroup; 2],
    slot_group: wgpu::BindGroup,
    /// The per-iteration slots (`JacobiSlot`), rewritten when the parameters change.
    uniform: wgpu::Buffer,
    /// The solve asked for (ω and ρ, each given or `None` for automatic).
    solve: crate::GpuSolve,
    /// Iterations per substep: one slot each.
    iterations: u32,
    /// The relaxation ω and the Chebyshev spectral radius ρ in use, and the substep (s) they
    /// were chosen for; `None` before the first frame.
    pub parameters: Option<((f32, f32), f32)>,
}

/// The CSR adjacency of `jacobi.wgsl`, from the model's distance set
/// ([`hooke::ConstraintSet::adjacency`]): `n + 1` offsets (counted from the start of the
/// array, i.e. already shifted by `n + 1`), then for each particle the indices of its
/// constraints in increasing order — without the ropes' constraints when `skip_ropes` (the
/// direct rope solver takes them).
pub(crate) fn adjacency(model: &Model, skip_ropes: bool) -> Vec<u32> {
    let set = model.distance();
    let (offsets, list) = set.adjacency();
    let n = offsets.len() - 1;
    let keep =
        |k: u32| !skip_ropes || set.body_of(k as usize).is_none_or(|b| model.bodies()[b].kind != hooke::BodyKind::Rope);
    let mut out = vec![0u32; n + 1];
    let mut kept = Vec::with_capacity(list.len());
    for p in 0..n {
        out[p] = (n + 1 + kept.len()) as u32;
        kept.extend(list[offsets[p] as usize..offsets[p + 1] as usize].iter().copied().filter(|&k| keep(k)));
    }
    out[n] = (n + 1 + kept.len()) as u32;
    out.extend_from_slice(&kept);
    out
}

impl Jacobi {
    pub fn new(
        kernels: &Kernels,
        device: &wgpu::Device,
        b: &Buffers,
        model: &Model,
        solve: crate::GpuSolve,
        iterations: u32,
        skip_ropes: bool,
    ) -> Jacobi {
        let n = model.particle_count() as u64;
        let adjacency = buffers::storage(device, "hooke jacobi adjacency", &adjacency(model, skip_ropes));
        let displacement = buffers::zeroed(device, "hooke jacobi displacement", n * 16);
        let lambda = buffers::zeroed(device, "hooke jacobi lambda", 4 * model.distance().len() as u64);
        // This solve's own step per particle in the last iteration (Chebyshev's momentum).
        let step = buffers::zeroed(device, "hooke jacobi step", n * 16);
        let bindings =
            |d_in, d_out, l_in, l_out| [&b.position, d_in, d_out, &b.constraints, l_in, l_out, &adjacency, &step];
        let bound = kernels.get(&SPEC).bind(device, &bindings(&b.displacement, &displacement, &b.lambda, &lambda));
        let forward = bound.kernel().group(device, &bindings(&b.displacement, &displacement, &b.lambda, &lambda));
        let backward = bound.kernel().group(device, &bindings(&displacement, &b.displacement, &lambda, &b.lambda));
        let uniform = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("hooke jacobi slots"),
            contents: &vec![0u8; iterations.max(1) as usize * UNIFORM_SLOT as usize],
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
        });
        let slot_group =
            SharedLayouts::uniform_group(device, &kernels.layouts.slot, &uniform, size_of::<JacobiSlot>() as u64);
        Jacobi {
            bound,
            displacement,
            lambda,
            groups: [forward, backward],
            slot_group,
            uniform,
            solve,
            iterations,
            parameters: None,
        }
    }

    /// Chooses ω and ρ for substep `h` (s) — estimating the model's spectrum
    /// ([`GpuSolve::jacobi_parameters`](crate::GpuSolve::jacobi_parameters)) only the first
    /// time and when `h` changes — and uploads (into `encoder`) the per-iteration slots.
    pub fn update(
        &mut self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        model: &Model,
        settings: &hooke::XpbdSettings,
        h: f32,
    ) {
        if self.parameters.is_some_and(|(_, at)| at == h) {
            return;
        }
        let Some((relaxation, rho)) = self.solve.jacobi_parameters(model, settings, Some(h)) else { return };
        let weights = crate::chebyshev::weights(rho, self.iterations);
        let mut slots = vec![0u8; weights.len().max(1) * UNIFORM_SLOT as usize];
        for (k, &weight) in weights.iter().enumerate() {
            let slot = JacobiSlot { first: (k == 0) as u32, relaxation, weight, prev_zero: (k == 1) as u32 };
            let at = k * UNIFORM_SLOT as usize;
            slots[at..at + size_of::<JacobiSlot>()].copy_from_slice(bytemuck::bytes_of(&slot));
        }
        crate::solver::upload(device, encoder, &self.uniform, &slots);
        self.parameters = Some(((relaxation, rho), h));
    }

    /// The buffer that holds a substep's final λ after `iterations` iterations: this solve's
    /// second buffer after an odd count (λ is not copied back), else `Buffers::lambda`.
    pub fn final_lambda<'a>(&'a self, b: &'a Buffers, iterations: u32) -> &'a wgpu::Buffer {
        if iterations % 2 == 1 { &self.lambda } else { &b.lambda }
    }

    /// Records Jacobi iteration `it` of a substep over `n` particles: even iterations read
    /// `Buffers::displacement` and write [`Jacobi::displacement`], odd ones the reverse.
    pub fn record_iteration(&self, pass: &mut wgpu::ComputePass<'_>, params: (&wgpu::BindGroup, u32), n: u32, it: u32) {
        let slot = it * UNIFORM_SLOT as u32;
        self.bound.run_group(pass, 0, &self.groups[(it % 2) as usize], params, (&self.slot_group, slot), n);
    }

    /// After `iterations` iterations, brings the displacements back into
    /// `Buffers::displacement` (a copy after an odd count).
    pub fn finish(&self, pass: &mut wgpu::ComputePass<'_>, params: (&wgpu::BindGroup, u32), n: u32, iterations: u32) {
        if iterations % 2 == 1 {
            self.bound.run_group(pass, 1, &self.groups[1], params, (&self.slot_group, 0), n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hooke::{ClothGrid, ModelBuilder};

    /// Every constraint appears once in the list of each of its two endpoints, in increasing
    /// order, and nowhere else.
    #[test]
    fn adjacency_lists_each_constraint_at_both_ends() {
        let mut b = ModelBuilder::new();
        b.add_cloth_grid(&ClothGrid::new("c", 5, 4, 0.1)).unwrap();
        let model = b.finalize().unwrap();
        let a = adjacency(&model, false);
        let n = model.particle_count();
        let set = model.distance();
        assert_eq!(a.len(), n + 1 + 2 * set.len());
        assert_eq!(a[0] as usize, n + 1);
        for p in 0..n {
            let list = &a[a[p] as usize..a[p + 1] as usize];
            let expected: Vec<u32> = (0..set.len() as u32)
                .filter(|&k| {
                    let c = set.constraints()[k as usize];
                    c.i == p as u32 || c.j == p as u32
                })
                .collect();
            assert_eq!(list, &expected[..], "particle {p}");
        }
        assert_eq!(size_of::<JacobiSlot>(), 16);
    }
}
