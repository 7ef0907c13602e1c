//! [`SetSweep`]: one constraint set's kernel bound to a solver's buffers, swept colour by
//! colour (article §5.2). Every set kernel (`distance.wgsl`, `dihedral.wgsl`,
//! `rope_bending.wgsl`) binds the same four buffers — positions x⁰ with w, displacements d, the
//! set's records, its λ — and takes its colour (start, count, first iteration) as a slot.

use crate::buffers::UNIFORM_SLOT;
use crate::kernel::{Bound, Kernel};
use std::sync::Arc;

/// A set kernel bound to `[position, displacement, constraints, lambda]`, and optionally to the
/// Jacobi solve's second displacement buffer in place of the first.
pub(crate) struct SetSweep {
    bound: Bound,
    /// The same bindings with the Jacobi solve's second displacement buffer.
    alternate: Option<wgpu::BindGroup>,
    /// (colour slot pair, count) of each colour swept: the set's colours but those solved
    /// otherwise (the ropes' under the direct rope solver).
    colours: Vec<(u32, u32)>,
}

impl SetSweep {
    /// Binds `kernel` to the buffers; `colours` are the set's colour ranges (start, count),
    /// their slots from pair `first_slot` on (see `write_colour_slots` in solver.rs), and
    /// `swept(c)` says whether colour c is swept.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        kernel: &Arc<Kernel>,
        device: &wgpu::Device,
        position: &wgpu::Buffer,
        displacement: &wgpu::Buffer,
        constraints: &wgpu::Buffer,
        lambda: &wgpu::Buffer,
        alternate: Option<&wgpu::Buffer>,
        colours: Vec<(u32, u32)>,
        first_slot: u32,
        swept: impl Fn(usize) -> bool,
    ) -> SetSweep {
        let bound = kernel.bind(device, &[position, displacement, constraints, lambda]);
        let alternate = alternate.map(|d| kernel.group(device, &[position, d, constraints, lambda]));
        let colours = colours
            .into_iter()
            .enumerate()
            .filter(|&(c, _)| swept(c))
            .map(|(c, (_, count))| (first_slot + c as u32, count))
            .collect();
        SetSweep { bound, alternate, colours }
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.colours.iter().all(|&(_, n)| n == 0)
    }

    /// Records one Gauss–Seidel sweep over the set's colours — `first` on the first iteration
    /// of a substep (λ starts from 0) — on the displacements of the main buffer, or of the
    /// alternate one with `on_alternate`.
    pub fn record(
        &self,
        pass: &mut wgpu::ComputePass<'_>,
        params: (&wgpu::BindGroup, u32),
        colour_group: &wgpu::BindGroup,
        first: bool,
        on_alternate: bool,
    ) {
        let group = match (&self.alternate, on_alternate) {
            (Some(g), true) => g,
            _ => self.bound.group(),
        };
        for &(pair, count) in &self.colours {
            let slot = (2 * pair + (!first) as u32) * UNIFORM_SLOT as u32;
            self.bound.run_group(pass, 0, group, params, (colour_group, slot), count);
        }
    }
}
