//! Tile-local Gauss–Seidel in workgroup memory (`local_sweep.wgsl`; issue #13, item 2).
//!
//! The colour-by-colour sweep takes one dispatch per colour, per constraint set, per
//! iteration: a cloth grid with dihedral bending and tethers, 20 substeps × 4 iterations, makes
//! some 1 600 dispatches a frame, and a small cloth, whose colours are a few hundred threads
//! each, spends its frame launching them. Where every body fits in one workgroup's memory
//! (three f32 displacements per particle: 4 096 particles in NVIDIA's 48 KiB, 2 730 in
//! lavapipe's 32 KiB), one workgroup per body instead runs all the iterations of a substep — distance colours,
//! hinge colours, tethers, each followed by a barrier, as the sweep of the whole model orders
//! them — on displacements held in workgroup memory, and writes them back once: one dispatch
//! per substep for every body of the model, and the particles' traffic out of device memory.
//! The arithmetic is the device-memory kernels' (`distance_step`, `hinge_step`,
//! `tether_pull`), so the result is the colour-by-colour sweep's bit for bit.
//!
//! It applies with Gauss–Seidel (not the Jacobi solve, which has its own iteration) when the
//! model has no rope joints and no rope under the direct solver (their passes come between the
//! hinges and the tethers of an iteration), every body fits, and each body's constraints are
//! contiguous within each colour and touch only its own particles (the model builder's order);
//! otherwise the solver sweeps colour by colour ([`GpuSettings::local`](crate::GpuSettings)).
//! By default it is used only where it pays ([`LocalSweepMode`](crate::LocalSweepMode)).

use crate::buffers::{self, Buffers, ColourSlot, UNIFORM_SLOT};
use crate::kernel::{Access::*, Bound, KernelSpec, Kernels, SharedLayouts};
use hooke::{ConstraintSet, Model};

/// The file's pipelines and bindings, in binding order.
pub(crate) const SPEC: KernelSpec = KernelSpec {
    name: "local_sweep.wgsl",
    source: crate::shaders::LOCAL_SWEEP,
    entries: &["solve_local"],
    access: &[Read, ReadWrite, Read, ReadWrite, Read, ReadWrite, Read, Read],
    slot: true,
};

/// Bytes of workgroup memory per particle: its displacement's three f32.
const BYTES_PER_PARTICLE: u32 = 12;

/// The most particles a tile may hold on a device with these limits (`LOCAL_CAPACITY`).
pub(crate) fn capacity(limits: &wgpu::Limits) -> u32 {
    limits.max_compute_workgroup_storage_size / BYTES_PER_PARTICLE
}

/// Per body and colour of `set` (over the colours `swept(c)` says are swept): the (first
/// constraint, count) of the body's constraints in that colour, `[body][colour]` flattened.
/// `None` if a body's constraints are not contiguous within a colour, a constraint has no body,
/// or a constraint touches a particle outside its body (`particles(item)`).
fn body_ranges<T>(
    model: &Model,
    set: &ConstraintSet<T>,
    swept: impl Fn(usize) -> bool,
    particles: impl Fn(&T) -> Vec<u32>,
) -> Option<(usize, Vec<[u32; 2]>)> {
    let bodies = model.bodies();
    let colours: Vec<_> =
        set.colour_ranges().iter().enumerate().filter(|&(c, _)| swept(c)).map(|(_, r)| r.clone()).collect();
    let mut ranges = vec![[0u32; 2]; bodies.len() * colours.len()];
    let mut seen = vec![false; bodies.len()];
    for (c, r) in colours.iter().enumerate() {
        seen.fill(false);
        let mut ci = r.start;
        while ci < r.end {
            let b = set.body_of(ci as usize)?;
            if seen[b] {
                return None;
            }
            seen[b] = true;
            let start = ci;
            while ci < r.end && set.body_of(ci as usize) == Some(b) {
                let inside = particles(&set.constraints()[ci as usize]).iter().all(|p| bodies[b].particles.contains(p));
                if !inside {
                    return None;
                }
                ci += 1;
            }
            ranges[b * colours.len() + c] = [start, ci - start];
        }
    }
    Some((colours.len(), ranges))
}

/// The tile table of `local_sweep.wgsl` for `model` — one tile per body with particles — or
/// `None` where the sweep does not apply (see the module documentation), a body has more
/// than `capacity` particles, or a thread of `threads` would loop more often than the device's
/// `loop_budget` allows ([`crate::GpuContext::loop_budget`]). `swept(c)` says which distance
/// colours are swept.
pub(crate) fn table(
    model: &Model,
    swept: impl Fn(usize) -> bool,
    iterations: u32,
    (capacity, threads, loop_budget): (u32, u32, Option<u32>),
) -> Option<Vec<[u32; 2]>> {
    if !model.rope_bending().is_empty() || model.distance().is_empty() && model.dihedral().is_empty() {
        return None;
    }
    let bodies = model.bodies();
    if bodies.iter().any(|b| b.particles.len() > capacity as usize) {
        return None;
    }
    let (d, distance) = body_ranges(model, model.distance(), swept, |c| vec![c.i, c.j])?;
    let (h, hinge) = body_ranges(model, model.dihedral(), |_| true, |c| c.particles.to_vec())?;
    let tiles: Vec<usize> = (0..bodies.len()).filter(|&b| !bodies[b].particles.is_empty()).collect();
    // Bodies are contiguous and in order, so every particle is in some tile.
    let covered: usize = tiles.iter().map(|&b| bodies[b].particles.len()).sum();
    if covered != model.particle_count() {
        return None;
    }
    if let Some(budget) = loop_budget {
        // A thread's loop iterations in a tile, each loop counting one more for its exit (as
        // llvmpipe counts them; measured: a 40² cloth's sweep stops short from about 875
        // iterations a substep, where this gives 72 an iteration): loading and storing its
        // share of the particles, then per iteration each colour and its share of the
        // colour's constraints, and its share of at most two tethers per particle.
        let share = |count: u32| count.div_ceil(threads) as u64;
        let most = tiles.iter().map(|&b| {
            let n = bodies[b].particles.len() as u32;
            let colours = |ranges: &[[u32; 2]]| ranges.iter().map(|r| 2 + share(r[1])).sum::<u64>();
            let tethers = 2 + share(2 * n);
            let sweep = 1 + colours(&distance[b * d..(b + 1) * d]) + colours(&hinge[b * h..(b + 1) * h]) + tethers;
            2 * (1 + share(n)) + 64 + iterations as u64 * sweep
        });
        if most.max().unwrap_or(0) > budget as u64 * 3 / 4 {
            return None;
        }
    }
    let mut out = Vec::with_capacity(2 + tiles.len() * (1 + d + h));
    out.push([d as u32, h as u32]);
    out.push([tiles.len() as u32, iterations]);
    for &b in &tiles {
        let p = &bodies[b].particles;
        out.push([p.start, p.end - p.start]);
        out.extend_from_slice(&distance[b * d..(b + 1) * d]);
        out.extend_from_slice(&hinge[b * h..(b + 1) * h]);
    }
    Some(out)
}

/// [`LocalSweepMode::Auto`](crate::LocalSweepMode::Auto)'s largest body (particles) to sweep
/// in workgroup memory whatever the number of bodies: about the break-even of a cloth grid with
/// dihedral bending on an H200 (a 48² one).
pub const LOCAL_SMALL_BODY: usize = 2304;
/// [`LocalSweepMode::Auto`](crate::LocalSweepMode::Auto)'s number of bodies larger than
/// [`LOCAL_SMALL_BODY`] from which they are swept in workgroup memory too: enough workgroups to
/// keep the device's multiprocessors busy (32 worlds of a 64² cloth broke even on an H200).
pub const LOCAL_MANY_BODIES: usize = 32;

/// Whether the local sweep pays for `model` (see
/// [`LocalSweepMode::Auto`](crate::LocalSweepMode::Auto)): on a hardware GPU, no body larger
/// than [`LOCAL_SMALL_BODY`], or at least [`LOCAL_MANY_BODIES`] of them; never on a software
/// adapter (`cpu_adapter`), where a workgroup barrier costs more than a dispatch.
pub(crate) fn pays(model: &Model, cpu_adapter: bool) -> bool {
    let large = model.bodies().iter().filter(|b| b.particles.len() > LOCAL_SMALL_BODY).count();
    !cpu_adapter && (large == 0 || large >= LOCAL_MANY_BODIES)
}

/// The local sweep bound to a solver's buffers.
pub(crate) struct LocalSweep {
    bound: Bound,
    tiles: u32,
    /// The tether records' slot (`count`), the tether kernel's own or a zero one.
    slot_group: wgpu::BindGroup,
    _table: wgpu::Buffer,
    _own: Vec<wgpu::Buffer>,
}

impl LocalSweep {
    /// Binds the kernel to the buffers with `table` (from [`table`]) and the tethers' records
    /// and slot (or none: no tethers).
    pub fn new(
        kernels: &Kernels,
        device: &wgpu::Device,
        b: &Buffers,
        table: Vec<[u32; 2]>,
        tethers: Option<(&wgpu::Buffer, &wgpu::BindGroup)>,
    ) -> LocalSweep {
        let tiles = table[1][0];
        let table = buffers::storage(device, "hooke local tiles", &table);
        let mut own = Vec::new();
        let (records, slot_group) = match tethers {
            Some((records, group)) => (records.clone(), group.clone()),
            None => {
                // Zero records and a zero count (wgpu's buffers start zeroed).
                let records = buffers::zeroed(device, "hooke no tethers", 32);
                let uniform = device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("hooke no tether slot"),
                    size: UNIFORM_SLOT,
                    usage: wgpu::BufferUsages::UNIFORM,
                    mapped_at_creation: false,
                });
                let group = SharedLayouts::uniform_group(
                    device,
                    &kernels.layouts.slot,
                    &uniform,
                    size_of::<ColourSlot>() as u64,
                );
                own.push(uniform);
                own.push(records.clone());
                (records, group)
            }
        };
        let bound = kernels.get(&SPEC).bind(
            device,
            &[
                &b.position,
                &b.displacement,
                &b.constraints,
                &b.lambda,
                &b.dihedral,
                &b.lambda_dihedral,
                &records,
                &table,
            ],
        );
        LocalSweep { bound, tiles, slot_group, _table: table, _own: own }
    }

    /// Records every iteration of one substep's constraint sets and tethers.
    pub fn record(&self, pass: &mut wgpu::ComputePass<'_>, params: (&wgpu::BindGroup, u32)) {
        self.bound.run_workgroups(pass, 0, self.bound.group(), params, (&self.slot_group, 0), self.tiles);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hooke::{ClothGrid, ModelBuilder};

    /// A device with a loop budget (llvmpipe's 65 535 iterations per invocation) gets the local
    /// sweep only while a thread's loops over a substep fit it: a 40² cloth on 1 024 threads
    /// loops about 75 times an iteration, so 20 iterations a substep fit and 1 000 do not (on
    /// lavapipe its sweep stops short from about 875); without a budget both are swept
    /// locally.
    #[test]
    fn the_local_sweep_keeps_within_the_loop_budget() {
        let mut b = ModelBuilder::new();
        b.add_cloth_grid(&ClothGrid::new("cloth", 40, 40, 0.025)).unwrap();
        let model = b.finalize().unwrap();
        let swept = hooke::solver::swept_colours(&model, hooke::RopeSolver::Direct);
        let fits = |iterations, budget| table(&model, |c| swept[c], iterations, (4096, 1024, budget)).is_some();
        assert!(fits(20, Some(65_535)));
        assert!(!fits(1000, Some(65_535)));
        assert!(fits(1000, None));
    }

    /// `Auto`'s choice: on a GPU, bodies of at most [`LOCAL_SMALL_BODY`] particles, or at
    /// least [`LOCAL_MANY_BODIES`] larger ones (small bodies do not count toward the many); on
    /// a software adapter never.
    #[test]
    fn the_local_sweep_pays_for_small_or_many_bodies_on_a_gpu_only() {
        let grids = |sizes: &[usize]| {
            let mut b = ModelBuilder::new();
            for (k, &n) in sizes.iter().enumerate() {
                b.add_cloth_grid(&ClothGrid::new(format!("cloth{k}"), n, n, 0.01)).unwrap();
            }
            b.finalize().unwrap()
        };
        let small = grids(&[48]);
        let large = grids(&[49]);
        let many = grids(&[49; LOCAL_MANY_BODIES]);
        let fewer = grids(&[49; LOCAL_MANY_BODIES - 1]);
        let mut mixed = vec![5; LOCAL_MANY_BODIES];
        mixed[0] = 49;
        let mixed = grids(&mixed);
        let on_gpu: Vec<bool> = [&small, &large, &many, &fewer, &mixed].iter().map(|m| pays(m, false)).collect();
        assert_eq!(on_gpu, [true, false, true, false, false]);
        assert!([&small, &large, &many, &fewer, &mixed].iter().all(|m| !pays(m, true)));
    }
}
