//! Device buffers and their host-side record types (`#[repr(C)]`, [`bytemuck::Pod`]).
//!
//! Each record type mirrors a WGSL struct field for field; the layout tests at the bottom pin
//! their sizes. Per-particle data is split by access pattern (article §5.4): positions with
//! their inverse masses as one 16-byte `vec4` per particle (x⁰ at the start of a substep, w in
//! the last lane) — the buffer a renderer binds as its vertex buffer — the substep
//! displacements d in a second buffer, velocities in a third, so that each kernel streams only
//! what it needs, always as aligned 16-byte loads.

use bytemuck::{Pod, Zeroable};
use wgpu::util::DeviceExt;

/// Uniform slots (per substep, per colour) are this far apart, the largest
/// `min_uniform_buffer_offset_alignment` wgpu allows.
pub(crate) const UNIFORM_SLOT: u64 = 256;

/// Per-substep constants, one [`UNIFORM_SLOT`] each; `Params` in `common.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub(crate) struct Params {
    pub gravity: [f32; 3],
    pub h: f32,
    pub wind: [f32; 3],
    pub inv_h: f32,
    pub inv_h2: f32,
    pub decay: f32,
    pub frac: f32,
    pub pbd_stiffness: f32,
    pub particle_count: u32,
    pub pin_count: u32,
    pub collider_count: u32,
    pub substep: u32,
    pub triangle_count: u32,
    pub method: u32,
    pub last_substep: u32,
    pub max_speed2: f32,
    pub air_density: f32,
    pub drag_coefficient: f32,
    pub lift_coefficient: f32,
    pub aero: u32,
    pub normal_scale: f32,
    pub normal_clamp: f32,
    pub one_minus_frac: f32,
    pub zero: u32,
    pub max_strain: f32,
    pub structural_count: u32,
    pub tangent_scale: f32,
    pub tangent_clamp: f32,
}

/// One colour of the constraint sweep; `Colour` in `distance.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub(crate) struct ColourSlot {
    pub start: u32,
    pub count: u32,
    pub first: u32,
    pub _pad: u32,
}

/// A distance constraint, 24 bytes; `Constraint` in `distance.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub(crate) struct GpuConstraint {
    pub i: u32,
    pub j: u32,
    pub rest_length: f32,
    pub compliance_stretch: f32,
    pub compliance_compression: f32,
    pub damping: f32,
}

/// A pin; `Pin` in `predict.wgsl`. `start` is written on the device at the start of a frame.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub(crate) struct GpuPin {
    pub particle: u32,
    pub has_target: u32,
    pub _pad: [u32; 2],
    pub target: [f32; 4],
    pub start: [f32; 4],
}

/// A collider shape with its friction; `Collider` in `collide.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub(crate) struct GpuCollider {
    pub kind: u32,
    pub static_friction: f32,
    pub kinetic_friction: f32,
    pub radius: f32,
    pub a: [f32; 4],
    pub b: [f32; 4],
    pub r: [[f32; 4]; 3],
}

/// A collider's placement in one substep; `Placement` in `collide.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub(crate) struct Placement {
    pub offset_end: [f32; 4],
    pub displacement: [f32; 4],
}

/// The blow-up record; `Health` in `health.wgsl` and `collide.wgsl`. Indices are stored as
/// `particle_count − index` (`constraint_count − index` for `overstrained`; 0 = none).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable, PartialEq, Eq)]
pub(crate) struct HealthRecord {
    pub nonfinite: u32,
    pub too_fast: u32,
    pub contacts: u32,
    pub overstrained: u32,
}

/// Every device buffer of one solver.
pub(crate) struct Buffers {
    /// x⁰ and w per particle (`vec4<f32>`); after a frame, the current positions.
    pub position: wgpu::Buffer,
    /// d per particle (`vec4<f32>`), zero between substeps.
    pub displacement: wgpu::Buffer,
    /// v per particle (`vec4<f32>`).
    pub velocity: wgpu::Buffer,
    /// The model's inverse masses (`f32`).
    pub inv_mass: wgpu::Buffer,
    /// Collision radii (`f32`).
    pub radius: wgpu::Buffer,
    /// External (aerodynamic) force per particle (`vec4<f32>`).
    pub force: wgpu::Buffer,
    /// Constraints sorted by colour.
    pub constraints: wgpu::Buffer,
    /// Indices of the structural constraints (for the strain check).
    pub structural: wgpu::Buffer,
    /// λ per constraint.
    pub lambda: wgpu::Buffer,
    /// Pins, capacity one per particle.
    pub pins: wgpu::Buffer,
    /// Colliders.
    pub colliders: wgpu::Buffer,
    /// Collider placements, `substeps × colliders`, rewritten each frame.
    pub placements: wgpu::Buffer,
    /// Triangles as three `u32` each.
    pub triangles: wgpu::Buffer,
    /// Force share per triangle (`vec4<f32>`).
    pub triangle_force: wgpu::Buffer,
    /// CSR offsets of the triangles around each particle (`particle_count + 1`).
    pub particle_triangle_offsets: wgpu::Buffer,
    /// CSR list of the triangles around each particle.
    pub particle_triangles: wgpu::Buffer,
    /// Fixed-point normal sums, three `i32` per particle.
    pub normal_accumulator: wgpu::Buffer,
    /// Unit vertex normals (`vec4<f32>`, w = 0).
    pub normal: wgpu::Buffer,
    /// UV per particle (`vec2<f32>`; (0, 0) where the model has none); 16 bytes without UVs.
    pub uv: wgpu::Buffer,
    /// Fixed-point tangent sums, three `i32` per particle; 16 bytes without UVs.
    pub tangent_accumulator: wgpu::Buffer,
    /// Unit vertex tangents (`vec4<f32>`, w = 0); 16 bytes without UVs.
    pub tangent: wgpu::Buffer,
    /// The blow-up record.
    pub health: wgpu::Buffer,
    /// Per-substep [`Params`], [`UNIFORM_SLOT`] apart.
    pub params: wgpu::Buffer,
    /// Per-(colour, first iteration) [`ColourSlot`]s, [`UNIFORM_SLOT`] apart.
    pub colours: wgpu::Buffer,
    /// Start-of-frame copies of positions and velocities (only with per-frame checks).
    pub snapshot: Option<(wgpu::Buffer, wgpu::Buffer)>,
    /// Host-visible buffer for read-back.
    pub staging: wgpu::Buffer,
}

/// Usage of every storage buffer: kernels read and write it, the host fills and reads it.
pub(crate) const STORAGE: wgpu::BufferUsages =
    wgpu::BufferUsages::STORAGE.union(wgpu::BufferUsages::COPY_DST).union(wgpu::BufferUsages::COPY_SRC);

/// A storage buffer holding `data`; at least one element and 16 bytes, since empty bindings
/// are not allowed.
pub(crate) fn storage<T: Pod>(device: &wgpu::Device, label: &str, data: &[T]) -> wgpu::Buffer {
    storage_with(device, label, data, wgpu::BufferUsages::empty())
}

/// As [`storage`], with `extra` usages (e.g. `VERTEX` for buffers a renderer binds directly).
pub(crate) fn storage_with<T: Pod>(
    device: &wgpu::Device,
    label: &str,
    data: &[T],
    extra: wgpu::BufferUsages,
) -> wgpu::Buffer {
    let one = [T::zeroed()];
    let bytes: &[u8] = bytemuck::cast_slice(if data.is_empty() { &one[..] } else { data });
    let mut padded = bytes.to_vec();
    padded.resize(bytes.len().max(16).next_multiple_of(4), 0);
    device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some(label),
        contents: &padded,
        usage: STORAGE | extra,
    })
}

/// A zeroed storage buffer of `size` bytes (at least 16).
pub(crate) fn zeroed(device: &wgpu::Device, label: &str, size: u64) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: size.max(16).next_multiple_of(4),
        usage: STORAGE,
        mapped_at_creation: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The host records have the sizes of their WGSL twins.
    #[test]
    fn record_layouts_match_wgsl() {
        assert_eq!(size_of::<Params>(), 128);
        assert_eq!(size_of::<ColourSlot>(), 16);
        assert_eq!(size_of::<GpuConstraint>(), 24);
        assert_eq!(size_of::<GpuPin>(), 48);
        assert_eq!(size_of::<GpuCollider>(), 96);
        assert_eq!(size_of::<Placement>(), 32);
        assert_eq!(size_of::<HealthRecord>(), 16);
        assert!(size_of::<Params>() as u64 <= UNIFORM_SLOT);
    }
}
