//! Device buffers and their host-side record types (`#[repr(C)]`, [`bytemuck::Pod`]).
//!
//! Each record type mirrors a WGSL struct field for field; the layout tests at the bottom pin
//! their sizes. Per-particle data is split by access pattern (article §5.4): positions with
//! their inverse masses as one 16-byte `vec4` per particle (x⁰ at the start of a substep, w in
//! the last lane) — the buffer a renderer binds as its vertex buffer — the substep
//! displacements d in a second buffer, velocities in a third, so that each kernel streams only
//! what it needs, always as aligned 16-byte loads.

use crate::context::GpuError;
use bytemuck::{Pod, Zeroable};
use rayon::prelude::*;

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
    pub world_count: u32,
    pub tear_flag_strain: f32,
    /// (WGSL rounds the struct's size up to its 16-byte alignment.)
    pub _pad: [u32; 2],
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

/// A pin; `Pin` in `predict.wgsl`. `start` is written on the device at the start of a frame.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub(crate) struct GpuPin {
    pub particle: u32,
    pub has_target: u32,
    pub _pad: [u32; 2],
    /// Where the pin must be at the end of the frame (m); "target" is a reserved word in WGSL.
    pub goal: [f32; 4],
    pub start: [f32; 4],
}

/// A collider shape with its friction; `Collider` in `collide.wgsl`. `origin` is the point
/// it turns about ([`hooke::collision::Shape::origin`]).
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
    pub origin: [f32; 4],
    /// A distance grid's nodes per axis and its first value in [`Buffers::sdf`].
    pub grid: [u32; 4],
}

/// A collider's placement in one substep ([`hooke::collision::ColliderPlacement`]);
/// `Placement` in `collide.wgsl`. `translation_end[3]` is 1 when the collider is rotated
/// (then the columns of its rotation matrices at the end and the start of the substep apply),
/// else 0. `bound_min`/`bound_max`: the box it sweeps in the substep
/// ([`ColliderPlacement::swept_bounds`](hooke::collision::ColliderPlacement::swept_bounds)),
/// `bound_min[3]` = 1 when it has one (0: unbounded, a plane).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub(crate) struct Placement {
    pub translation_end: [f32; 4],
    pub displacement: [f32; 4],
    pub rotation_end: [[f32; 4]; 3],
    pub rotation_start: [[f32; 4]; 3],
    pub bound_min: [f32; 4],
    pub bound_max: [f32; 4],
}

impl Placement {
    pub fn new(p: &hooke::collision::ColliderPlacement, shape: &hooke::collision::Shape) -> Placement {
        let v = |x: glam::Vec3, w: f32| x.extend(w).to_array();
        let m = |r: &glam::Mat3| [v(r.x_axis, 0.0), v(r.y_axis, 0.0), v(r.z_axis, 0.0)];
        Placement {
            translation_end: v(p.translation_end, if p.rotated { 1.0 } else { 0.0 }),
            displacement: v(p.displacement, 0.0),
            rotation_end: m(&p.rotation_end),
            rotation_start: m(&p.rotation_start),
            bound_min: p.swept_bounds(shape).map_or([0.0; 4], |[lo, _]| v(lo, 1.0)),
            bound_max: p.swept_bounds(shape).map_or([0.0; 4], |[_, hi]| v(hi, 0.0)),
        }
    }
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
    pub particle_contacts: u32,
    pub tear: u32,
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
    /// The model's distance constraints ([`hooke::DistanceConstraint`] records as they are),
    /// sorted by colour.
    pub constraints: wgpu::Buffer,
    /// Indices of the structural constraints (for the strain check).
    pub structural: wgpu::Buffer,
    /// How many structural constraints `structural` lists.
    pub structural_count: u32,
    /// λ per constraint.
    pub lambda: wgpu::Buffer,
    /// The model's cloth hinges ([`hooke::DihedralBending`] records as they are), sorted by
    /// colour; 16 zero bytes without any.
    pub dihedral: wgpu::Buffer,
    /// λ per hinge.
    pub lambda_dihedral: wgpu::Buffer,
    /// The model's rope joints ([`hooke::RopeBending`] records as they are), sorted by colour.
    pub rope_bending: wgpu::Buffer,
    /// λ per rope joint.
    pub lambda_rope_bending: wgpu::Buffer,
    /// Pins, capacity one per particle.
    pub pins: wgpu::Buffer,
    /// Colliders.
    pub colliders: wgpu::Buffer,
    /// Collider placements, `substeps × colliders`, rewritten each frame.
    pub placements: wgpu::Buffer,
    /// The worlds' ranges, gravity and per-substep wind (`worlds.rs`), rewritten each frame
    /// when there are several.
    pub worlds: wgpu::Buffer,
    /// The mesh colliders' signed distance grids, one after another (`f32`, x fastest); 16
    /// zero bytes without any.
    pub sdf: wgpu::Buffer,
    /// Triangles as three `u32` each; `INDEX` usage too, for drawing.
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
    /// The frame's largest T(wᵢ + wⱼ)/L (1/s²) of a rope segment in tension, as f32 bits in a
    /// u32 (`rope_solver.wgsl`), for the tension limit; 16 bytes.
    pub tension: wgpu::Buffer,
    /// Per-substep [`Params`], [`UNIFORM_SLOT`] apart (capacity: the settings' substeps, or
    /// `max_substeps` where the tension limit applies).
    pub params: wgpu::Buffer,
    /// Per-(colour, first iteration) [`ColourSlot`]s, [`UNIFORM_SLOT`] apart: the distance
    /// set's colours, then the hinges', then the rope joints'.
    pub colours: wgpu::Buffer,
    /// Start-of-frame copies of positions and velocities (only with a health check after
    /// every frame, which restores them on a blow-up).
    pub snapshot: Option<(wgpu::Buffer, wgpu::Buffer)>,
    /// Host-visible buffer for read-back.
    pub staging: wgpu::Buffer,
}

/// Bytes of one `vec4<f32>` record.
pub(crate) const VEC4: u64 = 16;

/// What [`Buffers::new`] takes from a solver's buffers when it moves onto a model torn from
/// that solver's model ([`crate::patch`]).
pub(crate) struct Before<'a> {
    /// The solver's buffers, holding `model`'s records.
    pub buffers: &'a Buffers,
    /// The solver's model.
    pub model: &'a hooke::Model,
    /// The runs of constraint records the tear copied ([`hooke::tearing::Torn::copied`]).
    pub copied: &'a hooke::tearing::CopiedRuns,
    /// Records the device copies of the runs that hold; submitted before the buffers are used.
    pub encoder: &'a mut wgpu::CommandEncoder,
}

impl Buffers {
    /// Every buffer of a solver of `model` with `substeps` substeps: the model's data uploaded,
    /// the state at `state`'s positions and velocities (the model's initial ones without),
    /// scratch zeroed. With `snapshot`, the start-of-frame copies for restoring after a
    /// blow-up. With `before`, the distance constraints and hinges are patched from those
    /// buffers, and the inverse masses, radii, triangles, texture coordinates and triangles
    /// around each particle kept from them where their records are the same
    /// ([`crate::patch`]).
    ///
    /// # Errors
    /// [`GpuError::TooLarge`] if a buffer exceeds the device's limits.
    pub fn new(
        device: &wgpu::Device,
        model: &hooke::Model,
        substeps: u32,
        snapshot: bool,
        jacobi: bool,
        state: Option<&hooke::State>,
        mut before: Option<Before<'_>>,
    ) -> Result<Buffers, GpuError> {
        let n = model.particle_count();
        let set = model.distance();
        let limits = device.limits();
        let sdf = sdf_values(model);
        let largest = [
            ("the particle positions", n as u64 * VEC4 * 2),
            ("the constraints", set.len() as u64 * size_of::<hooke::DistanceConstraint>() as u64),
            ("the hinges", model.dihedral().len() as u64 * size_of::<hooke::DihedralBending>() as u64),
            ("the rope joints", model.rope_bending().len() as u64 * size_of::<hooke::RopeBending>() as u64),
            ("the normal accumulator", n as u64 * 12),
            ("the Jacobi adjacency", if jacobi { (n as u64 + 1 + 2 * set.len() as u64) * 4 } else { 0 }),
            ("the colliders' distance grids", 4 * sdf.len() as u64),
        ];
        for (what, needed) in largest {
            // (u32 indices address at most 2³² words.)
            let limit = limits.max_storage_buffer_binding_size.min(limits.max_buffer_size).min(4 * u32::MAX as u64);
            if needed > limit {
                return Err(GpuError::TooLarge { what, needed, limit });
            }
        }
        let inv_mass = model.particle_inv_mass();
        let (x, v) = state.map_or((model.particle_position(), model.particle_velocity()), |s| {
            (&s.particle_position[..], &s.particle_velocity[..])
        });
        let (position, velocity) = (position_records(x, inv_mass), velocity_records(v));
        let colliders = collider_records(model);
        let structural = structural_constraints(model);
        let (offsets, around) = model.particle_triangle_adjacency();
        // UVs of a model with triangles to take tangents of; empty otherwise.
        let uv = model.particle_uv().filter(|_| !model.triangles().is_empty()).unwrap_or(&[]);
        let v4 = |count: usize| count as u64 * VEC4;
        let staging = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("hooke staging"),
            size: (2 * v4(n) + size_of::<HealthRecord>() as u64).max(16),
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let uniform = |label: &str, size: u64| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: size.max(UNIFORM_SLOT),
                usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        };
        let snapshot =
            snapshot.then(|| (zeroed(device, "hooke snapshot x", v4(n)), zeroed(device, "hooke snapshot v", v4(n))));
        let substeps = substeps as u64;
        let colour_count =
            (set.colour_count() + model.dihedral().colour_count() + model.rope_bending().colour_count()) as u64;
        // The constraint sets: patched from the buffers before, or uploaded.
        let (constraints, dihedral) = match before.as_mut() {
            Some(b) => (
                crate::patch::storage_patched(
                    device,
                    b.encoder,
                    "hooke constraints",
                    set.constraints(),
                    b.model.distance().constraints(),
                    &b.buffers.constraints,
                    &b.copied.distance,
                    wgpu::BufferUsages::empty(),
                ),
                crate::patch::storage_patched(
                    device,
                    b.encoder,
                    "hooke hinges",
                    model.dihedral().constraints(),
                    b.model.dihedral().constraints(),
                    &b.buffers.dihedral,
                    &b.copied.dihedral,
                    wgpu::BufferUsages::empty(),
                ),
            ),
            None => (
                storage(device, "hooke constraints", set.constraints()),
                storage(device, "hooke hinges", model.dihedral().constraints()),
            ),
        };
        // The lists a tear changes only at split particles (and at the copies, added at the end
        // of their body): kept from the buffers before where their records are the same.
        let device_uv = crate::tangents::device_uvs(uv);
        let (inv_mass, radius, triangles, particle_triangles, uv) = match before.as_mut() {
            Some(b) => {
                use crate::patch::{csr_runs, same_index, storage_patched};
                let old = b.model;
                let old_uv = crate::tangents::device_uvs(
                    old.particle_uv().filter(|_| !old.triangles().is_empty()).unwrap_or(&[]),
                );
                let none = wgpu::BufferUsages::empty();
                let per_particle = same_index(old.particle_count(), n);
                (
                    storage_patched(
                        device,
                        b.encoder,
                        "hooke inv_mass",
                        inv_mass,
                        old.particle_inv_mass(),
                        &b.buffers.inv_mass,
                        &per_particle,
                        none,
                    ),
                    storage_patched(
                        device,
                        b.encoder,
                        "hooke radius",
                        model.particle_radius(),
                        old.particle_radius(),
                        &b.buffers.radius,
                        &per_particle,
                        none,
                    ),
                    storage_patched(
                        device,
                        b.encoder,
                        "hooke triangles",
                        model.triangles(),
                        old.triangles(),
                        &b.buffers.triangles,
                        &same_index(old.triangles().len(), model.triangles().len()),
                        wgpu::BufferUsages::INDEX,
                    ),
                    storage_patched(
                        device,
                        b.encoder,
                        "hooke particle triangles",
                        around,
                        old.particle_triangle_adjacency().1,
                        &b.buffers.particle_triangles,
                        &csr_runs(old.particle_triangle_adjacency().0, offsets),
                        none,
                    ),
                    storage_patched(
                        device,
                        b.encoder,
                        "hooke uv",
                        &device_uv,
                        &old_uv,
                        &b.buffers.uv,
                        &same_index(old_uv.len(), device_uv.len()),
                        none,
                    ),
                )
            }
            None => (
                storage(device, "hooke inv_mass", inv_mass),
                storage(device, "hooke radius", model.particle_radius()),
                storage_with(device, "hooke triangles", model.triangles(), wgpu::BufferUsages::INDEX),
                storage(device, "hooke particle triangles", around),
                storage(device, "hooke uv", &device_uv),
            ),
        };
        Ok(Buffers {
            position: storage_with(device, "hooke position", &position, wgpu::BufferUsages::VERTEX),
            displacement: zeroed(device, "hooke displacement", v4(n)),
            velocity: storage(device, "hooke velocity", &velocity),
            inv_mass,
            radius,
            force: zeroed(device, "hooke force", v4(n)),
            constraints,
            structural: storage(device, "hooke structural", &structural),
            structural_count: structural.len() as u32,
            lambda: zeroed(device, "hooke lambda", 4 * set.len() as u64),
            dihedral,
            lambda_dihedral: zeroed(device, "hooke hinge lambda", 4 * model.dihedral().len() as u64),
            rope_bending: storage(device, "hooke rope joints", model.rope_bending().constraints()),
            lambda_rope_bending: zeroed(device, "hooke rope joint lambda", 4 * model.rope_bending().len() as u64),
            pins: zeroed(device, "hooke pins", n as u64 * size_of::<GpuPin>() as u64),
            colliders: storage(device, "hooke colliders", &colliders),
            sdf: storage(device, "hooke sdf", &sdf),
            placements: zeroed(
                device,
                "hooke placements",
                substeps * colliders.len().max(1) as u64 * size_of::<Placement>() as u64,
            ),
            worlds: storage(device, "hooke worlds", &crate::worlds::records(model, substeps as u32, None)),
            triangles,
            triangle_force: zeroed(device, "hooke triangle force", v4(model.triangles().len())),
            particle_triangle_offsets: storage(device, "hooke particle triangle offsets", offsets),
            particle_triangles,
            normal_accumulator: zeroed(device, "hooke normal accumulator", 12 * n as u64),
            normal: zeroed_with(device, "hooke normal", v4(n), wgpu::BufferUsages::VERTEX),
            uv,
            tangent_accumulator: zeroed(device, "hooke tangent accumulator", 12 * device_uv.len() as u64),
            tangent: zeroed_with(device, "hooke tangent", v4(device_uv.len()), wgpu::BufferUsages::VERTEX),
            health: zeroed(device, "hooke health", size_of::<HealthRecord>() as u64),
            tension: zeroed(device, "hooke rope tension", 16),
            params: uniform("hooke params", substeps * UNIFORM_SLOT),
            colours: uniform("hooke colours", 2 * colour_count * UNIFORM_SLOT),
            snapshot,
            staging,
        })
    }

    /// Uploads the parameters a material change can alter — the constraints' compliances and
    /// damping, inverse masses, radii, collider friction — for a model of the same topology
    /// (through the queue: they apply from the next submission on).
    pub fn update_parameters(&self, queue: &wgpu::Queue, model: &hooke::Model) {
        let set = model.distance();
        if !set.is_empty() {
            queue.write_buffer(&self.constraints, 0, bytemuck::cast_slice(set.constraints()));
        }
        if !model.dihedral().is_empty() {
            queue.write_buffer(&self.dihedral, 0, bytemuck::cast_slice(model.dihedral().constraints()));
        }
        if !model.rope_bending().is_empty() {
            queue.write_buffer(&self.rope_bending, 0, bytemuck::cast_slice(model.rope_bending().constraints()));
        }
        queue.write_buffer(&self.inv_mass, 0, bytemuck::cast_slice(model.particle_inv_mass()));
        queue.write_buffer(&self.radius, 0, bytemuck::cast_slice(model.particle_radius()));
        let colliders = collider_records(model);
        if !colliders.is_empty() {
            queue.write_buffer(&self.colliders, 0, bytemuck::cast_slice(&colliders));
        }
    }
}

/// The position buffer's records of positions `x` (m) and inverse masses `w` (1/kg), one per
/// particle: (x, y, z, w).
pub(crate) fn position_records(x: &[glam::Vec3], w: &[f32]) -> Vec<[f32; 4]> {
    x.par_iter().zip(w).map(|(x, &w)| x.extend(w).to_array()).collect()
}

/// The velocity buffer's records of velocities `v` (m/s), one per particle: (x, y, z, 0).
pub(crate) fn velocity_records(v: &[glam::Vec3]) -> Vec<[f32; 4]> {
    v.par_iter().map(|v| v.extend(0.0).to_array()).collect()
}

/// Indices of the structural constraints (checked for runaway strain), in increasing order.
pub(crate) fn structural_constraints(model: &hooke::Model) -> Vec<u32> {
    let families = model.distance().families();
    hooke::parallel::filter_map_ordered(0..families.len() as u32, 1 << 15, |k| {
        (families[k as usize] == hooke::ConstraintFamily::Structural).then_some(k)
    })
}

/// The distance grids of the model's mesh colliders, one after another.
fn sdf_values(model: &hooke::Model) -> Vec<f32> {
    let mut values = Vec::new();
    for c in model.colliders() {
        if let hooke::collision::Shape::Sdf(grid) = &c.shape {
            values.extend_from_slice(grid.values());
        }
    }
    values
}

/// The device records of the model's colliders (mesh colliders point into [`sdf_values`]).
fn collider_records(model: &hooke::Model) -> Vec<GpuCollider> {
    let mut offset = 0u32;
    model
        .colliders()
        .iter()
        .map(|c| {
            let g = gpu_collider(c, offset);
            if let hooke::collision::Shape::Sdf(grid) = &c.shape {
                offset += grid.values().len() as u32;
            }
            g
        })
        .collect()
}

/// The device record of a collider; `offset`: where a mesh collider's grid starts in the
/// distance-grid buffer.
fn gpu_collider(c: &hooke::collision::Collider, offset: u32) -> GpuCollider {
    use hooke::collision::Shape;
    let v = |x: glam::Vec3| x.extend(0.0).to_array();
    let mut g = GpuCollider {
        static_friction: c.friction.static_coefficient,
        kinetic_friction: c.friction.kinetic_coefficient,
        origin: v(c.shape.origin()),
        ..GpuCollider::default()
    };
    match c.shape {
        Shape::Sdf(ref grid) => {
            g.kind = 4;
            g.a = grid.origin().extend(grid.cell()).to_array();
            g.b = [grid.inv_cell(), 0.0, 0.0, 0.0];
            let [nx, ny, nz] = grid.dims();
            g.grid = [nx, ny, nz, offset];
        }
        Shape::Plane { point, normal } => {
            g.kind = 0;
            g.a = v(point);
            g.b = v(normal);
        }
        Shape::Sphere { center, radius } => {
            g.kind = 1;
            g.a = v(center);
            g.radius = radius;
        }
        Shape::Capsule { a, b, radius } => {
            g.kind = 2;
            g.a = v(a);
            g.b = v(b);
            g.radius = radius;
        }
        Shape::Box { center, half_extents, rotation } => {
            g.kind = 3;
            g.a = v(center);
            g.b = v(half_extents);
            let m = glam::Mat3::from_quat(rotation);
            g.r = [v(m.x_axis), v(m.y_axis), v(m.z_axis)];
        }
    }
    g
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
    let size = bytes.len().max(16).next_multiple_of(4);
    // Filled through its mapping at creation (no copy of the data on the host besides that
    // one), the padding zeroed.
    let buffer = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: size as u64,
        usage: STORAGE | extra,
        mapped_at_creation: true,
    });
    {
        // (A buffer made mapped can be viewed whole until it is unmapped.)
        let mut view = buffer.get_mapped_range_mut(..).expect("a buffer mapped at creation");
        view.slice(..bytes.len()).copy_from_slice(bytes);
        view.slice(bytes.len()..).copy_from_slice(&[0; 16][..size - bytes.len()]);
    }
    buffer.unmap();
    buffer
}

/// A zeroed storage buffer of `size` bytes (at least 16; wgpu zeroes every buffer it makes).
pub(crate) fn zeroed(device: &wgpu::Device, label: &str, size: u64) -> wgpu::Buffer {
    zeroed_with(device, label, size, wgpu::BufferUsages::empty())
}

/// As [`zeroed`], with `extra` usages.
pub(crate) fn zeroed_with(device: &wgpu::Device, label: &str, size: u64, extra: wgpu::BufferUsages) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: size.max(16).next_multiple_of(4),
        usage: STORAGE | extra,
        mapped_at_creation: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::offset_of;

    /// The members of struct `name` in the WGSL `source`, as (name, byte offset), and its size,
    /// from naga's layout of the parsed module.
    fn wgsl_layout(source: &str, name: &str) -> (Vec<(String, u32)>, u32) {
        let module = naga::front::wgsl::parse_str(source).unwrap_or_else(|e| panic!("{}", e.emit_to_string(source)));
        for (_, ty) in module.types.iter() {
            if ty.name.as_deref() == Some(name)
                && let naga::TypeInner::Struct { members, span } = &ty.inner
            {
                let m = members.iter().map(|m| (m.name.clone().unwrap_or_default(), m.offset)).collect();
                return (m, *span);
            }
        }
        panic!("no struct {name} in the source");
    }

    /// Checks a WGSL struct against its Rust twin: the same members at the same offsets, the
    /// same size.
    fn check(source: &str, name: &str, rust: &[(&str, usize)], size: usize) {
        let (members, span) = wgsl_layout(source, name);
        let expected: Vec<(String, u32)> = rust.iter().map(|&(n, o)| (n.to_string(), o as u32)).collect();
        assert_eq!(members, expected, "{name}: members and offsets");
        assert_eq!(span as usize, size, "{name}: size");
    }

    /// Every record the host uploads has the WGSL twin's member offsets and size (naga's own
    /// layout of the kernel source, std430 for storage and uniform-compatible for `Params`).
    #[test]
    fn record_layouts_match_wgsl() {
        use crate::shaders::{COLLIDE, DISTANCE, PREDICT};
        macro_rules! fields {
            ($t:ty; $($f:ident),*) => { &[$((stringify!($f), offset_of!($t, $f))),*] };
        }
        check(
            PREDICT,
            "Params",
            fields!(Params; gravity, h, wind, inv_h, inv_h2, decay, frac, pbd_stiffness, particle_count, pin_count,
                collider_count, substep, triangle_count, method, last_substep, max_speed2, air_density,
                drag_coefficient, lift_coefficient, aero, normal_scale, normal_clamp, one_minus_frac, zero,
                max_strain, structural_count, tangent_scale, tangent_clamp, world_count, tear_flag_strain),
            size_of::<Params>(),
        );
        check(DISTANCE, "Colour", fields!(ColourSlot; start, count, first, _pad), size_of::<ColourSlot>());
        check(
            DISTANCE,
            "Constraint",
            fields!(hooke::DistanceConstraint; i, j, rest_length, compliance_stretch, compliance_compression, damping),
            size_of::<hooke::DistanceConstraint>(),
        );
        let p = offset_of!(hooke::DihedralBending, particles);
        let hinge: &[(&str, usize)] = &[
            ("p0", p),
            ("p1", p + 4),
            ("p2", p + 8),
            ("p3", p + 12),
            ("rest_angle", offset_of!(hooke::DihedralBending, rest_angle)),
            ("compliance", offset_of!(hooke::DihedralBending, compliance)),
            ("damping", offset_of!(hooke::DihedralBending, damping)),
        ];
        check(crate::shaders::DIHEDRAL, "Hinge", hinge, size_of::<hooke::DihedralBending>());
        let p = offset_of!(hooke::RopeBending, particles);
        let joint: &[(&str, usize)] = &[
            ("p0", p),
            ("p1", p + 4),
            ("p2", p + 8),
            ("compliance", offset_of!(hooke::RopeBending, compliance)),
            ("damping", offset_of!(hooke::RopeBending, damping)),
            ("_pad", offset_of!(hooke::RopeBending, _pad)),
        ];
        check(crate::shaders::ROPE_BENDING, "Joint", joint, size_of::<hooke::RopeBending>());
        let (pins, length) = (offset_of!(hooke::tethers::Tether, pins), offset_of!(hooke::tethers::Tether, length));
        let tether: &[(&str, usize)] = &[
            ("particle", offset_of!(hooke::tethers::Tether, particle)),
            ("count", offset_of!(hooke::tethers::Tether, count)),
            ("pin0", pins),
            ("pin1", pins + 4),
            ("length0", length),
            ("length1", length + 4),
        ];
        check(crate::shaders::TETHERS, "Tether", tether, size_of::<hooke::tethers::Tether>());
        check(PREDICT, "Pin", fields!(GpuPin; particle, has_target, _pad, goal, start), size_of::<GpuPin>());
        let r = offset_of!(GpuCollider, r);
        let collider: &[(&str, usize)] = &[
            ("kind", offset_of!(GpuCollider, kind)),
            ("static_friction", offset_of!(GpuCollider, static_friction)),
            ("kinetic_friction", offset_of!(GpuCollider, kinetic_friction)),
            ("radius", offset_of!(GpuCollider, radius)),
            ("a", offset_of!(GpuCollider, a)),
            ("b", offset_of!(GpuCollider, b)),
            ("r0", r),
            ("r1", r + 16),
            ("r2", r + 32),
            ("origin", offset_of!(GpuCollider, origin)),
            ("grid", offset_of!(GpuCollider, grid)),
        ];
        check(COLLIDE, "Collider", collider, size_of::<GpuCollider>());
        let (end, start) = (offset_of!(Placement, rotation_end), offset_of!(Placement, rotation_start));
        let placement: &[(&str, usize)] = &[
            ("translation_end", offset_of!(Placement, translation_end)),
            ("displacement", offset_of!(Placement, displacement)),
            ("rotation_end0", end),
            ("rotation_end1", end + 16),
            ("rotation_end2", end + 32),
            ("rotation_start0", start),
            ("rotation_start1", start + 16),
            ("rotation_start2", start + 32),
            ("bound_min", offset_of!(Placement, bound_min)),
            ("bound_max", offset_of!(Placement, bound_max)),
        ];
        check(COLLIDE, "Placement", placement, size_of::<Placement>());
        check(
            COLLIDE,
            "Health",
            fields!(HealthRecord; nonfinite, too_fast, contacts, overstrained, particle_contacts, tear),
            size_of::<HealthRecord>(),
        );
        use crate::spatial_hash::HashInfo;
        let hash = fields!(HashInfo; table_size, member_count, inv_cell, max_radius, block_count,
            depenetration_speed, skin, rebuild_limit2, list_capacity, cells_mode);
        let mut hash = hash.to_vec();
        hash.extend([("_pad1", 40), ("_pad2", 44), ("args", offset_of!(HashInfo, args))]);
        hash.push(("friction", size_of::<HashInfo>()));
        let (_, span) = wgsl_layout(crate::shaders::SPATIAL_HASH, "HashInfo");
        check(crate::shaders::SPATIAL_HASH, "HashInfo", &hash, span as usize);
        assert!(size_of::<Params>() as u64 <= UNIFORM_SLOT);
    }
}
