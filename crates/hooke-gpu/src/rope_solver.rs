//! The direct rope solver on the GPU (`rope_solver.wgsl`): one thread per rope factorises and
//! solves the rope's banded system each iteration, as hooke's CPU solver does
//! (`hooke::solver::xpbd::direct_rope`, after Deul et al. 2018), operation for operation. A
//! thread per rope keeps the solve sequential and identical to the CPU's; a rope of n particles
//! costs O(n) on that thread, so very long ropes are better split or solved on the CPU.
//!
//! Each solve also keeps the frame's largest T(wᵢ + wⱼ)/L of a segment in tension (T = −λ/h²)
//! in `Buffers::tension`, which the solver reads with the health record to apply the tension
//! limit on the substep ([`hooke::solver::xpbd::stability`]) as the CPU does.

use crate::buffers::{self, Buffers, ColourSlot, UNIFORM_SLOT};
use crate::kernel::{Access::*, Bound, KernelSpec, Kernels, SharedLayouts};
use hooke::Model;
use hooke::solver::xpbd::direct_rope::{RopeChains, Row};
use wgpu::util::DeviceExt;

/// The file's pipelines and bindings, in binding order.
pub(crate) const SPEC: KernelSpec = KernelSpec {
    name: "rope_solver.wgsl",
    source: crate::shaders::ROPE_SOLVER,
    entries: &["solve"],
    access: &[Read, ReadWrite, ReadWrite, ReadWrite, Read, ReadWrite, ReadWrite],
    slot: true,
};

/// Words per row in the topology buffer (`ROW` in the kernel).
const ROW: usize = 12;

/// The `topology` words of `rope_solver.wgsl` for the ropes of `model` (see the kernel for the
/// layout) and the scratch size in f32s.
pub(crate) fn topology(model: &Model, chains: &RopeChains) -> (Vec<u32>, usize) {
    let chains = chains.chains();
    let mut words = vec![chains.len() as u32];
    words.resize(1 + 8 * chains.len(), 0);
    // Rows.
    let mut row_start = Vec::with_capacity(chains.len());
    for c in chains {
        row_start.push(words.len() as u32);
        for &row in &c.rows {
            let mut w = [0u32; ROW];
            match row {
                Row::Distance(k) => {
                    let d = model.distance().constraints()[k as usize];
                    w[..5].copy_from_slice(&[0, k, d.i, d.j, d.j]);
                    w[5] = d.rest_length.to_bits();
                    w[6] = d.compliance_stretch.to_bits();
                    w[7] = d.compliance_compression.to_bits();
                    w[8] = d.damping.to_bits();
                }
                Row::Joint(k) => {
                    let j = model.rope_bending().constraints()[k as usize];
                    w[..5].copy_from_slice(&[1, k, j.particles[0], j.particles[1], j.particles[2]]);
                    w[6] = j.compliance.to_bits();
                    w[7] = j.compliance.to_bits();
                    w[8] = j.damping.to_bits();
                }
            }
            words.extend_from_slice(&w);
        }
    }
    // Touch offsets (in pairs from word 0, filled once the touches' start is known).
    let mut offset_start = Vec::with_capacity(chains.len());
    for c in chains {
        offset_start.push(words.len());
        words.resize(words.len() + c.offsets.len(), 0);
    }
    if words.len() % 2 == 1 {
        words.push(0);
    }
    let mut scratch = 0usize;
    for (k, c) in chains.iter().enumerate() {
        let touch_pair = (words.len() / 2) as u32;
        for (p, &o) in c.offsets.iter().enumerate() {
            words[offset_start[k] + p] = touch_pair + o;
        }
        for &(row, slot) in &c.touch {
            words.extend_from_slice(&[row, slot as u32]);
        }
        let m = c.rows.len();
        let header = [
            row_start[k],
            m as u32,
            c.bandwidth as u32,
            c.first_particle,
            (c.offsets.len() - 1) as u32,
            offset_start[k] as u32,
            scratch as u32,
            0,
        ];
        words[1 + 8 * k..9 + 8 * k].copy_from_slice(&header);
        scratch += m * (9 + c.bandwidth + 2);
    }
    (words, scratch)
}

/// The kernel bound to a solver's buffers, with its topology and scratch.
pub(crate) struct RopeSolver {
    bound: Bound,
    /// The same bindings on the Jacobi solve's second displacement buffer.
    alternate: Option<wgpu::BindGroup>,
    /// Two slots: the first iteration of a substep (λ from 0), and the others.
    slot_group: wgpu::BindGroup,
    topology: wgpu::Buffer,
    ropes: u32,
}

impl RopeSolver {
    /// `None` for a model without ropes. `alternate`: the Jacobi solve's second displacement
    /// buffer, if any.
    pub fn new(
        kernels: &Kernels,
        device: &wgpu::Device,
        b: &Buffers,
        model: &Model,
        alternate: Option<&wgpu::Buffer>,
    ) -> Option<RopeSolver> {
        let chains = RopeChains::new(model);
        if chains.is_empty() {
            return None;
        }
        let (words, scratch) = topology(model, &chains);
        let topology = buffers::storage(device, "hooke rope topology", &words);
        let scratch = buffers::zeroed(device, "hooke rope scratch", 4 * scratch.max(4) as u64);
        let kernel = kernels.get(&SPEC);
        let with = |d| [&b.position, d, &b.lambda, &b.lambda_rope_bending, &topology, &scratch, &b.tension];
        let bound = kernel.bind(device, &with(&b.displacement));
        let alternate = alternate.map(|d| kernel.group(device, &with(d)));
        let mut slots = vec![0u8; 2 * UNIFORM_SLOT as usize];
        for first in 0..2u32 {
            let slot = ColourSlot { start: 0, count: 0, first: 1 - first, _pad: 0 };
            let at = first as usize * UNIFORM_SLOT as usize;
            slots[at..at + size_of::<ColourSlot>()].copy_from_slice(bytemuck::bytes_of(&slot));
        }
        let uniform = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("hooke rope slots"),
            contents: &slots,
            usage: wgpu::BufferUsages::UNIFORM,
        });
        let slot_group =
            SharedLayouts::uniform_group(device, &kernels.layouts.slot, &uniform, size_of::<ColourSlot>() as u64);
        Some(RopeSolver { bound, alternate, slot_group, topology, ropes: chains.chains().len() as u32 })
    }

    /// Re-uploads the rows' compliances and damping after a material change.
    pub fn update_parameters(&self, queue: &wgpu::Queue, model: &Model) {
        let (words, _) = topology(model, &RopeChains::new(model));
        queue.write_buffer(&self.topology, 0, bytemuck::cast_slice(&words));
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
        let slot = if first { 0 } else { UNIFORM_SLOT as u32 };
        self.bound.run_group(pass, 0, group, params, (&self.slot_group, slot), self.ropes);
    }
}
