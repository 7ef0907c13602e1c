//! The global cloth solve on the GPU (`global_cloth.wgsl`), for `[solver] cloth_solver =
//! "global"` and `"global-hinges"`: each iteration solves every distance constraint of a cloth
//! that the Gauss–Seidel colours leave to it (all of a cloth's, unless a torn flap shares a
//! colour with a rope) and, with `global-hinges`, all its hinges, together, on XPBD's
//! linearised system — the system of hooke's CPU global solve
//! ([`hooke::solver::xpbd::global_cloth`]; Macklin, Müller & Chentanez 2016, eq. 11–12).
//!
//! # How it differs from the CPU's
//!
//! The CPU solves (J W Jᵀ + D) Δλ = b for the rows' multipliers in `f64`, by conjugate
//! gradients or a sparse Cholesky factorisation (faer). A GPU has neither `f64` everywhere nor
//! a sparse factorisation, and J W Jᵀ + D of a stiff strip is too ill-conditioned for `f32`
//! conjugate gradients (its bending rows' condition number grows with the fourth power of the
//! resolution). The same step is solved here in the particles' unknowns instead, through the
//! push-through identity
//!
//! (M + Jᵀ D⁻¹ J) Δx = Jᵀ D⁻¹ b,  Δλ = D⁻¹ (b − J Δx)
//!
//! whose matrix is the cloth's masses plus its linearised stiffness: its condition number is
//! about 1 + 4h²k/m (k the stiffest row's stiffness in the particles' unknowns — a hinge's
//! B/L², which grows with the resolution —, m a particle's mass), where the rows' system's
//! grows with the fourth power of the resolution through the bending alone: an `f32`
//! Cholesky factorisation (LDLᵀ) solves it (and the next iteration corrects what it leaves).
//! Each cloth's particles are put in the narrowest of reverse Cuthill–McKee's order (Cuthill &
//! McKee 1969; George 1971) and, for a grid, its rows' and its columns' order, so that the
//! matrix is banded, of width bs = 3B + 2 for particles at most B apart in a row; the factorisation is banded, O(n·bs²),
//! and made by one workgroup per cloth, the trailing update of each column shared by its
//! threads, every iteration. (Reusing one factorisation over a frame, or over the iterations
//! of a substep, was tried: a row whose side switches between stretch and compression changes
//! its compliance between iterations, and the stale matrix then overshot — the 16-segment
//! cantilever blew up within two frames at 8 × 2 and within one at 20 × 3. Factorised at
//! every iteration, its positions were the CPU global solve's to 10⁻⁸–10⁻⁷ m after three
//! frames, in a scratch comparison.)
//!
//! The results are not the CPU's bits (a different elimination, in `f32`): both reach the same
//! equilibrium, which is what the tests compare (a stiff cantilever's droop at 16, 32 and 64
//! segments, `tests/gpu/bending.rs`).
//!
//! # What it refuses
//!
//! What the CPU's refuses ([`hooke::solver::xpbd::global_cloth::refusal`]: PBD, a rigid cloth
//! constraint or hinge, several worlds), the Jacobi solve (its own iteration) and a cloth whose
//! band is wider than [`MAX_BAND`] scalars (particles more than [`MAX_BAND_PARTICLES`] apart in
//! the ordering): strips, ribbons, belts and narrow garment pieces fit; a wide sheet does not
//! (its band grows with its width, its factorisation with the cube of it) — use Gauss–Seidel
//! with tethers there, or the CPU. A device that stops long loops early (Mesa's llvmpipe:
//! [`crate::GpuContext::loop_budget`]) also refuses a cloth whose substitutions would pass the
//! budget (the factorisation is split into windows of columns, one dispatch each), and any
//! device a model whose scratch it cannot bind. A tear can make a cloth's band wider: the
//! torn model is checked again and a refusal then stops the run.
//!
//! # What it leaves out
//!
//! The solve reports the largest T(wᵢ + wⱼ)/L of its rows in tension and the turn limit's
//! rate, and the substeps' tension limit ([`crate::applies_tension_limit`]) raises the
//! substeps from them as on the CPU — where the limit applies on the GPU: with the health
//! record read after every frame (`hooke run`; not `hooke bench` nor the viewer, which run the
//! scene's substeps: a stretched cloth may then need more than it gets, and the blow-up check
//! stops it). With self-collision, where the GPU never applies the limit, the solve is refused
//! unless `max_substeps` = `substeps`.
//!
//! The CPU's step-quality safeguard (a Gauss–Seidel sweep and up to two more steps after a
//! step that left the residual larger) is not on the GPU, which takes one step per iteration:
//! give it **two iterations per substep**. At one, a strip 3 × 150 hanging from its top row at
//! 10 × 1 kept 4.5 % residual strain on lavapipe where the CPU kept 0.2 % (the run warns); at
//! two both agree to 10⁻⁶ m.

use crate::buffers::{self, Buffers, ColourSlot, UNIFORM_SLOT};
use crate::kernel::{Access::*, Bound, KernelSpec, Kernels, SharedLayouts};
use hooke::{BodyKind, Model};
use std::collections::VecDeque;
use wgpu::util::DeviceExt;

/// The file's pipelines and bindings, in binding order.
pub(crate) const SPEC: KernelSpec = KernelSpec {
    name: "global_cloth.wgsl",
    source: crate::shaders::GLOBAL_CLOTH,
    entries: &["rows", "assemble", "factor", "factor_narrow", "substitute", "substitute_narrow", "apply", "turns"],
    access: &[Read, ReadWrite, ReadWrite, ReadWrite, Read, ReadWrite, ReadWrite],
    slot: true,
};

const ROWS: usize = 0;
const ASSEMBLE: usize = 1;
const FACTOR: usize = 2;
const FACTOR_NARROW: usize = 3;
const SUBSTITUTE: usize = 4;
const SUBSTITUTE_NARROW: usize = 5;
const APPLY: usize = 6;
const TURNS: usize = 7;

/// Words of the header, per cloth, per row and per particle (`HEADER`, `SYS`, `ROW`, `PART` in
/// the kernel), and floats of scratch per row (`ROW_SCRATCH`).
const HEADER: usize = 8;
const SYS: usize = 8;
const ROW: usize = 12;
const PART: usize = 4;
const ROW_SCRATCH: usize = 16;
/// The threads of the kernel's narrow workgroups (`factor_narrow`, `substitute_narrow`), for a
/// device with a loop budget.
const NARROW: usize = 8;

/// Loop iterations of a narrow invocation per column of the factorisation (band width `bs`),
/// each loop counting one more for its exit.
fn factor_loops_per_column(bs: usize) -> usize {
    1 + (bs.div_ceil(NARROW) + 1) + ((bs * (bs + 1) / 2).div_ceil(NARROW) + 1)
}

/// Loop iterations of a narrow invocation for both substitutions of `n3` rows.
fn substitute_loops(n3: usize, bs: usize) -> usize {
    2 * (1 + n3 * (1 + bs.div_ceil(NARROW) + 1))
}

/// The widest band (scalars below the diagonal) a cloth may have. The kernel's loops take any
/// width; the bound keeps the cost of an iteration, n·bs²/2 for 3n scalar rows, to strips,
/// ribbons and small sheets (`tear_pull`'s 24 × 24 sheet, whose tears widen its band from 25
/// to 50 particles: at 41, the bound until 2026-12-07, its run stopped at its 47th frame).
pub const MAX_BAND: usize = 255;
/// The most particles apart two particles of one row may be in a cloth's ordering:
/// 3 × 84 + 2 = 254 ≤ [`MAX_BAND`].
pub const MAX_BAND_PARTICLES: usize = (MAX_BAND - 2) / 3;

/// One cloth's system on the host: its rows (distance constraints, then hinges) and its
/// particles in band order.
struct Cloth {
    name: String,
    /// (kind, index in its set, particles) of each row.
    rows: Vec<(u32, u32, Vec<u32>)>,
    /// The body's particles in band order.
    order: Vec<u32>,
    /// The band in particles (the largest distance in `order` between two particles of a row).
    band: usize,
}

/// The rows of the global solve of each cloth of `model` (the distance constraints in colours
/// `swept` leaves out, and with `with_hinges` the body's hinges), with the body's particles
/// in the narrowest banded order found.
fn cloths(model: &Model, swept: &[bool], with_hinges: bool) -> Vec<Cloth> {
    let set = model.distance();
    let dihedral = model.dihedral();
    let mut out = Vec::new();
    for (b, distance, hinges) in hooke::solver::xpbd::global_cloth::system_rows(model, swept, with_hinges) {
        let body = &model.bodies()[b];
        let range = body.particles.clone();
        let mut rows: Vec<(u32, u32, Vec<u32>)> = distance
            .iter()
            .map(|&k| {
                let c = set.constraints()[k as usize];
                (0u32, k, vec![c.i, c.j])
            })
            .collect();
        for &k in &hinges {
            rows.push((1, k, dihedral.constraints()[k as usize].particles.to_vec()));
        }
        let n = range.len();
        let local = |q: u32| (q - range.start) as usize;
        let mut adjacent = vec![Vec::new(); n];
        for (_, _, ps) in &rows {
            for &a in ps {
                for &c in ps {
                    if a != c {
                        adjacent[local(a)].push(local(c) as u32);
                    }
                }
            }
        }
        for list in &mut adjacent {
            list.sort_unstable();
            list.dedup();
        }
        // The narrowest of reverse Cuthill–McKee and, for a grid, its rows' and its columns'
        // order: breadth-first levels of a grid with both shear diagonals are L-shaped, and
        // without hinges RCM's band is nearly twice the short side's (17 against 10 for the
        // 81 × 9 strip's distance constraints alone).
        let band_of = |order: &[u32]| {
            let mut slot = vec![0usize; n];
            for (s, &p) in order.iter().enumerate() {
                slot[p as usize] = s;
            }
            let spans = rows.iter().map(|(_, _, ps)| {
                let s = ps.iter().map(|&q| slot[local(q)]);
                s.clone().max().unwrap_or(0) - s.min().unwrap_or(0)
            });
            spans.max().unwrap_or(0)
        };
        let mut candidates = vec![reverse_cuthill_mckee(&adjacent), (0..n as u32).collect()];
        if let BodyKind::ClothGrid { rows: r, columns: c } = body.kind
            && r * c <= n
        {
            let mut by_columns: Vec<u32> = (0..c).flat_map(|j| (0..r).map(move |i| (i * c + j) as u32)).collect();
            by_columns.extend((r * c) as u32..n as u32);
            candidates.push(by_columns);
        }
        let (band, order) =
            candidates.into_iter().map(|o| (band_of(&o), o)).min_by_key(|(b, _)| *b).unwrap_or_default();
        let order = order.iter().map(|&p| range.start + p).collect();
        out.push(Cloth { name: body.name.clone(), rows, order, band });
    }
    out
}

/// Reverse Cuthill–McKee: breadth-first from a pseudo-peripheral particle of each connected
/// part (the farthest from a particle of least degree, found twice), neighbours by increasing
/// degree, the whole order reversed. `adjacent`: each particle's neighbours, sorted.
fn reverse_cuthill_mckee(adjacent: &[Vec<u32>]) -> Vec<u32> {
    let n = adjacent.len();
    let mut placed = vec![false; n];
    let mut order = Vec::with_capacity(n);
    let bfs = |start: usize, placed: &[bool]| -> Vec<u32> {
        let mut seen = placed.to_vec();
        let mut queue = VecDeque::from([start]);
        seen[start] = true;
        let mut out = Vec::new();
        while let Some(p) = queue.pop_front() {
            out.push(p as u32);
            let mut next: Vec<u32> = adjacent[p].iter().copied().filter(|&q| !seen[q as usize]).collect();
            next.sort_by_key(|&q| (adjacent[q as usize].len(), q));
            for q in next {
                seen[q as usize] = true;
                queue.push_back(q as usize);
            }
        }
        out
    };
    while order.len() < n {
        let start = (0..n).filter(|&p| !placed[p]).min_by_key(|&p| (adjacent[p].len(), p)).unwrap_or(0);
        let mut root = start;
        for _ in 0..2 {
            let level = bfs(root, &placed);
            root = *level.last().unwrap_or(&(root as u32)) as usize;
        }
        for p in bfs(root, &placed) {
            placed[p as usize] = true;
            order.push(p);
        }
    }
    order.reverse();
    order
}

/// Why `model`'s cloths cannot be solved globally on a device (`loop_budget`: its
/// [`crate::GpuContext::loop_budget`]; `max_binding`: the largest storage buffer it binds, in
/// bytes), or `None`.
pub(crate) fn refusal(
    model: &Model,
    swept: &[bool],
    with_hinges: bool,
    loop_budget: Option<u32>,
    max_binding: u64,
) -> Option<String> {
    let cloths = cloths(model, swept, with_hinges);
    if cloths.iter().all(|c| c.band <= MAX_BAND_PARTICLES) {
        let layout = Layout::new(model, &cloths);
        let bytes = 4 * layout.scratch.max(layout.words.len()) as u64;
        if bytes > max_binding {
            return Some(format!(
                "the GPU's global cloth solve needs a buffer of {bytes} bytes for this model's cloths, more than the device binds ({max_binding}); use gauss-seidel, or the CPU"
            ));
        }
    }
    for c in cloths {
        if c.band > MAX_BAND_PARTICLES {
            return Some(format!(
                "cloth {:?} is too wide for the GPU's global cloth solve: two particles of one of its constraints are {} apart in the narrowest banded order found, at most {MAX_BAND_PARTICLES} fit (a grid strip or sheet up to about 80 particles across, or 40 with its hinges in the solve; a mesh whose particles have many neighbours, such as a fan, may not fit); use gauss-seidel with tethers, or the CPU",
                c.name, c.band
            ));
        }
        if let Some(budget) = loop_budget {
            let loops = substitute_loops(3 * c.order.len(), 3 * c.band + 2);
            if loops > budget as usize * 3 / 4 {
                return Some(format!(
                    "cloth {:?} is too large for the GPU's global cloth solve on this device, which stops a shader's loops after {budget} iterations (its substitutions take about {loops}, over the {} this solve allows itself); use gauss-seidel, the CPU, or a hardware GPU",
                    c.name,
                    budget as usize * 3 / 4
                ));
            }
        }
    }
    None
}

/// The `topology` words of `global_cloth.wgsl` (see the kernel for the layout) and the sizes
/// the dispatches need.
struct Layout {
    words: Vec<u32>,
    /// f32s of scratch.
    scratch: usize,
    cloths: u32,
    rows: u32,
    particles: u32,
    /// The most scalar rows of a cloth (3 per particle), and the widest band.
    longest: usize,
    widest: usize,
}

impl Layout {
    fn new(model: &Model, cloths: &[Cloth]) -> Layout {
        let rows: usize = cloths.iter().map(|c| c.rows.len()).sum();
        let particles: usize = cloths.iter().map(|c| c.order.len()).sum();
        let widest = cloths.iter().map(|c| 3 * c.band + 2).max().unwrap_or(0);
        let rows_at = HEADER + SYS * cloths.len();
        let parts_at = rows_at + ROW * rows;
        let touches_at = parts_at + PART * particles;
        let touches: usize = cloths.iter().flat_map(|c| c.rows.iter()).map(|r| r.2.len()).sum();
        let table_at = touches_at + 2 * touches;
        let mut words = vec![0u32; table_at];
        words[..7].copy_from_slice(&[
            cloths.len() as u32,
            rows as u32,
            particles as u32,
            rows_at as u32,
            parts_at as u32,
            touches_at as u32,
            table_at as u32,
        ]);
        for i in 1..=widest as u32 {
            for j in 1..=i {
                words.push((i << 16) | j);
            }
        }
        let set = model.distance();
        let dihedral = model.dihedral();
        let (mut row0, mut part0, mut touch0) = (0usize, 0usize, 0usize);
        let mut scratch = ROW_SCRATCH * rows;
        for (s, c) in cloths.iter().enumerate() {
            let n = c.order.len();
            let bs = 3 * c.band + 2;
            let band_at = scratch;
            let rhs_at = band_at + 3 * n * (bs + 1);
            let y_at = rhs_at + 3 * n;
            scratch = y_at + 3 * n;
            let h = HEADER + SYS * s;
            words[h..h + 6].copy_from_slice(&[
                part0 as u32,
                n as u32,
                bs as u32,
                band_at as u32,
                rhs_at as u32,
                y_at as u32,
            ]);
            let first = c.order.iter().min().copied().unwrap_or(0);
            let mut slot = vec![0u32; n];
            for (k, &p) in c.order.iter().enumerate() {
                slot[(p - first) as usize] = (part0 + k) as u32;
            }
            // Each particle's touches (row, slot in the row).
            let mut touch: Vec<Vec<(u32, u32)>> = vec![Vec::new(); n];
            for (r, (kind, index, ps)) in c.rows.iter().enumerate() {
                let mut w = [0u32; ROW];
                w[0] = *kind;
                w[1] = *index;
                for (u, &p) in ps.iter().enumerate() {
                    let part = slot[(p - first) as usize];
                    w[2 + u] = part;
                    touch[part as usize - part0].push(((row0 + r) as u32, u as u32));
                }
                w[6] = ps.len() as u32;
                w[7] = s as u32;
                if *kind == 0 {
                    let d = set.constraints()[*index as usize];
                    w[8] = d.rest_length.to_bits();
                    w[9] = d.compliance_stretch.to_bits();
                    w[10] = d.compliance_compression.to_bits();
                    w[11] = d.damping.to_bits();
                } else {
                    let hinge = dihedral.constraints()[*index as usize];
                    w[8] = hinge.rest_angle.to_bits();
                    w[9] = hinge.compliance.to_bits();
                    w[10] = hinge.compliance.to_bits();
                    w[11] = hinge.damping.to_bits();
                }
                let at = rows_at + ROW * (row0 + r);
                words[at..at + ROW].copy_from_slice(&w);
            }
            for (k, &p) in c.order.iter().enumerate() {
                let at = parts_at + PART * (part0 + k);
                let list = &touch[k];
                words[at..at + PART].copy_from_slice(&[p, touch0 as u32, (touch0 + list.len()) as u32, s as u32]);
                for (u, &(row, in_row)) in list.iter().enumerate() {
                    words[touches_at + 2 * (touch0 + u)] = row;
                    words[touches_at + 2 * (touch0 + u) + 1] = in_row;
                }
                touch0 += list.len();
            }
            row0 += c.rows.len();
            part0 += n;
        }
        Layout {
            words,
            scratch,
            cloths: cloths.len() as u32,
            rows: rows as u32,
            particles: particles as u32,
            longest: cloths.iter().map(|c| 3 * c.order.len()).max().unwrap_or(0),
            widest,
        }
    }
}

/// The kernel bound to a solver's buffers, with its topology and scratch.
pub(crate) struct GlobalCloth {
    bound: Bound,
    slot_group: wgpu::BindGroup,
    topology: wgpu::Buffer,
    cloths: u32,
    rows: u32,
    particles: u32,
    /// The cloths' rows and orders, from which [`GlobalCloth::update_parameters`] writes the
    /// topology again.
    systems: Vec<Cloth>,
    /// With a loop budget: the narrow entry points and the factorisation's windows of columns.
    windows: Option<u32>,
}

/// Slots (`UNIFORM_SLOT` bytes apart) of the uniform buffer: the first iteration of a substep,
/// the others, the whole band, then with a loop budget the factorisation's windows.
const FIRST: u32 = 0;
const LATER: u32 = 1;
const WHOLE: u32 = 2;
const WINDOWS: u32 = 3;

impl GlobalCloth {
    /// `None` for a model without cloth rows to solve globally. `swept`: the distance set's
    /// colours swept by Gauss–Seidel ([`hooke::solver::solver_swept_colours`]); `budget`: the
    /// device's loop budget ([`crate::GpuContext::loop_budget`]).
    pub fn new(
        kernels: &Kernels,
        device: &wgpu::Device,
        b: &Buffers,
        model: &Model,
        swept: &[bool],
        with_hinges: bool,
        budget: Option<u32>,
    ) -> Option<GlobalCloth> {
        let cloths = cloths(model, swept, with_hinges);
        if cloths.is_empty() {
            return None;
        }
        let layout = Layout::new(model, &cloths);
        let topology = buffers::storage(device, "hooke global cloth topology", &layout.words);
        let scratch = buffers::zeroed(device, "hooke global cloth scratch", 4 * layout.scratch.max(4) as u64);
        let kernel = kernels.get(&SPEC);
        let bound = kernel.bind(
            device,
            &[&b.position, &b.displacement, &b.lambda, &b.lambda_dihedral, &topology, &scratch, &b.tension],
        );
        let mut slots = vec![
            ColourSlot { first: 1, ..ColourSlot::default() },
            ColourSlot { first: 0, ..ColourSlot::default() },
            ColourSlot { start: 0, count: u32::MAX, first: 0, _pad: 0 },
        ];
        let window = budget.map(|budget| (budget as usize * 3 / 4 / factor_loops_per_column(layout.widest)).max(1));
        if let Some(w) = window {
            for i in 0..layout.longest.div_ceil(w) {
                slots.push(ColourSlot { start: (i * w) as u32, count: w as u32, first: 0, _pad: 0 });
            }
        }
        let mut bytes = vec![0u8; slots.len() * UNIFORM_SLOT as usize];
        for (k, slot) in slots.iter().enumerate() {
            let at = k * UNIFORM_SLOT as usize;
            bytes[at..at + size_of::<ColourSlot>()].copy_from_slice(bytemuck::bytes_of(slot));
        }
        let uniform = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("hooke global cloth slots"),
            contents: &bytes,
            usage: wgpu::BufferUsages::UNIFORM,
        });
        let slot_group =
            SharedLayouts::uniform_group(device, &kernels.layouts.slot, &uniform, size_of::<ColourSlot>() as u64);
        Some(GlobalCloth {
            bound,
            slot_group,
            topology,
            cloths: layout.cloths,
            rows: layout.rows,
            particles: layout.particles,
            systems: cloths,
            windows: window.map(|w| layout.longest.div_ceil(w) as u32),
        })
    }

    /// Re-uploads the rows' rest values, compliances and damping after a material change.
    pub fn update_parameters(&self, queue: &wgpu::Queue, model: &Model) {
        let layout = Layout::new(model, &self.systems);
        queue.write_buffer(&self.topology, 0, bytemuck::cast_slice(&layout.words));
    }

    /// Records one global solve of every cloth — `first` on the first iteration of a substep
    /// (λ from 0).
    pub fn record(&self, pass: &mut wgpu::ComputePass<'_>, params: (&wgpu::BindGroup, u32), first: bool) {
        let group = self.bound.group();
        let slot = (&self.slot_group, if first { FIRST } else { LATER } * UNIFORM_SLOT as u32);
        self.bound.run_group(pass, ROWS, group, params, slot, self.rows);
        self.bound.run_group(pass, ASSEMBLE, group, params, slot, self.particles);
        let at = |k: u32| (&self.slot_group, k * UNIFORM_SLOT as u32);
        match self.windows {
            None => {
                self.bound.run_workgroups(pass, FACTOR, group, params, at(WHOLE), self.cloths);
                self.bound.run_workgroups(pass, SUBSTITUTE, group, params, slot, self.cloths);
            }
            Some(n) => {
                for i in 0..n {
                    self.bound.run_workgroups(pass, FACTOR_NARROW, group, params, at(WINDOWS + i), self.cloths);
                }
                self.bound.run_workgroups(pass, SUBSTITUTE_NARROW, group, params, slot, self.cloths);
            }
        }
        self.bound.run_group(pass, APPLY, group, params, slot, self.rows.max(self.particles));
        self.bound.run_group(pass, TURNS, group, params, slot, self.rows);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reverse Cuthill–McKee gives a long grid (with both shear diagonals) a band at most
    /// about twice its short side, where the row-major order along the long side would be as
    /// wide as the long side.
    #[test]
    fn a_long_grid_is_ordered_across_its_short_side() {
        let (w, l) = (5usize, 40usize);
        let id = |r: usize, c: usize| (r * l + c) as u32;
        let mut adjacent = vec![Vec::new(); w * l];
        for r in 0..w {
            for c in 0..l {
                for (dr, dc) in [(0, 1), (1, 0), (1, 1), (1, -1)] {
                    let (rr, cc) = (r + dr, c as i64 + dc);
                    if rr < w && (0..l as i64).contains(&cc) {
                        adjacent[id(r, c) as usize].push(id(rr, cc as usize));
                        adjacent[id(rr, cc as usize) as usize].push(id(r, c));
                    }
                }
            }
        }
        adjacent.iter_mut().for_each(|a| a.sort_unstable());
        let order = reverse_cuthill_mckee(&adjacent);
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..(w * l) as u32).collect::<Vec<_>>(), "a permutation");
        let mut slot = vec![0usize; w * l];
        for (s, &p) in order.iter().enumerate() {
            slot[p as usize] = s;
        }
        let band = (0..w * l).flat_map(|p| adjacent[p].iter().map(move |&q| (p, q as usize)));
        let band = band.map(|(p, q)| slot[p].abs_diff(slot[q])).max().unwrap();
        assert!(band <= 2 * w, "band {band} for a grid {w} wide (row-major along it: {l})");
    }

    /// The 81 × 9 strip of the cantilever: its distance constraints alone are ordered across
    /// the strip (band 10, where reverse Cuthill–McKee gives 17), and with its hinges the
    /// narrowest order gives 17 (reverse Cuthill–McKee's 18 before the rows' orders were tried).
    #[test]
    fn a_strip_takes_its_narrowest_order() {
        let mut g = hooke::ClothGrid::new("strip", 81, 9, 0.00625);
        g.bending = hooke::Bending::Angle;
        let mut b = hooke::ModelBuilder::new();
        b.add_cloth_grid(&g).unwrap();
        let model = b.finalize().unwrap();
        let swept = vec![false; model.distance().colour_ranges().len()];
        let bands = [false, true].map(|hinges| cloths(&model, &swept, hinges)[0].band);
        assert_eq!(bands, [10, 17]);
    }
}
