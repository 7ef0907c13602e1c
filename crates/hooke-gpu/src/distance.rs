//! The distance-constraint sweep (`distance.wgsl`; article §3.2–3.3, §5.2–5.4).
//!
//! For C = ‖xᵢ − xⱼ‖ − L₀, n = (xᵢ − xⱼ)/‖xᵢ − xⱼ‖, α̃ = α/h² and γ = τ/h, XPBD (Macklin et
//! al. 2016) updates
//!
//! Δλ = (−C − α̃λ − γΔC) / ((1+γ)(wᵢ+wⱼ) + α̃),  λ += Δλ,  xᵢ += wᵢ n Δλ,  xⱼ −= wⱼ n Δλ,
//!
//! with λ reset at the start of each substep (article §3.3: accumulated over the iterations of
//! one step). PBD (Müller et al. 2007) uses Δλ = −s C/(wᵢ+wⱼ). Positions are read as
//! (xᵢ⁰ − xⱼ⁰) + (dᵢ − dⱼ), the precision note of hooke's CPU solver, and every operation is
//! done in the CPU kernel's order so both round alike.
//!
//! Constraints are sorted by colour (article §5.2): no two constraints of one colour share a
//! particle, so one dispatch per colour updates its constraints in parallel without races, and
//! the colours are swept one after another — Gauss–Seidel over colours, exactly the CPU's
//! order. A cloth grid has 12 colours, so each iteration costs 12 dispatches: fewer colours
//! would mean fewer, larger dispatches, but a valid colouring cannot have fewer than the
//! largest number of constraints at one particle.
//!
//! λ is not cleared with a separate command: the colour slot used on the first iteration of a
//! substep carries `first = 1`, and the kernel then starts from λ = 0.

use crate::kernel::{Access::*, KernelSpec};

/// The file's pipelines and bindings, in binding order (a [`SetSweep`](crate::set_sweep::SetSweep)).
pub(crate) const SPEC: KernelSpec = KernelSpec {
    name: "distance.wgsl",
    source: crate::shaders::DISTANCE,
    entries: &["solve", "solve_tiles"],
    access: &[Read, ReadWrite, Read, ReadWrite, Read],
    slot: true,
};
