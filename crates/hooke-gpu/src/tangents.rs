//! Vertex tangents on the GPU (`tangents.wgsl`), for models with UVs
//! ([`hooke::Model::particle_uv`]).
//!
//! The tangent of a vertex is the direction of increasing texture coordinate u on the surface,
//! the first axis of the tangent space that normal maps are expressed in. Per triangle,
//! position is a linear function of (u, v); its derivative ∂x/∂u = (t₂e₁ − t₁e₂)/r, with e₁, e₂
//! the edges from vertex 0, (s₁, t₁), (s₂, t₂) their UV differences and r = s₁t₂ − s₂t₁, is
//! weighted by the triangle's area and summed at its three vertices; the sum is made
//! orthogonal to the vertex normal (Gram–Schmidt) and normalised (Lengyel 2001, "Computing
//! tangent space basis vectors for an arbitrary mesh"). Triangles with a zero UV area are
//! skipped. [`hooke::surface::vertex_tangents`] is the CPU reference.
//!
//! As for the normals, one thread per triangle scatters with fixed-point `atomicAdd` (no float
//! atomics, deterministic), and a second kernel per particle converts back, orthogonalises
//! against the normal just computed, normalises and clears. The scale S comes from the rest
//! mesh: with L the largest rest |A ∂x/∂u| and V the largest number of triangles at one
//! vertex, S = (2³¹−1)/(64·V·L), so a vertex sum stays in range while the cloth stretches up to
//! fourfold (A ∂x/∂u grows with the cube of the stretch); each contribution is clamped to
//! ±(2³¹−1)/V beyond that.

use crate::buffers::Buffers;
use crate::kernel::{Access::*, Bound, KernelSpec, Kernels};
use rayon::prelude::*;

/// The file's pipelines and bindings, in binding order.
pub(crate) const SPEC: KernelSpec = KernelSpec {
    name: "tangents.wgsl",
    source: crate::shaders::TANGENTS,
    entries: &["accumulate", "finish"],
    access: &[Read, Read, Read, ReadWrite, Read, ReadWrite],
    slot: false,
};

/// The tangent kernels.
pub(crate) struct Tangents(Bound);

impl Tangents {
    pub fn new(kernels: &Kernels, device: &wgpu::Device, b: &Buffers) -> Tangents {
        Tangents(
            kernels
                .get(&SPEC)
                .bind(device, &[&b.position, &b.triangles, &b.uv, &b.tangent_accumulator, &b.normal, &b.tangent]),
        )
    }

    /// Records both passes (after the normals).
    pub fn record(&self, pass: &mut wgpu::ComputePass<'_>, params: (&wgpu::BindGroup, u32), n: u32, triangles: u32) {
        self.0.run(pass, 0, params, triangles);
        self.0.run(pass, 1, params, n);
    }
}

/// The UVs as uploaded: (0, 0) for particles without one, which makes their triangles'
/// UV area zero, so they are skipped.
pub(crate) fn device_uvs(uv: &[glam::Vec2]) -> Vec<[f32; 2]> {
    uv.iter().map(|t| if t.is_finite() { t.to_array() } else { [0.0; 2] }).collect()
}

/// Fixed-point scale S and per-contribution clamp (see the module docs), given the mesh's
/// [`largest_valence`](crate::normals::largest_valence).
pub(crate) fn fixed_point_scale_at(model: &hooke::Model, valence: f32) -> (f32, f32) {
    let max = i32::MAX as f32;
    let clamp = (max / valence).floor();
    let Some(uv) = model.particle_uv() else { return (1.0, clamp) };
    let x = model.particle_position();
    // (Largest of each thread's largest: the same maximum in any order.)
    let largest = model
        .triangles()
        .par_iter()
        .filter_map(|t| hooke::surface::triangle_tangent(t.map(|i| x[i as usize]), t.map(|i| uv[i as usize])))
        .map(|d| d.length())
        .reduce(|| 0.0f32, f32::max);
    if largest <= 0.0 || !largest.is_finite() {
        return (1.0, clamp);
    }
    (max / (64.0 * valence * largest), clamp)
}
