//! The immutable simulation model and the builder that makes it.
//!
//! A [`Model`] holds everything that does not change while a scene runs: particles with their
//! masses and radii, the constraints in one [`ConstraintSet`] per type — the distance
//! constraints (structural, shear and bend springs of article §1.1), the dihedral bending of
//! cloth hinges and the bending of rope joints — grouped by colour, the
//! triangles of every cloth, the collider shapes, gravity and the air. It is built once by a
//! [`ModelBuilder`] and shared (usually in an `Arc`) by the solvers; what changes over time
//! lives in [`State`](crate::State) and [`Control`](crate::Control) (pins, wind, where the
//! colliders are).
//!
//! # Changing a model while it runs
//!
//! Parameters — a body's material (stiffness, damping, density, thickness), gravity, the air —
//! change through a *new* model with the same topology ([`Model::with_cloth_material`],
//! [`Model::with_rope_material`], [`Model::with_gravity`], [`Model::with_air`]) handed to the
//! running solver by [`Solver::notify_model_changed`](crate::Solver::notify_model_changed),
//! which keeps the state (no jump). A change of topology (a body added, a constraint removed)
//! is a new model given to [`Solver::rebuild`](crate::Solver::rebuild) with the state to go on
//! from.
//!
//! # Adding a constraint type
//!
//! A new type touches about five files: its record and [`ParticleConstraint`] impl (one file in
//! this folder, like `distance.rs`); a [`ConstraintSet`] field and accessor on [`Model`]
//! (here) filled by the topology builders (`grid.rs`, `mesh.rs`, `rope.rs`, or a new one) and
//! [`ModelBuilder::finalize`]; its projection in the CPU solver, which the shared XPBD update
//! already does (a line in `solver/xpbd/mod.rs`); its GPU kernel (`hooke-gpu/src/<type>.rs` +
//! `.wgsl`, one dispatch per colour); and its scene keys (`hooke-io/src/scene/`).

mod builder;
pub mod colouring;
mod constraint;
mod constraint_set;
mod dihedral;
mod distance;
mod grid;
mod material;
mod mesh;
mod rope;
mod rope_bending;

pub use builder::{BodyId, DEFAULT_MEMORY_LIMIT, ModelBuilder, estimated_bytes};
pub use constraint::{ConstraintFamily, ParticleConstraint, compliance_from_stiffness};
pub use constraint_set::{ConstraintSet, CopiedRun};
pub(crate) use constraint_set::{Fate, concat, csr_blocks};
pub use dihedral::{DihedralBending, dihedral_angle};
pub use distance::DistanceConstraint;
pub use grid::ClothGrid;
pub use material::{
    Bending, BodyMaterial, ClothMaterial, RopeMaterial, hinge_stiffness, membrane_spring_stiffness,
    rope_spring_stiffness,
};
pub use mesh::ClothMesh;
pub use rope::Rope;
pub use rope_bending::{RopeBending, bending_angle};

use crate::collision::{Collider, Shape};
use crate::error::{self, ModelError};
use glam::{Vec2, Vec3};
pub(crate) use material::Element;
pub(crate) use material::MassSource;
use std::ops::Range;

/// What kind of body a [`Body`] is, with its topology.
#[derive(Clone, Debug, PartialEq)]
pub enum BodyKind {
    /// A rectangular grid of `rows × columns` particles; particle (r, c) is `first + r·columns + c`.
    ClothGrid {
        /// Number of particle rows.
        rows: usize,
        /// Number of particle columns.
        columns: usize,
    },
    /// A cloth from an arbitrary triangle mesh.
    ClothMesh,
    /// A rope: its particles in order form a polyline.
    Rope,
}

/// One cloth or rope of a model: a contiguous range of particles and of triangles.
#[derive(Clone, Debug, PartialEq)]
pub struct Body {
    /// Name (unique within the model), used in caches and reports.
    pub name: String,
    /// Topology.
    pub kind: BodyKind,
    /// The material it was built with (the latest one after a material change).
    pub material: BodyMaterial,
    /// Particle indices of this body.
    pub particles: Range<u32>,
    /// Indices into [`Model::triangles`] (empty for ropes).
    pub triangles: Range<u32>,
}

impl Body {
    /// Global index of grid particle (row, column), or `None` if this is not a grid or the
    /// position is outside it.
    pub fn grid_index(&self, row: usize, column: usize) -> Option<u32> {
        match self.kind {
            BodyKind::ClothGrid { rows, columns } if row < rows && column < columns => {
                Some(self.particles.start + (row * columns + column) as u32)
            }
            _ => None,
        }
    }

    /// Whether this body is a cloth (has triangles).
    pub fn is_cloth(&self) -> bool {
        !matches!(self.kind, BodyKind::Rope)
    }

    /// Whether its material has self-collision on (its particles collide with each other and
    /// with those of every other such body).
    pub fn self_collision(&self) -> bool {
        match self.material {
            BodyMaterial::Cloth(m) => m.self_collision,
            BodyMaterial::Rope(m) => m.self_collision,
        }
    }
}

/// Aerodynamic parameters of the surrounding air (article §1.4); the forces they give are in
/// [`forces::aerodynamics`](crate::forces::aerodynamics).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Air {
    /// Air density ρ (kg/m³).
    pub density: f32,
    /// Drag coefficient C_d of the pressure force on each triangle, along its normal
    /// (dimensionless, ≥ 0).
    pub drag_coefficient: f32,
    /// Lift coefficient C_l of the force on each triangle perpendicular to the relative wind
    /// (dimensionless, ≥ 0). Aerodynamics is off when both coefficients are 0.
    pub lift_coefficient: f32,
}

impl Default for Air {
    /// Sea-level air (1.225 kg/m³) with aerodynamics off (C_d = C_l = 0).
    fn default() -> Self {
        Air { density: 1.225, drag_coefficient: 0.0, lift_coefficient: 0.0 }
    }
}

impl Air {
    /// Whether this air exerts any force: ρ > 0 and C_d or C_l > 0.
    pub fn is_active(&self) -> bool {
        self.density > 0.0 && (self.drag_coefficient > 0.0 || self.lift_coefficient > 0.0)
    }
}

/// One world of a model: an independent scene solved in the same sweeps as the others
/// (issue #13), its particles, bodies and colliders contiguous ranges of the model's.
#[derive(Clone, Debug, PartialEq)]
pub struct World {
    /// Gravity (m/s²).
    pub gravity: Vec3,
    /// Its particles.
    pub particles: Range<u32>,
    /// Its bodies (indices into [`Model::bodies`]).
    pub bodies: Range<u32>,
    /// Its colliders (indices into [`Model::colliders`]).
    pub colliders: Range<u32>,
}

/// The immutable model. See the [module documentation](self).
///
/// Arrays are named `<entity>_<attribute>` and indexed by particle, constraint or triangle.
#[derive(Clone, Debug)]
pub struct Model {
    pub(crate) particle_position: Vec<Vec3>,
    pub(crate) particle_velocity: Vec<Vec3>,
    pub(crate) particle_mass: Vec<f32>,
    pub(crate) particle_inv_mass: Vec<f32>,
    pub(crate) particle_mass_source: Vec<MassSource>,
    pub(crate) particle_radius: Vec<f32>,
    pub(crate) distance: ConstraintSet<DistanceConstraint>,
    pub(crate) dihedral: ConstraintSet<DihedralBending>,
    pub(crate) rope_bending: ConstraintSet<RopeBending>,
    pub(crate) triangles: Vec<[u32; 3]>,
    pub(crate) particle_uv: Vec<Vec2>,
    pub(crate) particle_triangles_offsets: Vec<u32>,
    pub(crate) particle_triangles: Vec<u32>,
    pub(crate) bodies: Vec<Body>,
    pub(crate) colliders: Vec<Collider>,
    /// The worlds (at least one): independent scenes in one model, each a contiguous range
    /// of particles, bodies and colliders with its own gravity (see [`World`]).
    pub(crate) worlds: Vec<World>,
    /// The world of each particle (empty when there is one world).
    pub(crate) particle_world: Vec<u32>,
    pub(crate) air: Air,
    /// Triangle edges whose constraint has broken but which still join two triangles (a crack
    /// not yet opened; see [`tearing`](crate::tearing)), each pair sorted.
    pub(crate) cracks: Vec<[u32; 2]>,
}

impl Model {
    /// Number of particles.
    pub fn particle_count(&self) -> usize {
        self.particle_position.len()
    }
    /// Initial particle positions (m), one per particle.
    pub fn particle_position(&self) -> &[Vec3] {
        &self.particle_position
    }
    /// Initial particle velocities (m/s), one per particle.
    pub fn particle_velocity(&self) -> &[Vec3] {
        &self.particle_velocity
    }
    /// Particle masses (kg), one per particle, all > 0.
    pub fn particle_mass(&self) -> &[f32] {
        &self.particle_mass
    }
    /// Inverse masses w = 1/m (1/kg), one per particle. Pins are applied by the solver from
    /// [`Control`](crate::Control); the model itself has no infinite masses.
    pub fn particle_inv_mass(&self) -> &[f32] {
        &self.particle_inv_mass
    }
    /// Collision radii (m), one per particle.
    pub fn particle_radius(&self) -> &[f32] {
        &self.particle_radius
    }
    /// The distance constraints — structural, shear and bend springs — sorted by colour, with
    /// their families, colours and particle adjacency.
    pub fn distance(&self) -> &ConstraintSet<DistanceConstraint> {
        &self.distance
    }
    /// The dihedral bending constraints of cloth hinges ([`Bending::Angle`]), sorted by colour.
    pub fn dihedral(&self) -> &ConstraintSet<DihedralBending> {
        &self.dihedral
    }
    /// The bending constraints of rope joints ([`Bending::Angle`]), sorted by colour.
    pub fn rope_bending(&self) -> &ConstraintSet<RopeBending> {
        &self.rope_bending
    }
    /// Number of constraints of every type.
    pub fn constraint_count(&self) -> usize {
        self.distance.len() + self.dihedral.len() + self.rope_bending.len()
    }
    /// Cloth triangles (particle indices, counter-clockwise seen from the front).
    pub fn triangles(&self) -> &[[u32; 3]] {
        &self.triangles
    }
    /// Triangles around particle `p`, as indices into [`Model::triangles`].
    pub fn particle_triangles(&self, p: usize) -> &[u32] {
        let r = self.particle_triangles_offsets[p] as usize..self.particle_triangles_offsets[p + 1] as usize;
        &self.particle_triangles[r]
    }
    /// The triangles around every particle in CSR form: `offsets` has one entry per particle
    /// plus one, and particle p's triangles (indices into [`Model::triangles`], in increasing
    /// order) are `list[offsets[p]..offsets[p + 1]]` — what [`Model::particle_triangles`]
    /// gives one particle at a time.
    pub fn particle_triangle_adjacency(&self) -> (&[u32], &[u32]) {
        (&self.particle_triangles_offsets, &self.particle_triangles)
    }
    /// The cloths and ropes, in the order they were added.
    pub fn bodies(&self) -> &[Body] {
        &self.bodies
    }
    /// The body with this name.
    pub fn body(&self, name: &str) -> Option<&Body> {
        self.bodies.iter().find(|b| b.name == name)
    }
    /// The colliders.
    pub fn colliders(&self) -> &[Collider] {
        &self.colliders
    }
    /// Gravity (m/s²) of the first world, by default (0, −9.81, 0).
    pub fn gravity(&self) -> Vec3 {
        self.worlds[0].gravity
    }
    /// The worlds: independent scenes solved together, each with its own particles, bodies,
    /// colliders and gravity, none touching another (one unless the model was built with
    /// [`ModelBuilder::add_world`](crate::ModelBuilder::add_world)).
    pub fn worlds(&self) -> &[World] {
        &self.worlds
    }
    /// The world of particle `p`.
    #[inline]
    pub fn world_of_particle(&self, p: usize) -> u32 {
        if self.particle_world.is_empty() { 0 } else { self.particle_world[p] }
    }
    /// The colliders particle `p` meets: those of its world (indices into
    /// [`Model::colliders`]).
    #[inline]
    pub fn colliders_of_particle(&self, p: usize) -> Range<usize> {
        let c = &self.worlds[self.world_of_particle(p) as usize].colliders;
        c.start as usize..c.end as usize
    }
    /// The world of every particle, one per particle, or an empty slice when there is one
    /// world (every particle in world 0).
    pub fn particle_world(&self) -> &[u32] {
        &self.particle_world
    }
    /// Air parameters for aerodynamic forces.
    pub fn air(&self) -> Air {
        self.air
    }
    /// Texture coordinates (u, v) per particle (dimensionless, one per particle, indexed like
    /// the particles), or `None` if no body has any. Grid cloths have u = column/(columns − 1)
    /// and v = row/(rows − 1) in [0, 1]; mesh cloths have the UVs they were given (see
    /// [`ClothMesh::uvs`]); particles of bodies without UVs (ropes, meshes without them) hold
    /// `Vec2::NAN`, so that the triangles that use them are skipped by
    /// [`surface::vertex_tangents`](crate::surface::vertex_tangents).
    pub fn particle_uv(&self) -> Option<&[Vec2]> {
        (!self.particle_uv.is_empty()).then_some(&self.particle_uv[..])
    }
    /// Total mass (kg).
    pub fn total_mass(&self) -> f64 {
        self.particle_mass.iter().map(|&m| m as f64).sum()
    }
    /// Index ranges of the particles of each body, in body order.
    pub fn body_particles(&self) -> impl Iterator<Item = Range<u32>> + '_ {
        self.bodies.iter().map(|b| b.particles.clone())
    }
    /// The body that owns particle `p`.
    pub fn body_of_particle(&self, p: u32) -> Option<&Body> {
        self.bodies.iter().find(|b| b.particles.contains(&p))
    }
}

/// Run-time changes of parameters: each returns a new model with the same topology (see the
/// [module documentation](self)).
impl Model {
    /// The same model under gravity `gravity` (m/s²).
    ///
    /// # Errors
    /// [`ModelError::Invalid`] if it is not finite.
    pub fn with_gravity(&self, gravity: Vec3) -> Result<Model, ModelError> {
        error::finite_vec("model", "gravity", gravity)?;
        let worlds = self.worlds.iter().map(|w| World { gravity, ..w.clone() }).collect();
        Ok(Model { worlds, ..self.clone() })
    }

    /// The same model in air `air`.
    ///
    /// # Errors
    /// [`ModelError::Invalid`] if a value is negative or not finite.
    pub fn with_air(&self, air: Air) -> Result<Model, ModelError> {
        error::non_negative("air", "density (kg/m³)", air.density)?;
        error::non_negative("air", "drag coefficient", air.drag_coefficient)?;
        error::non_negative("air", "lift coefficient", air.lift_coefficient)?;
        Ok(Model { air, ..self.clone() })
    }

    /// The same model with cloth `body` (an index into [`Model::bodies`]) made of `material`:
    /// every spring of the body gets the stiffness and damping its element would have been
    /// built with, every particle the mass and collision radius — except stiffnesses and
    /// masses that were given directly (`spring_stiffness`, `particle_mass`, `end_mass`),
    /// which stay. Values whose material field did not change keep their bits.
    ///
    /// # Errors
    /// [`ModelError::Invalid`] if `body` is not a cloth or a material value is out of range or
    /// beyond f32 arithmetic.
    pub fn with_cloth_material(&self, body: usize, material: ClothMaterial) -> Result<Model, ModelError> {
        let b = self.bodies.get(body).ok_or_else(|| {
            ModelError::invalid("model", format!("body {body} does not exist ({} bodies)", self.bodies.len()))
        })?;
        let BodyMaterial::Cloth(old) = b.material else {
            return Err(ModelError::invalid(format!("body {:?}", b.name), "is a rope: use with_rope_material"));
        };
        grid::validate_cloth_material(&format!("cloth {:?}", b.name), &material)?;
        let moduli = |f: ConstraintFamily, m: &ClothMaterial| match f {
            ConstraintFamily::Structural => (m.stretch_stiffness, m.compression_stiffness),
            ConstraintFamily::Shear => (m.shear_stiffness, m.shear_stiffness),
            ConstraintFamily::BendSpring => (m.bend_stiffness, m.bend_stiffness),
            ConstraintFamily::Bending => (m.bending_modulus, m.bending_modulus),
        };
        self.with_body_material(
            body,
            BodyMaterial::Cloth(material),
            |f| (moduli(f, &old), moduli(f, &material)),
            (old.damping, material.damping),
            (old.areal_density, material.areal_density),
            (old.thickness * 0.5, material.thickness * 0.5),
        )
    }

    /// The same model with rope `body` made of `material`; as
    /// [`Model::with_cloth_material`].
    ///
    /// # Errors
    /// [`ModelError::Invalid`] if `body` is not a rope or a material value is out of range or
    /// beyond f32 arithmetic.
    pub fn with_rope_material(&self, body: usize, material: RopeMaterial) -> Result<Model, ModelError> {
        let b = self.bodies.get(body).ok_or_else(|| {
            ModelError::invalid("model", format!("body {body} does not exist ({} bodies)", self.bodies.len()))
        })?;
        let BodyMaterial::Rope(old) = b.material else {
            return Err(ModelError::invalid(format!("body {:?}", b.name), "is a cloth: use with_cloth_material"));
        };
        rope::validate_rope_material(&format!("rope {:?}", b.name), &material)?;
        let moduli = |f: ConstraintFamily, m: &RopeMaterial| match f {
            ConstraintFamily::BendSpring => (m.bend_stiffness, m.bend_stiffness),
            ConstraintFamily::Bending => (m.bending_modulus, m.bending_modulus),
            _ => (m.stretch_stiffness, m.compression_stiffness),
        };
        self.with_body_material(
            body,
            BodyMaterial::Rope(material),
            |f| (moduli(f, &old), moduli(f, &material)),
            (old.damping, material.damping),
            (old.linear_density, material.linear_density),
            (old.radius, material.radius),
        )
    }

    /// Applies a material change to body `body`: `moduli(family)` gives the old and new
    /// (stretch, compression) moduli; the pairs are (old, new) damping, density and radius.
    fn with_body_material(
        &self,
        body: usize,
        material: BodyMaterial,
        moduli: impl Fn(ConstraintFamily) -> ((f32, f32), (f32, f32)),
        damping: (f32, f32),
        density: (f32, f32),
        radius: (f32, f32),
    ) -> Result<Model, ModelError> {
        let mut m = self.clone();
        m.bodies[body].material = material;
        // Each constraint's (stretch, compression) compliances and damping time, by reference.
        let update = |family: ConstraintFamily, e: &Element, compliance: [&mut f32; 2], tau: &mut f32| {
            if e.body as usize != body {
                return;
            }
            let ((old_s, old_c), (new_s, new_c)) = moduli(family);
            let [stretch, compression] = compliance;
            if old_s != new_s
                && let Some(k) = e.stiffness.stiffness(new_s)
            {
                *stretch = compliance_from_stiffness(k);
            }
            if old_c != new_c
                && let Some(k) = e.stiffness.stiffness(new_c)
            {
                *compression = compliance_from_stiffness(k);
            }
            if damping.0 != damping.1 {
                *tau = damping.1;
            }
        };
        let set = &mut m.distance;
        for ((c, f), e) in set.items.iter_mut().zip(&set.family).zip(&set.element) {
            update(*f, e, [&mut c.compliance_stretch, &mut c.compliance_compression], &mut c.damping);
        }
        let set = &mut m.dihedral;
        for ((c, f), e) in set.items.iter_mut().zip(&set.family).zip(&set.element) {
            let mut same = c.compliance;
            update(*f, e, [&mut c.compliance, &mut same], &mut c.damping);
        }
        let set = &mut m.rope_bending;
        for ((c, f), e) in set.items.iter_mut().zip(&set.family).zip(&set.element) {
            let mut same = c.compliance;
            update(*f, e, [&mut c.compliance, &mut same], &mut c.damping);
        }
        let particles = self.bodies[body].particles.clone();
        for p in particles.start as usize..particles.end as usize {
            if density.0 != density.1
                && let MassSource::Share(share) = m.particle_mass_source[p]
            {
                m.particle_mass[p] = density.1 * share;
                m.particle_inv_mass[p] = 1.0 / m.particle_mass[p];
            }
            if radius.0 != radius.1 {
                m.particle_radius[p] = radius.1;
            }
        }
        m.check_arithmetic()?;
        Ok(m)
    }

    /// Whether `other` has this model's topology: the same particles, constraints (particles
    /// and colours), triangles, which cloths' triangles touch colliders
    /// ([`ClothMaterial::triangle_contact`]), the worlds' ranges, and collider shapes (for a mesh
    /// collider, the same distance grid) — what a solver may keep across
    /// [`Solver::notify_model_changed`](crate::Solver::notify_model_changed).
    pub fn same_topology(&self, other: &Model) -> bool {
        self.particle_count() == other.particle_count()
            && self.distance.colour_ranges == other.distance.colour_ranges
            && self.distance.items.iter().zip(&other.distance.items).all(|(a, b)| a.i == b.i && a.j == b.j)
            && self.distance.len() == other.distance.len()
            && same_tuples(&self.dihedral, &other.dihedral)
            && same_tuples(&self.rope_bending, &other.rope_bending)
            && self.triangles == other.triangles
            && self.bodies.len() == other.bodies.len()
            && self.bodies.iter().zip(&other.bodies).all(|(a, b)| triangle_contact(a) == triangle_contact(b))
            && self.worlds.len() == other.worlds.len()
            && self
                .worlds
                .iter()
                .zip(&other.worlds)
                .all(|(a, b)| (&a.particles, &a.bodies, &a.colliders) == (&b.particles, &b.bodies, &b.colliders))
            && self.colliders.len() == other.colliders.len()
            && self.colliders.iter().zip(&other.colliders).all(|(a, b)| match (&a.shape, &b.shape) {
                (Shape::Sdf(x), Shape::Sdf(y)) => std::sync::Arc::ptr_eq(x, y) || x == y,
                (x, y) => x.kind() == y.kind(),
            })
    }
}

/// Whether a body is a cloth whose triangles touch colliders.
fn triangle_contact(body: &Body) -> bool {
    matches!(&body.material, BodyMaterial::Cloth(m) if m.triangle_contact)
}

/// Whether two sets join the same particle tuples in the same colours.
fn same_tuples<T: ParticleConstraint<N>, const N: usize>(a: &ConstraintSet<T>, b: &ConstraintSet<T>) -> bool {
    a.colour_ranges == b.colour_ranges
        && a.len() == b.len()
        && a.items.iter().zip(&b.items).all(|(x, y)| x.particles() == y.particles())
}
