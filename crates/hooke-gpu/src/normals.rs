//! Vertex normals on the GPU (`normals.wgsl`; article §6).
//!
//! A vertex normal is the normalised sum of the face normals around it, each weighted by its
//! triangle's area: n_v ∝ Σ_t (x₁−x₀)×(x₂−x₀) (the cross product has length 2A). One thread
//! per triangle scatters its face normal to its three vertices. WebGPU has no float atomics
//! without an optional feature, so the sums are kept in fixed point: each component is
//! multiplied by a scale S, rounded to an `i32` and added with `atomicAdd`. Integer addition is
//! associative, so the result does not depend on thread order — unlike float atomics, it is
//! deterministic. A second kernel converts back, normalises and clears the sums.
//!
//! S is chosen from the rest mesh: with L the largest rest |(x₁−x₀)×(x₂−x₀)| and V the largest
//! number of triangles at one vertex, S = (2³¹−1)/(16·V·L), so a vertex sum stays in range
//! even if the triangles grow sixteen-fold in area; each contribution is also clamped to
//! ±(2³¹−1)/V so that a wildly stretched mesh saturates instead of wrapping around. The
//! resolution is then about 16·V·L/2³¹, a relative error near 10⁻⁷ of the largest face.

use crate::buffers::Buffers;
use crate::kernel::{Access::*, Bound, KernelSpec, Kernels};
use rayon::prelude::*;

/// The file's pipelines and bindings, in binding order.
pub(crate) const SPEC: KernelSpec = KernelSpec {
    name: "normals.wgsl",
    source: crate::shaders::NORMALS,
    entries: &["accumulate", "normalise"],
    access: &[Read, Read, ReadWrite, ReadWrite],
    slot: false,
};

/// The normal kernels.
pub(crate) struct Normals(Bound);

impl Normals {
    pub fn new(kernels: &Kernels, device: &wgpu::Device, b: &Buffers) -> Normals {
        Normals(kernels.get(&SPEC).bind(device, &[&b.position, &b.triangles, &b.normal_accumulator, &b.normal]))
    }

    /// Records both passes.
    pub fn record(&self, pass: &mut wgpu::ComputePass<'_>, params: (&wgpu::BindGroup, u32), n: u32, triangles: u32) {
        self.0.run(pass, 0, params, triangles);
        self.0.run(pass, 1, params, n);
    }
}

/// Fixed-point scale S and per-contribution clamp for a mesh (see the module docs), given its
/// [`largest_valence`].
pub(crate) fn fixed_point_scale_at(model: &hooke::Model, valence: f32) -> (f32, f32) {
    let x = model.particle_position();
    // (Largest of each thread's largest: the same maximum in any order.)
    let largest = model
        .triangles()
        .par_iter()
        .map(|t| {
            let [a, b, c] = t.map(|i| x[i as usize]);
            (b - a).cross(c - a).length()
        })
        .reduce(|| 0.0f32, f32::max);
    if largest <= 0.0 || !largest.is_finite() {
        return (1.0, i32::MAX as f32 / valence);
    }
    let max = i32::MAX as f32;
    (max / (16.0 * valence * largest), (max / valence).floor())
}

/// The most triangles around one particle of `model` (at least 1).
pub(crate) fn largest_valence(model: &hooke::Model) -> f32 {
    (0..model.particle_count()).into_par_iter().map(|p| model.particle_triangles(p).len()).max().unwrap_or(0).max(1)
        as f32
}
