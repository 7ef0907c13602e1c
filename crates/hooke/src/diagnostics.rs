//! Per-frame diagnostics: strain, energy, penetration and NaN checks.

use crate::Model;
use crate::collision::Pose;
use crate::model::ConstraintFamily;
use glam::Vec3;

/// Diagnostics of one state. Energies in J, lengths in m.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Diagnostics {
    /// Simulated time (s).
    pub time: f64,
    /// Largest stretch strain (‖xᵢ − xⱼ‖ − L₀)/L₀ over structural constraints (dimensionless).
    pub max_stretch_strain: f32,
    /// Kinetic energy ½Σm‖v‖² (J).
    pub kinetic_energy: f64,
    /// Gravitational potential energy −Σm g·x (J), zero at the origin.
    pub gravity_energy: f64,
    /// Elastic energy Σ½C²/α over compliant constraints (J).
    pub elastic_energy: f64,
    /// Deepest penetration max(r − φ, 0) of a particle into a collider at this time (m).
    pub max_penetration: f32,
    /// Number of particles with a non-finite position or velocity.
    pub nan_count: usize,
    /// Largest particle speed (m/s).
    pub max_speed: f32,
}

impl Diagnostics {
    /// Total mechanical energy (J).
    pub fn total_energy(&self) -> f64 {
        self.kinetic_energy + self.gravity_energy + self.elastic_energy
    }

    /// Measures a state. `positions` and `velocities` have one entry per particle;
    /// `collider_poses` has each collider's pose at `time` (colliders beyond its end are at
    /// rest).
    pub fn measure(
        model: &Model,
        positions: &[Vec3],
        velocities: &[Vec3],
        time: f64,
        collider_poses: &[Pose],
    ) -> Diagnostics {
        let mut d = Diagnostics { time, ..Diagnostics::default() };
        let g = model.gravity();
        for ((x, v), &m) in positions.iter().zip(velocities).zip(model.particle_mass()) {
            if !x.is_finite() || !v.is_finite() {
                d.nan_count += 1;
                continue;
            }
            d.kinetic_energy += 0.5 * m as f64 * v.length_squared() as f64;
            d.gravity_energy -= m as f64 * g.dot(*x) as f64;
            d.max_speed = d.max_speed.max(v.length());
        }
        for (c, f) in model.distance().constraints().iter().zip(model.distance().families()) {
            let len = (positions[c.i as usize] - positions[c.j as usize]).length();
            let cval = len - c.rest_length;
            if *f == ConstraintFamily::Structural {
                d.max_stretch_strain = d.max_stretch_strain.max(cval / c.rest_length);
            }
            let alpha = c.compliance_for(cval);
            if alpha > 0.0 && cval.is_finite() {
                d.elastic_energy += 0.5 * (cval as f64) * (cval as f64) / alpha as f64;
            }
        }
        d.max_penetration = max_penetration(model, positions, collider_poses);
        d
    }
}

/// Deepest penetration max(r − φ(x), 0) (m) of any particle into any collider, each at its
/// pose in `collider_poses` (at rest beyond its end).
pub fn max_penetration(model: &Model, positions: &[Vec3], collider_poses: &[Pose]) -> f32 {
    let mut deepest = 0.0f32;
    for (k, c) in model.colliders().iter().enumerate() {
        let pose = collider_poses.get(k).copied().unwrap_or(Pose::IDENTITY);
        for (x, r) in positions.iter().zip(model.particle_radius()) {
            let (phi, _) = c.signed_distance_at(*x, &pose);
            deepest = deepest.max(r - phi);
        }
    }
    deepest
}
