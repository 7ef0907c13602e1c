//! [`ModelBuilder`]: domain verbs that add cloths, ropes and colliders, then `finalize()`.

use super::constraint::{ConstraintFamily, ParticleConstraint};
use super::constraint_set::ConstraintSet;
use super::dihedral::DihedralBending;
use super::distance::DistanceConstraint;
use super::material::{BodyMaterial, Element, ElementStiffness, MassSource};
use super::rope_bending::RopeBending;
use super::{Air, Body, BodyKind, ClothGrid, ClothMesh, Model, Rope, World};
use crate::collision::{Collider, Shape};
use crate::error::{self, ModelError};
use glam::{Vec2, Vec3};
use rayon::prelude::*;

/// Default memory limit of a builder: 16 GiB.
pub const DEFAULT_MEMORY_LIMIT: u64 = 16 << 30;

/// Estimated bytes per particle over model, state, solver and tethers' scratch (measured: the
/// peak resident memory of `hooke bench grid:N` on one thread is 400·particles +
/// 96·constraints within 7 % at N = 300 and 600; it was twice the estimate of 192 and 48).
const BYTES_PER_PARTICLE: u128 = 400;
/// Estimated bytes per constraint over model, solver and colouring scratch (see above).
const BYTES_PER_CONSTRAINT: u128 = 96;
/// The bytes a model of `particles` particles and `constraints` constraints (distance,
/// hinge and rope-bending) is estimated to need over model, state and solver — the estimate
/// the builder compares with its memory limit — for a caller that sizes a model before
/// building it (e.g. copies of a scene packed into worlds).
pub fn estimated_bytes(particles: u128, constraints: u128) -> u128 {
    particles.saturating_mul(BYTES_PER_PARTICLE).saturating_add(constraints.saturating_mul(BYTES_PER_CONSTRAINT))
}

/// How many times its estimate a cloth that can tear holds: each tear makes the torn model
/// beside the old one, and the tethers keep a spare search (measured: `hooke bench cut:400
/// --tearing`, 323 MB at its peak for an estimate of 171 MB without this factor).
const TEARING_FACTOR: u128 = 2;

/// Handle of a body added to a [`ModelBuilder`]; its index in [`Model::bodies`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BodyId(pub usize);

/// The constraints of one type, with their families, elements and colours (all parallel),
/// before they become a [`ConstraintSet`].
#[derive(Debug)]
pub(crate) struct SetParts<T, E> {
    pub items: Vec<T>,
    pub families: Vec<ConstraintFamily>,
    /// Where each constraint's stiffness comes from: [`ElementStiffness`] in a body's parts,
    /// [`Element`] (with the body) in the builder.
    pub elements: Vec<E>,
    /// Colour of each constraint (a pattern for grids and ropes, greedy for meshes).
    pub colours: Vec<u32>,
}

impl<T, E> Default for SetParts<T, E> {
    fn default() -> Self {
        SetParts { items: Vec::new(), families: Vec::new(), elements: Vec::new(), colours: Vec::new() }
    }
}

impl<T, E> SetParts<T, E> {
    pub fn with_capacity(n: usize) -> Self {
        SetParts {
            items: Vec::with_capacity(n),
            families: Vec::with_capacity(n),
            elements: Vec::with_capacity(n),
            colours: Vec::with_capacity(n),
        }
    }

    pub fn push(&mut self, item: T, family: ConstraintFamily, element: E, colour: u32) {
        self.items.push(item);
        self.families.push(family);
        self.elements.push(element);
        self.colours.push(colour);
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }
}

impl<T> SetParts<T, Element> {
    /// Appends a body's constraints, its particles shifted by `p0`, its colours compacted and
    /// raised by `colour_base`. Bodies share no particles, so colour k of every body can go in
    /// global colour k; ropes take colours of their own (a base above every cloth colour), so
    /// that a colour holds either cloth or rope constraints and a solver may solve the ropes
    /// otherwise (the direct rope solver).
    fn append<const N: usize>(&mut self, body: u32, p0: u32, parts: &SetParts<T, ElementStiffness>, colour_base: u32)
    where
        T: ParticleConstraint<N>,
    {
        self.items.extend(parts.items.iter().map(|c| c.with_particles(c.particles().map(|i| i + p0))));
        self.families.extend_from_slice(&parts.families);
        self.elements.extend(parts.elements.iter().map(|&stiffness| Element { body, stiffness }));
        self.colours.extend(compact(&parts.colours).into_iter().map(|c| c + colour_base));
    }

    /// The coloured set over `n` particles, its colours numbered from 0 without gaps.
    fn build<const N: usize>(self, n: usize) -> Result<ConstraintSet<T>, ModelError>
    where
        T: ParticleConstraint<N>,
    {
        let colours = compact(&self.colours);
        ConstraintSet::build::<N>(n, self.items, self.families, self.elements, colours)
    }
}

/// One body's particles and constraints in local indices, before they are appended.
#[derive(Default)]
pub(crate) struct Parts {
    pub positions: Vec<Vec3>,
    pub velocities: Vec<Vec3>,
    pub masses: Vec<f32>,
    pub radii: Vec<f32>,
    /// Where each particle's mass comes from, parallel to `masses`.
    pub mass_sources: Vec<MassSource>,
    /// Distance constraints (structural, shear, bend springs).
    pub distance: SetParts<DistanceConstraint, ElementStiffness>,
    /// Dihedral bending of cloth hinges.
    pub dihedral: SetParts<DihedralBending, ElementStiffness>,
    /// Bending at rope joints.
    pub rope_bending: SetParts<RopeBending, ElementStiffness>,
    pub triangles: Vec<[u32; 3]>,
    /// Texture coordinates (u, v) per particle, if the body has them.
    pub uvs: Option<Vec<Vec2>>,
}

impl Parts {
    pub fn with_capacity(particles: usize, constraints: usize, triangles: usize) -> Parts {
        Parts {
            positions: Vec::with_capacity(particles),
            velocities: Vec::with_capacity(particles),
            masses: Vec::with_capacity(particles),
            mass_sources: Vec::with_capacity(particles),
            radii: Vec::with_capacity(particles),
            distance: SetParts::with_capacity(constraints),
            triangles: Vec::with_capacity(triangles),
            ..Parts::default()
        }
    }
}

/// Builds a [`Model`]. See the [module documentation](super).
///
/// ```
/// use hooke::{ModelBuilder, ClothGrid, Rope, collision::{Collider, Shape}};
/// use glam::Vec3;
/// let mut b = ModelBuilder::new();
/// let cloth = b.add_cloth_grid(&ClothGrid::new("cloth", 16, 16, 0.05)).unwrap();
/// b.add_rope(&Rope::straight("rope", Vec3::Y, Vec3::new(1.0, 1.0, 0.0), 20)).unwrap();
/// b.add_collider(Collider::new("ground", Shape::Plane { point: Vec3::ZERO, normal: Vec3::Y })).unwrap();
/// let model = b.finalize().unwrap();
/// assert_eq!(model.particle_count(), 16 * 16 + 20);
/// assert_eq!(model.bodies()[cloth.0].name, "cloth");
/// ```
#[derive(Debug)]
pub struct ModelBuilder {
    positions: Vec<Vec3>,
    velocities: Vec<Vec3>,
    masses: Vec<f32>,
    mass_sources: Vec<MassSource>,
    radii: Vec<f32>,
    distance: SetParts<DistanceConstraint, Element>,
    dihedral: SetParts<DihedralBending, Element>,
    rope_bending: SetParts<RopeBending, Element>,
    triangles: Vec<[u32; 3]>,
    /// UV per particle (NaN for particles of bodies without UVs).
    uvs: Vec<Vec2>,
    /// Whether any body has UVs.
    any_uv: bool,
    bodies: Vec<Body>,
    colliders: Vec<Collider>,
    /// The worlds so far; the last is open (its ranges end where the model does).
    worlds: Vec<World>,
    air: Air,
    memory_limit: u64,
    /// The estimate's share for tearing of the cloths added so far (bytes; see
    /// [`TEARING_FACTOR`]).
    tearing_bytes: u128,
}

impl Default for ModelBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl ModelBuilder {
    /// An empty builder with gravity (0, −9.81, 0) m/s², still air, and a 16 GiB memory limit.
    pub fn new() -> ModelBuilder {
        ModelBuilder {
            positions: Vec::new(),
            velocities: Vec::new(),
            masses: Vec::new(),
            mass_sources: Vec::new(),
            radii: Vec::new(),
            distance: SetParts::default(),
            dihedral: SetParts::default(),
            rope_bending: SetParts::default(),
            triangles: Vec::new(),
            uvs: Vec::new(),
            any_uv: false,
            bodies: Vec::new(),
            colliders: Vec::new(),
            worlds: vec![World { gravity: Vec3::new(0.0, -9.81, 0.0), particles: 0..0, bodies: 0..0, colliders: 0..0 }],
            air: Air::default(),
            memory_limit: DEFAULT_MEMORY_LIMIT,
            tearing_bytes: 0,
        }
    }

    /// Sets gravity (m/s²) of the current world (the first, unless [`add_world`](Self::add_world)
    /// was called).
    ///
    /// # Errors
    /// [`ModelError::Invalid`] if it is not finite.
    pub fn set_gravity(&mut self, gravity: Vec3) -> Result<&mut Self, ModelError> {
        error::finite_vec("model", "gravity", gravity)?;
        self.worlds.last_mut().expect("a builder has a world").gravity = gravity;
        Ok(self)
    }

    /// Starts a new world under `gravity` (m/s²) and returns its index: the bodies and
    /// colliders added from now on belong to it, and touch nothing of the other worlds —
    /// independent scenes solved in the same sweeps (issue #13). A world with no body is
    /// allowed.
    ///
    /// # Errors
    /// [`ModelError::Invalid`] if `gravity` is not finite.
    pub fn add_world(&mut self, gravity: Vec3) -> Result<u32, ModelError> {
        error::finite_vec("model", "gravity", gravity)?;
        self.close_world();
        let (p, b, c) = (self.positions.len() as u32, self.bodies.len() as u32, self.colliders.len() as u32);
        self.worlds.push(World { gravity, particles: p..p, bodies: b..b, colliders: c..c });
        Ok(self.worlds.len() as u32 - 1)
    }

    /// Ends the ranges of the current world where the model is now.
    fn close_world(&mut self) {
        let (p, b, c) = (self.positions.len() as u32, self.bodies.len() as u32, self.colliders.len() as u32);
        let w = self.worlds.last_mut().expect("a builder has a world");
        (w.particles.end, w.bodies.end, w.colliders.end) = (p, b, c);
    }

    /// Sets the air parameters.
    ///
    /// # Errors
    /// [`ModelError::Invalid`] if a value is negative or not finite.
    pub fn set_air(&mut self, air: Air) -> Result<&mut Self, ModelError> {
        error::non_negative("air", "density (kg/m³)", air.density)?;
        error::non_negative("air", "drag coefficient", air.drag_coefficient)?;
        error::non_negative("air", "lift coefficient", air.lift_coefficient)?;
        self.air = air;
        Ok(self)
    }

    /// Sets the memory limit (bytes) above which adding a body fails with
    /// [`ModelError::TooLarge`] instead of exhausting memory.
    pub fn set_memory_limit(&mut self, bytes: u64) -> &mut Self {
        self.memory_limit = bytes;
        self
    }

    /// Number of particles added so far.
    pub fn particle_count(&self) -> usize {
        self.positions.len()
    }

    /// Initial position (m) of a particle added so far. Panics if `particle` is out of range.
    pub fn particle_position(&self, particle: u32) -> Vec3 {
        self.positions[particle as usize]
    }

    /// A body added so far.
    pub fn body(&self, id: BodyId) -> &Body {
        &self.bodies[id.0]
    }

    /// Adds a rectangular cloth grid (structural, shear and bending families each optional).
    ///
    /// # Errors
    /// [`ModelError::Invalid`] for a grid smaller than 2×2, a spacing or material value out of
    /// range; [`ModelError::TooLarge`] if it would not fit the memory limit;
    /// [`ModelError::DuplicateName`].
    pub fn add_cloth_grid(&mut self, grid: &ClothGrid) -> Result<BodyId, ModelError> {
        let particles = grid.rows as u128 * grid.columns as u128;
        let tears = grid.material.tears();
        self.check_size(&format!("cloth {:?}", grid.name), particles, grid.constraint_count(), tears)?;
        grid.validate()?;
        let kind = BodyKind::ClothGrid { rows: grid.rows, columns: grid.columns };
        self.append(&grid.name, kind, BodyMaterial::Cloth(grid.material), grid.build())
    }

    /// Adds a rope of `rope.particles` particles along a polyline.
    ///
    /// # Errors
    /// [`ModelError::Invalid`] for fewer than 2 particles or points, a zero-length polyline or a
    /// material value out of range; [`ModelError::TooLarge`]; [`ModelError::DuplicateName`].
    pub fn add_rope(&mut self, rope: &Rope) -> Result<BodyId, ModelError> {
        let n = rope.particles as u128;
        self.check_size(&format!("rope {:?}", rope.name), n, 2 * n, false)?;
        rope.validate()?;
        self.append(&rope.name, BodyKind::Rope, BodyMaterial::Rope(rope.material), rope.build())
    }

    /// Adds a cloth made from a triangle mesh.
    ///
    /// # Errors
    /// [`ModelError::Invalid`] for an empty mesh, an index out of range, a degenerate
    /// triangle, an unused vertex or a material value out of range; [`ModelError::TooLarge`];
    /// [`ModelError::DuplicateName`].
    pub fn add_cloth_mesh(&mut self, mesh: &ClothMesh) -> Result<BodyId, ModelError> {
        let (n, t) = (mesh.positions.len() as u128, mesh.triangles.len() as u128);
        let tears = mesh.material.tears();
        self.check_size(&format!("cloth mesh {:?}", mesh.name), n, 3 * t, tears)?;
        mesh.validate()?;
        self.append(&mesh.name, BodyKind::ClothMesh, BodyMaterial::Cloth(mesh.material), mesh.build())
    }

    /// Adds a collider; returns its index.
    ///
    /// # Errors
    /// [`ModelError::Invalid`] for a non-positive radius or extent, a zero normal, a negative
    /// friction coefficient, or a non-finite value.
    pub fn add_collider(&mut self, mut collider: Collider) -> Result<usize, ModelError> {
        let ctx = format!("collider {:?}", collider.name);
        error::non_negative(&ctx, "static friction", collider.friction.static_coefficient)?;
        error::non_negative(&ctx, "kinetic friction", collider.friction.kinetic_coefficient)?;
        match &mut collider.shape {
            Shape::Plane { point, normal } => {
                error::finite_vec(&ctx, "point", *point)?;
                error::finite_vec(&ctx, "normal", *normal)?;
                // Any length: one too short or too long to square in f32 (1e-30, 1e30) is
                // scaled by its largest component first.
                let largest = normal.abs().max_element();
                if largest == 0.0 {
                    return Err(ModelError::invalid(format!("{ctx}: normal"), "must not be zero"));
                }
                let squared = normal.length_squared();
                if !squared.is_normal() || normal.length() < 1e-6 {
                    *normal /= largest;
                }
                *normal = normal.normalize();
            }
            Shape::Sphere { center, radius } => {
                error::finite_vec(&ctx, "center", *center)?;
                error::collider_size(&ctx, "radius", *radius)?;
            }
            Shape::Capsule { a, b, radius } => {
                error::finite_vec(&ctx, "a", *a)?;
                error::finite_vec(&ctx, "b", *b)?;
                error::collider_size(&ctx, "radius", *radius)?;
                // The distance to the axis projects onto b − a, squared.
                if !(*b - *a).length_squared().is_finite() {
                    return Err(ModelError::invalid(
                        format!("{ctx}: a, b"),
                        format!(
                            "the axis from {a} to {b} is too long: distances to the collider must square within f32"
                        ),
                    ));
                }
            }
            Shape::Box { center, half_extents, rotation } => {
                error::finite_vec(&ctx, "center", *center)?;
                for (axis, h) in ["x", "y", "z"].iter().zip(half_extents.to_array()) {
                    error::collider_size(&ctx, &format!("half extent {axis}"), h)?;
                }
                if !rotation.is_finite() || rotation.length() < 1e-6 {
                    return Err(ModelError::invalid(format!("{ctx}: rotation"), "must be a finite rotation"));
                }
                *rotation = rotation.normalize();
            }
            // Validated when it was built (`SdfGrid::build`, `SdfGrid::from_parts`).
            Shape::Sdf(_) => {}
        }
        self.colliders.push(collider);
        Ok(self.colliders.len() - 1)
    }

    /// Overrides the mass (kg) of particle `particle`.
    ///
    /// # Errors
    /// [`ModelError::Invalid`] if the index is out of range or the mass is not finite and > 0
    /// (pins are made with [`Control`](crate::Control), not with infinite masses).
    pub fn set_particle_mass(&mut self, particle: u32, mass: f32) -> Result<&mut Self, ModelError> {
        let ctx = format!("particle {particle}");
        if particle as usize >= self.masses.len() {
            return Err(ModelError::invalid(
                ctx,
                format!("does not exist (there are {} particles)", self.masses.len()),
            ));
        }
        error::positive(&ctx, "mass (kg)", mass)?;
        self.masses[particle as usize] = mass;
        self.mass_sources[particle as usize] = MassSource::Fixed;
        Ok(self)
    }

    /// Whether a body of `particles` and `constraints` (and, where it `tears`, the memory a
    /// tear needs beside it) fits the memory limit with the bodies added so far.
    fn check_size(&mut self, context: &str, particles: u128, constraints: u128, tears: bool) -> Result<(), ModelError> {
        let total_p = self.positions.len() as u128 + particles;
        let total_c = (self.distance.len() + self.dihedral.len() + self.rope_bending.len()) as u128 + constraints;
        let body = estimated_bytes(particles, constraints);
        let tearing = if tears { (TEARING_FACTOR - 1) * body } else { 0 };
        let bytes = estimated_bytes(total_p, total_c) + self.tearing_bytes + tearing;
        if total_p > u32::MAX as u128 || total_c > u32::MAX as u128 || bytes > self.memory_limit as u128 {
            return Err(ModelError::TooLarge {
                context: context.to_string(),
                particles: total_p,
                constraints: total_c,
                bytes,
                limit: self.memory_limit,
            });
        }
        self.tearing_bytes += tearing;
        Ok(())
    }

    fn append(
        &mut self,
        name: &str,
        kind: BodyKind,
        material: BodyMaterial,
        parts: Parts,
    ) -> Result<BodyId, ModelError> {
        if self.bodies.iter().any(|b| b.name == name) {
            return Err(ModelError::DuplicateName(name.to_string()));
        }
        if name.is_empty() {
            return Err(ModelError::invalid("body", "name must not be empty"));
        }
        let p0 = self.positions.len() as u32;
        let t0 = self.triangles.len() as u32;
        self.positions.extend_from_slice(&parts.positions);
        self.velocities.extend_from_slice(&parts.velocities);
        self.masses.extend_from_slice(&parts.masses);
        self.mass_sources.extend_from_slice(&parts.mass_sources);
        self.radii.extend_from_slice(&parts.radii);
        let body = self.bodies.len() as u32;
        let colour_base = if kind == BodyKind::Rope { ROPE_COLOURS } else { 0 };
        self.distance.append::<2>(body, p0, &parts.distance, colour_base);
        self.dihedral.append::<4>(body, p0, &parts.dihedral, colour_base);
        self.rope_bending.append::<3>(body, p0, &parts.rope_bending, colour_base);
        self.triangles.extend(parts.triangles.iter().map(|t| t.map(|v| v + p0)));
        match &parts.uvs {
            Some(uv) => {
                self.uvs.extend_from_slice(uv);
                self.any_uv = true;
            }
            None => self.uvs.resize(self.positions.len(), Vec2::NAN),
        }
        self.bodies.push(Body {
            name: name.to_string(),
            kind,
            material,
            particles: p0..self.positions.len() as u32,
            triangles: t0..self.triangles.len() as u32,
        });
        Ok(BodyId(self.bodies.len() - 1))
    }

    /// Freezes the model: sorts constraints by colour, proves the colouring conflict-free,
    /// and builds the particle→triangle and particle→constraint adjacency.
    ///
    /// # Errors
    /// [`ModelError::Invalid`] if the model has no particles, or a position, mass, rest length
    /// or stiffness is beyond f32 arithmetic; [`ModelError::Colouring`] if a topology builder
    /// produced a conflicting colouring (an internal error).
    pub fn finalize(mut self) -> Result<Model, ModelError> {
        self.close_world();
        let n = self.positions.len();
        let particle_world = match self.worlds.len() {
            1 => Vec::new(),
            _ => {
                let mut world = vec![0u32; n];
                for (k, w) in self.worlds.iter().enumerate() {
                    world[w.particles.start as usize..w.particles.end as usize].fill(k as u32);
                }
                world
            }
        };
        if n == 0 {
            return Err(ModelError::invalid("model", "has no cloth or rope"));
        }
        let distance = self.distance.build::<2>(n)?;
        let dihedral = self.dihedral.build::<4>(n)?;
        let rope_bending = self.rope_bending.build::<3>(n)?;
        let inv_mass = self.masses.iter().map(|&m| 1.0 / m).collect();
        let model = Model {
            particle_position: self.positions,
            particle_velocity: self.velocities,
            particle_mass: self.masses,
            particle_inv_mass: inv_mass,
            particle_mass_source: self.mass_sources,
            particle_radius: self.radii,
            distance,
            dihedral,
            rope_bending,
            triangles: self.triangles,
            particle_uv: if self.any_uv { self.uvs } else { Vec::new() },
            particle_triangles_offsets: Vec::new(),
            particle_triangles: Vec::new(),
            bodies: self.bodies,
            colliders: self.colliders,
            worlds: self.worlds,
            particle_world,
            air: self.air,
            cracks: Vec::new(),
        }
        .with_triangle_adjacency();
        model.check_arithmetic()?;
        Ok(model)
    }
}

impl Model {
    /// The model with its particle → triangle adjacency (CSR) made from its triangles.
    pub(crate) fn with_triangle_adjacency(mut self) -> Model {
        let n = self.particle_position.len();
        let mut offsets = vec![0u32; n + 1];
        for t in &self.triangles {
            for &v in t {
                offsets[v as usize + 1] += 1;
            }
        }
        for k in 0..n {
            offsets[k + 1] += offsets[k];
        }
        let mut fill = offsets.clone();
        let mut adjacency = vec![0u32; offsets[n] as usize];
        for (ti, t) in self.triangles.iter().enumerate() {
            for &v in t {
                adjacency[fill[v as usize] as usize] = ti as u32;
                fill[v as usize] += 1;
            }
        }
        self.particle_triangles_offsets = offsets;
        self.particle_triangles = adjacency;
        self
    }

    /// Rejects sizes that are valid one by one but overflow or underflow in f32 together (a
    /// spacing of 10³⁰ m, a mass of 10⁻⁴⁰ kg, a stiffness beyond 8.5·10³⁷ N/m per element),
    /// naming the body, the element and the material key.
    pub(crate) fn check_arithmetic(&self) -> Result<(), ModelError> {
        let body_of = |p: usize| self.body_of_particle(p as u32).map_or(String::new(), |b| format!("{:?}", b.name));
        // Each list is searched for its first fault in parallel; the loops below, from there,
        // name it (a valid model — a torn one, say, of a million constraints — costs one
        // parallel pass).
        let bad_alpha = |alpha: f32| !alpha.is_finite() || (alpha != 0.0 && !alpha.is_normal());
        let from = |faulty: Option<usize>, len: usize| faulty.unwrap_or(len);
        let first_particle = from(
            self.particle_position
                .par_iter()
                .zip(&self.particle_mass)
                .position_first(|(x, &m)| !x.is_finite() || x.abs().max_element() > 1e9 || !mass_is_usable(m)),
            self.particle_position.len(),
        );
        let first_distance = from(
            self.distance.items.par_iter().position_first(|c| {
                !c.rest_length.is_normal() || bad_alpha(c.compliance_stretch) || bad_alpha(c.compliance_compression)
            }),
            self.distance.items.len(),
        );
        let first_hinge =
            from(self.dihedral.items.par_iter().position_first(|c| bad_alpha(c.compliance)), self.dihedral.items.len());
        let first_joint = from(
            self.rope_bending.items.par_iter().position_first(|c| bad_alpha(c.compliance)),
            self.rope_bending.items.len(),
        );
        for (p, (x, &m)) in self.particle_position.iter().zip(&self.particle_mass).enumerate().skip(first_particle) {
            if !x.is_finite() || x.abs().max_element() > 1e9 {
                return Err(ModelError::invalid(
                    format!("body {} particle {p}", body_of(p)),
                    format!("position {x} is not a finite position within 10⁹ m"),
                ));
            }
            if !mass_is_usable(m) {
                return Err(ModelError::invalid(
                    format!("body {} particle {p}", body_of(p)),
                    format!("mass {m} kg is too small or too large for f32 arithmetic"),
                ));
            }
        }
        let set = &self.distance;
        for (k, (c, family)) in set.items.iter().zip(&set.family).enumerate().skip(first_distance) {
            let what = || {
                format!("body {} {} constraint {k} (particles {}–{})", body_of(c.i as usize), family.name(), c.i, c.j)
            };
            if !c.rest_length.is_normal() {
                return Err(ModelError::invalid(
                    what(),
                    format!("rest length {:e} m is degenerate (particles too close or too far apart)", c.rest_length),
                ));
            }
            for (alpha, mode) in [(c.compliance_stretch, "stretch"), (c.compliance_compression, "compression")] {
                let key = match (family, mode) {
                    (ConstraintFamily::Structural, "stretch") => "stretch_stiffness",
                    (ConstraintFamily::Structural, _) => "compression_stiffness",
                    (ConstraintFamily::Shear, _) => "shear_stiffness",
                    (ConstraintFamily::BendSpring, _) => "bend_stiffness",
                    (ConstraintFamily::Bending, _) => "bending_modulus",
                };
                check_compliance(alpha, &format_args!("its stiffness in {mode}"), "N/m", key, what)?;
            }
        }
        for (k, c) in self.dihedral.items.iter().enumerate().skip(first_hinge) {
            let [a, b, ..] = c.particles;
            let what = || format!("body {} bending hinge {k} (edge {a}–{b})", body_of(a as usize));
            check_compliance(c.compliance, &"its angular stiffness", "J/rad²", "bending_modulus", what)?;
        }
        for (k, c) in self.rope_bending.items.iter().enumerate().skip(first_joint) {
            let j = c.particles[1];
            let what = || format!("body {} bending joint {k} (particle {j})", body_of(j as usize));
            check_compliance(c.compliance, &"its angular stiffness", "J/rad²", "bending_modulus", what)?;
        }
        Ok(())
    }
}

/// Rejects a compliance α = 1/k that over- or underflowed: ∞ when the stiffness underflowed,
/// subnormal when it is beyond f32 (and read as 0, rigid, by CPUs that flush subnormals).
/// Whether a particle mass `m` (kg) is one the model takes: positive, normal in f32, and with
/// a normal inverse mass w = 1/m.
pub(crate) fn mass_is_usable(m: f32) -> bool {
    m.is_normal() && m > 0.0 && (1.0 / m).is_normal()
}

fn check_compliance(
    alpha: f32,
    stiffness: &dyn std::fmt::Display,
    unit: &str,
    key: &str,
    what: impl Fn() -> String,
) -> Result<(), ModelError> {
    let problem = if !alpha.is_finite() {
        "is too small for f32 (its compliance 1/k overflows)"
    } else if alpha != 0.0 && !alpha.is_normal() {
        "is too large for f32 (above 8.5e37 per element); use inf for a rigid constraint"
    } else {
        return Ok(());
    };
    Err(ModelError::invalid(
        what(),
        format!("{stiffness}, 1/α = {:.3e} {unit} (from the material's {key}), {problem}", 1.0 / alpha as f64),
    ))
}

/// Renumbers colours to 0..k without gaps, keeping their order.
fn compact(colours: &[u32]) -> Vec<u32> {
    let mut used: Vec<u32> = colours.to_vec();
    used.sort_unstable();
    used.dedup();
    colours.iter().map(|c| used.binary_search(c).unwrap_or(0) as u32).collect()
}

/// The first colour of ropes before compaction: above any colour a cloth can need.
const ROPE_COLOURS: u32 = 1 << 24;
