//! The immutable simulation model and the builder that makes it.
//!
//! A [`Model`] holds everything that does not change while a scene runs: particles with their
//! masses and radii, the distance constraints (structural, shear and bending springs of
//! article §1.1) grouped by colour, the triangles of every cloth, the colliders, gravity and
//! the air. It is built once by a [`ModelBuilder`] and shared (usually in an `Arc`) by the
//! solvers; what changes over time lives in [`State`](crate::State) and
//! [`Control`](crate::Control).

mod builder;
pub mod colouring;
mod constraint;
mod grid;
mod material;
mod mesh;
mod rope;

pub use builder::{BodyId, DEFAULT_MEMORY_LIMIT, ModelBuilder};
pub use constraint::{ConstraintFamily, DistanceConstraint, compliance_from_stiffness};
pub use grid::ClothGrid;
pub use material::{ClothMaterial, RopeMaterial, membrane_spring_stiffness, rope_spring_stiffness};
pub use mesh::ClothMesh;
pub use rope::Rope;

use crate::collision::Collider;
use glam::{Vec2, Vec3};
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

/// The immutable model. See the [module documentation](self).
///
/// Arrays are named `<entity>_<attribute>` and indexed by particle, constraint or triangle.
#[derive(Clone, Debug)]
pub struct Model {
    pub(crate) particle_position: Vec<Vec3>,
    pub(crate) particle_velocity: Vec<Vec3>,
    pub(crate) particle_mass: Vec<f32>,
    pub(crate) particle_inv_mass: Vec<f32>,
    pub(crate) particle_radius: Vec<f32>,
    pub(crate) constraints: Vec<DistanceConstraint>,
    pub(crate) constraint_family: Vec<ConstraintFamily>,
    pub(crate) colour_ranges: Vec<Range<u32>>,
    pub(crate) triangles: Vec<[u32; 3]>,
    pub(crate) particle_uv: Vec<Vec2>,
    pub(crate) particle_triangles_offsets: Vec<u32>,
    pub(crate) particle_triangles: Vec<u32>,
    pub(crate) bodies: Vec<Body>,
    pub(crate) colliders: Vec<Collider>,
    pub(crate) gravity: Vec3,
    pub(crate) air: Air,
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
    /// Distance constraints, sorted by colour (see [`Model::colour_ranges`]).
    pub fn constraints(&self) -> &[DistanceConstraint] {
        &self.constraints
    }
    /// Family of each constraint, parallel to [`Model::constraints`].
    pub fn constraint_family(&self) -> &[ConstraintFamily] {
        &self.constraint_family
    }
    /// Index ranges of [`Model::constraints`], one per colour; no two constraints of one
    /// range share a particle (proved by [`colouring::validate`] when the model was built).
    pub fn colour_ranges(&self) -> &[Range<u32>] {
        &self.colour_ranges
    }
    /// Number of colours.
    pub fn colour_count(&self) -> usize {
        self.colour_ranges.len()
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
    /// Gravity (m/s²), by default (0, −9.81, 0).
    pub fn gravity(&self) -> Vec3 {
        self.gravity
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
    /// Constraints that touch particle `p` (a linear scan; for reports, not for hot loops).
    pub fn constraints_of_particle(&self, p: u32) -> Vec<usize> {
        self.constraints.iter().enumerate().filter(|(_, c)| c.i == p || c.j == p).map(|(k, _)| k).collect()
    }
    /// The body that owns particle `p`.
    pub fn body_of_particle(&self, p: u32) -> Option<&Body> {
        self.bodies.iter().find(|b| b.particles.contains(&p))
    }
}
