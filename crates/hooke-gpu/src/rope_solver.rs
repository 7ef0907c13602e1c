//! The direct rope solver on the GPU (`rope_solver.wgsl`): each iteration factorises and
//! solves every rope's banded system as hooke's CPU solver does
//! (`hooke::solver::xpbd::direct_rope`, after Deul et al. 2018), operation for operation, so
//! that both round alike (bit for bit on lavapipe).
//!
//! Four dispatches per iteration: the rows (a thread per row), the matrix (a thread per row),
//! the band's factorisation and substitutions (a workgroup per rope, which stages the rows in
//! workgroup memory for one of its threads to run the recurrence: the only sequential part,
//! O(n) for a rope of n particles) and the update of λ and of the displacements (a thread per
//! row and per particle). A device with a loop budget ([`GpuContext::loop_budget`]: Mesa's
//! llvmpipe stops an invocation's loops after 65 535 iterations in all) gets the band over
//! windows of rows that fit it, one dispatch each, so that ropes of any length are solved
//! whole.
//!
//! The update also keeps the frame's largest T(wᵢ + wⱼ)/L of a segment in tension
//! (T = −λ/h²) in `Buffers::tension`, which the solver reads with the health record to apply
//! the tension limit on the substep ([`hooke::solver::xpbd::stability`]) as the CPU does.

use crate::buffers::{self, Buffers, ColourSlot, UNIFORM_SLOT};
use crate::kernel::{Access::*, Bound, KernelSpec, Kernels, SharedLayouts};
use hooke::Model;
use hooke::solver::xpbd::direct_rope::{RopeChains, Row};
use wgpu::util::DeviceExt;

/// The file's pipelines and bindings, in binding order.
pub(crate) const SPEC: KernelSpec = KernelSpec {
    name: "rope_solver.wgsl",
    source: crate::shaders::ROPE_SOLVER,
    entries: &["rows", "assemble", "band", "apply"],
    access: &[Read, ReadWrite, ReadWrite, ReadWrite, Read, ReadWrite, ReadWrite],
    slot: true,
};

/// The entry points, in `SPEC.entries` order.
const ROWS: usize = 0;
const ASSEMBLE: usize = 1;
const BAND: usize = 2;
const APPLY: usize = 3;

/// Words of the header, per rope and per row (`HEADER`, `ROPE`, `ROW` in the kernel).
const HEADER: usize = 8;
const ROPE: usize = 4;
const ROW: usize = 16;

/// The `topology` words of `rope_solver.wgsl` for the ropes of a model (see the kernel for
/// the layout), with the sizes the dispatches need.
#[derive(Debug)]
pub(crate) struct Layout {
    pub words: Vec<u32>,
    /// f32s of scratch.
    pub scratch: usize,
    pub ropes: u32,
    /// Rows of all ropes.
    pub rows: u32,
    /// Particles of all ropes.
    pub particles: u32,
    /// The most rows of a rope, and the widest band.
    pub longest: usize,
    pub bandwidth: usize,
}

impl Layout {
    pub fn new(model: &Model, chains: &RopeChains) -> Layout {
        let chains = chains.chains();
        let rows: usize = chains.iter().map(|c| c.rows.len()).sum();
        let particles: usize = chains.iter().map(|c| c.offsets.len() - 1).sum();
        let rows_at = HEADER + ROPE * chains.len();
        let records_at = rows_at + ROW * rows;
        let mut touches_at = records_at + 4 * particles;
        touches_at += touches_at % 2;
        let mut words = vec![0u32; touches_at];
        words[..5].copy_from_slice(&[
            chains.len() as u32,
            rows as u32,
            particles as u32,
            rows_at as u32,
            records_at as u32,
        ]);
        let (mut row0, mut record0, mut band_at) = (0usize, 0usize, 11 * rows);
        for (k, c) in chains.iter().enumerate() {
            let (m, b) = (c.rows.len(), c.bandwidth);
            let h = HEADER + ROPE * k;
            words[h..h + ROPE].copy_from_slice(&[row0 as u32, m as u32, b as u32, band_at as u32]);
            // The particles' records and touches (rows made global).
            let n = c.offsets.len() - 1;
            for p in 0..n {
                let r = records_at + 4 * (record0 + p);
                let first = (words.len() / 2) as u32;
                for &(row, slot) in &c.touch[c.offsets[p] as usize..c.offsets[p + 1] as usize] {
                    words.extend_from_slice(&[row0 as u32 + row, slot as u32]);
                }
                let end = (words.len() / 2) as u32;
                words[r..r + 3].copy_from_slice(&[c.first_particle + p as u32, first, end]);
            }
            // The rows, each with its particles in increasing order.
            for (r, &row) in c.rows.iter().enumerate() {
                let mut w = [0u32; ROW];
                let count = match row {
                    Row::Distance(k) => {
                        let d = model.distance().constraints()[k as usize];
                        w[..5].copy_from_slice(&[0, k, d.i, d.j, d.j]);
                        w[5] = d.rest_length.to_bits();
                        w[6] = d.compliance_stretch.to_bits();
                        w[7] = d.compliance_compression.to_bits();
                        w[8] = d.damping.to_bits();
                        2
                    }
                    Row::Joint(k) => {
                        let j = model.rope_bending().constraints()[k as usize];
                        w[..5].copy_from_slice(&[1, k, j.particles[0], j.particles[1], j.particles[2]]);
                        w[6] = j.compliance.to_bits();
                        w[7] = j.compliance.to_bits();
                        w[8] = j.damping.to_bits();
                        3
                    }
                };
                w[9] = (band_at + b * r) as u32;
                w[10] = b as u32;
                let mut slots: Vec<(u32, u32)> = (0..count).map(|s| (w[2 + s], s as u32)).collect();
                slots.sort_unstable();
                for (e, &(p, slot)) in slots.iter().enumerate() {
                    let record = record0 as u32 + (p - c.first_particle);
                    w[12 + e] = (record << 2) | slot;
                }
                w[15] = count as u32;
                let at = rows_at + ROW * (row0 + r);
                words[at..at + ROW].copy_from_slice(&w);
            }
            row0 += m;
            record0 += n;
            band_at += b * m;
        }
        Layout {
            words,
            scratch: band_at,
            ropes: chains.len() as u32,
            rows: rows as u32,
            particles: particles as u32,
            longest: chains.iter().map(|c| c.rows.len()).max().unwrap_or(0),
            bandwidth: chains.iter().map(|c| c.bandwidth).max().unwrap_or(1),
        }
    }
}

/// Loop iterations of the band kernel per row of band width `b`, at most, each loop counting one
/// more for its exit (as llvmpipe counts them). Up to width 4 (`Q`, held in registers): the
/// factorisation's row, its four-slot j loop with a four-slot i loop in each, the forward
/// substitution's four slots, the back substitution's row and four slots, and three loads or
/// stores of a band row. Wider: the factorisation's row, its j loop and i loops, the forward
/// substitution's loop, then the back substitution's row and its loop.
fn band_loops_per_row(b: usize) -> usize {
    if b <= 4 {
        1 + 5 + 4 * 5 + 5 + 1 + 5 + 3 * (b + 1)
    } else {
        1 + (b + 1) + (b * (b - 1) / 2 + b) + (b + 1) + 1 + (b + 1)
    }
}

/// The rows of the band kernel's windows: `None` (one dispatch covers every rope whole) without
/// a loop budget or where the longest rope fits three quarters of it.
fn windows(layout: &Layout, budget: Option<u32>) -> Option<usize> {
    let budget = budget? as usize;
    let rows = (budget * 3 / 4 / band_loops_per_row(layout.bandwidth)).max(1);
    (layout.longest > rows).then_some(rows)
}

/// The kernel bound to a solver's buffers, with its topology and scratch.
pub(crate) struct RopeSolver {
    bound: Bound,
    /// The same bindings on the Jacobi solve's second displacement buffer.
    alternate: Option<wgpu::BindGroup>,
    /// The slots: the first iteration of a substep (λ from 0), the others, the whole band,
    /// then with a loop budget the windows' factorisations and back substitutions.
    slot_group: wgpu::BindGroup,
    topology: wgpu::Buffer,
    ropes: u32,
    rows: u32,
    /// max(rows, particles): `apply`'s threads.
    updates: u32,
    /// With a loop budget, the number of windows of the band.
    windows: Option<u32>,
}

/// Slots (`UNIFORM_SLOT` bytes apart) of the uniform buffer.
const FIRST: u32 = 0;
const LATER: u32 = 1;
const WHOLE: u32 = 2;
/// The factorisation of window i is slot WINDOWS + 2i, its back substitution the next.
const WINDOWS: u32 = 3;

impl RopeSolver {
    /// `None` for a model without ropes. `alternate`: the Jacobi solve's second displacement
    /// buffer, if any. `budget`: the device's loop budget ([`crate::GpuContext::loop_budget`]).
    pub fn new(
        kernels: &Kernels,
        device: &wgpu::Device,
        b: &Buffers,
        model: &Model,
        alternate: Option<&wgpu::Buffer>,
        budget: Option<u32>,
    ) -> Option<RopeSolver> {
        let chains = RopeChains::new(model);
        if chains.is_empty() {
            return None;
        }
        let layout = Layout::new(model, &chains);
        let topology = buffers::storage(device, "hooke rope topology", &layout.words);
        let scratch = buffers::zeroed(device, "hooke rope scratch", 4 * layout.scratch.max(4) as u64);
        let kernel = kernels.get(&SPEC);
        let with = |d| [&b.position, d, &b.lambda, &b.lambda_rope_bending, &topology, &scratch, &b.tension];
        let bound = kernel.bind(device, &with(&b.displacement));
        let alternate = alternate.map(|d| kernel.group(device, &with(d)));
        let window = windows(&layout, budget);
        let mut slots = vec![
            ColourSlot { first: 1, ..ColourSlot::default() },
            ColourSlot { first: 0, ..ColourSlot::default() },
            ColourSlot { start: 0, count: u32::MAX, first: 3, _pad: 0 },
        ];
        let count = window.map(|w| layout.longest.div_ceil(w) as u32);
        if let Some(w) = window {
            for i in 0..layout.longest.div_ceil(w) {
                let (start, count) = ((i * w) as u32, w as u32);
                slots.push(ColourSlot { start, count, first: 1, _pad: 0 });
                slots.push(ColourSlot { start, count, first: 2, _pad: 0 });
            }
        }
        let mut bytes = vec![0u8; slots.len() * UNIFORM_SLOT as usize];
        for (k, slot) in slots.iter().enumerate() {
            let at = k * UNIFORM_SLOT as usize;
            bytes[at..at + size_of::<ColourSlot>()].copy_from_slice(bytemuck::bytes_of(slot));
        }
        let uniform = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("hooke rope slots"),
            contents: &bytes,
            usage: wgpu::BufferUsages::UNIFORM,
        });
        let slot_group =
            SharedLayouts::uniform_group(device, &kernels.layouts.slot, &uniform, size_of::<ColourSlot>() as u64);
        Some(RopeSolver {
            bound,
            alternate,
            slot_group,
            topology,
            ropes: layout.ropes,
            rows: layout.rows,
            updates: layout.rows.max(layout.particles),
            windows: count,
        })
    }

    /// Re-uploads the rows' compliances and damping after a material change.
    pub fn update_parameters(&self, queue: &wgpu::Queue, model: &Model) {
        let layout = Layout::new(model, &RopeChains::new(model));
        queue.write_buffer(&self.topology, 0, bytemuck::cast_slice(&layout.words));
    }

    /// Records one direct solve of every rope — `first` on the first iteration of a substep
    /// (λ from 0) — on the main displacement buffer, or the alternate one with `on_alternate`.
    pub fn record(
        &self,
        pass: &mut wgpu::ComputePass<'_>,
        params: (&wgpu::BindGroup, u32),
        first: bool,
        on_alternate: bool,
    ) {
        let group = match (&self.alternate, on_alternate) {
            (Some(g), true) => g,
            _ => self.bound.group(),
        };
        let slot = |k: u32| (&self.slot_group, k * UNIFORM_SLOT as u32);
        let iteration = slot(if first { FIRST } else { LATER });
        self.bound.run_group(pass, ROWS, group, params, iteration, self.rows);
        self.bound.run_group(pass, ASSEMBLE, group, params, iteration, self.rows);
        match self.windows {
            None => self.bound.run_workgroups(pass, BAND, group, params, slot(WHOLE), self.ropes),
            Some(n) => {
                for i in 0..n {
                    self.bound.run_workgroups(pass, BAND, group, params, slot(WINDOWS + 2 * i), self.ropes);
                }
                for i in (0..n).rev() {
                    self.bound.run_workgroups(pass, BAND, group, params, slot(WINDOWS + 2 * i + 1), self.ropes);
                }
            }
        }
        self.bound.run_group(pass, APPLY, group, params, iteration, self.updates);
    }
}
