//! [`SetSweep`]: one constraint set's kernel bound to a solver's buffers, swept colour by
//! colour (article §5.2). Every set kernel (`distance.wgsl`, `dihedral.wgsl`,
//! `rope_bending.wgsl`) binds the same four buffers — positions x⁰ with w, displacements d, the
//! set's records, its λ — and takes its colour (start, count, first iteration) as a slot.

use crate::buffers::UNIFORM_SLOT;
use crate::kernel::{Bound, Kernel};
use std::sync::Arc;

/// A set kernel bound to `[position, displacement, constraints, lambda, tiles]`, and optionally
/// to the Jacobi solve's second displacement buffer in place of the first.
pub(crate) struct SetSweep {
    bound: Bound,
    /// The same bindings with the Jacobi solve's second displacement buffer.
    alternate: Option<wgpu::BindGroup>,
    /// (colour slot pair, count) of each colour swept: the set's colours but those solved
    /// otherwise (the ropes' under the direct rope solver).
    colours: Vec<(u32, u32)>,
    /// With tile-local sweeps (`tiles.wgsl`): the number of tiles, each swept by one workgroup
    /// in one dispatch per iteration.
    tiles: Option<u32>,
    /// The tile table (`tiles.wgsl`), kept alive with the bind groups.
    _table: wgpu::Buffer,
}

/// The tile table of `tiles.wgsl` for `set` (a body's constraints are a tile), over the
/// colours `swept(c)` says are swept: the header (colours, tiles), then per tile and colour
/// (first constraint, count). Tiles are the bodies with constraints in the swept colours.
/// `None` when a body's constraints are not contiguous within a colour (the builder keeps
/// them so; then the set is swept colour by colour) or the set has none.
pub(crate) fn tile_table<T>(set: &hooke::ConstraintSet<T>, swept: impl Fn(usize) -> bool) -> Option<Vec<[u32; 2]>> {
    let colours: Vec<_> =
        set.colour_ranges().iter().enumerate().filter(|&(c, _)| swept(c)).map(|(_, r)| r.clone()).collect();
    // The tile of each body with constraints in the swept colours, in body order.
    let mut tile_of = std::collections::BTreeMap::new();
    for r in &colours {
        for ci in r.start..r.end {
            tile_of.insert(set.body_of(ci as usize)?, 0u32);
        }
    }
    if tile_of.is_empty() {
        return None;
    }
    for (k, t) in tile_of.values_mut().enumerate() {
        *t = k as u32;
    }
    let (c_count, t_count) = (colours.len(), tile_of.len());
    let mut table = vec![[0u32; 2]; 1 + c_count * t_count];
    table[0] = [c_count as u32, t_count as u32];
    for (c, r) in colours.iter().enumerate() {
        let mut seen = vec![false; t_count];
        let mut ci = r.start;
        while ci < r.end {
            let t = tile_of[&set.body_of(ci as usize)?] as usize;
            if seen[t] {
                return None;
            }
            seen[t] = true;
            let start = ci;
            while ci < r.end && set.body_of(ci as usize).map(|b| tile_of[&b] as usize) == Some(t) {
                ci += 1;
            }
            table[1 + t * c_count + c] = [start, ci - start];
        }
    }
    Some(table)
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
        tiles: Option<Vec<[u32; 2]>>,
    ) -> SetSweep {
        let count = tiles.as_ref().map(|t| t[0][1]);
        let table = crate::buffers::storage(device, "hooke tiles", &tiles.unwrap_or_else(|| vec![[0; 2]]));
        let bound = kernel.bind(device, &[position, displacement, constraints, lambda, &table]);
        let alternate = alternate.map(|d| kernel.group(device, &[position, d, constraints, lambda, &table]));
        let colours = colours
            .into_iter()
            .enumerate()
            .filter(|&(c, _)| swept(c))
            .map(|(c, (_, count))| (first_slot + c as u32, count))
            .collect();
        SetSweep { bound, alternate, colours, tiles: count, _table: table }
    }

    /// Whether the set is swept tile by tile.
    pub fn tiled(&self) -> bool {
        self.tiles.is_some()
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
        if let (Some(tiles), Some(&(pair, _))) = (self.tiles, self.colours.first()) {
            // Every colour of every tile in one dispatch; any of the set's slots says `first`.
            let slot = (2 * pair + (!first) as u32) * UNIFORM_SLOT as u32;
            self.bound.run_workgroups(pass, 1, group, params, (colour_group, slot), tiles);
            return;
        }
        for &(pair, count) in &self.colours {
            let slot = (2 * pair + (!first) as u32) * UNIFORM_SLOT as u32;
            self.bound.run_group(pass, 0, group, params, (colour_group, slot), count);
        }
    }
}
