//! Ropes: a chain of particles with stretch constraints i–i+1 and bending — the angle at every
//! joint i−1, i, i+1 (the default) or bend springs i–i+2.

use super::builder::Parts;
use super::constraint::{ConstraintFamily, compliance_from_stiffness as alpha};
use super::distance::DistanceConstraint;
use super::material::{Bending, ElementStiffness, MassSource, RopeMaterial, rope_spring_stiffness};
use super::rope_bending::RopeBending;
use crate::error::{self, ModelError};
use glam::Vec3;

/// Parameters of [`ModelBuilder::add_rope`](super::ModelBuilder::add_rope).
///
/// The rope runs along the polyline `points`, resampled to `particles` particles evenly spaced
/// in arc length (the ends stay at the first and last point).
#[derive(Clone, Debug, PartialEq)]
pub struct Rope {
    /// Body name (unique in the model).
    pub name: String,
    /// Polyline the rope follows (m), at least 2 points, not all equal.
    pub points: Vec<Vec3>,
    /// Number of particles, ≥ 2.
    pub particles: usize,
    /// Material.
    pub material: RopeMaterial,
    /// Bending: the angle at every joint (the default), bend springs i–i+2 or none.
    pub bending: Bending,
    /// Mass of every particle (kg) instead of linear density × length.
    pub particle_mass: Option<f32>,
}

impl Rope {
    /// A straight rope of `particles` particles from `a` to `b`.
    pub fn straight(name: impl Into<String>, a: Vec3, b: Vec3, particles: usize) -> Rope {
        Rope::polyline(name, vec![a, b], particles)
    }

    /// A rope along a polyline.
    pub fn polyline(name: impl Into<String>, points: Vec<Vec3>, particles: usize) -> Rope {
        Rope {
            name: name.into(),
            points,
            particles,
            material: RopeMaterial::default(),
            bending: Bending::Angle,
            particle_mass: None,
        }
    }

    pub(crate) fn validate(&self) -> Result<(), ModelError> {
        let ctx = format!("rope {:?}", self.name);
        if self.particles < 2 {
            return Err(ModelError::invalid(
                format!("{ctx}: particles"),
                format!("needs at least 2, got {}", self.particles),
            ));
        }
        if self.points.len() < 2 {
            return Err(ModelError::invalid(format!("{ctx}: points"), "needs at least 2 points"));
        }
        for (k, p) in self.points.iter().enumerate() {
            error::finite_vec(&ctx, &format!("point {k}"), *p)?;
        }
        let length: f32 = self.points.windows(2).map(|w| (w[1] - w[0]).length()).sum();
        let min_segment = length / (self.particles - 1) as f32;
        if min_segment.is_nan() || min_segment <= 1e-6 {
            return Err(ModelError::invalid(
                format!("{ctx}: points"),
                format!(
                    "the rope's length {length} m (along its points, or from start to end) is too short for {} \
                     particles: each segment must be longer than 1 µm",
                    self.particles
                ),
            ));
        }
        validate_rope_material(&ctx, &self.material)?;
        if let Some(mass) = self.particle_mass {
            error::positive(&ctx, "particle mass (kg)", mass)?;
        }
        Ok(())
    }

    /// Particle positions: the polyline resampled evenly in arc length.
    fn resample(&self) -> Vec<Vec3> {
        let n = self.particles;
        let seg: Vec<f32> = self.points.windows(2).map(|w| (w[1] - w[0]).length()).collect();
        let total: f32 = seg.iter().sum();
        let mut out = Vec::with_capacity(n);
        let (mut k, mut start) = (0usize, 0.0f32);
        for i in 0..n {
            let s = total * i as f32 / (n - 1) as f32;
            while k + 1 < seg.len() && s > start + seg[k] {
                start += seg[k];
                k += 1;
            }
            let t = if seg[k] > 0.0 { ((s - start) / seg[k]).clamp(0.0, 1.0) } else { 0.0 };
            out.push(self.points[k].lerp(self.points[k + 1], t));
        }
        out
    }

    pub(crate) fn build(&self) -> Parts {
        let n = self.particles;
        let m = &self.material;
        let bends = if self.bending == Bending::Springs { n.saturating_sub(2) } else { 0 };
        let mut p = Parts::with_capacity(n, n - 1 + bends, 0);
        p.positions = self.resample();
        p.velocities = vec![Vec3::ZERO; n];
        p.radii = vec![m.radius; n];
        p.masses = vec![0.0; n];
        let mut share = vec![0.0f32; n];
        for i in 0..n - 1 {
            let l = (p.positions[i + 1] - p.positions[i]).length();
            let half = 0.5 * l * m.linear_density;
            p.masses[i] += half;
            p.masses[i + 1] += half;
            share[i] += 0.5 * l;
            share[i + 1] += 0.5 * l;
            let c = DistanceConstraint {
                i: i as u32,
                j: i as u32 + 1,
                rest_length: l,
                compliance_stretch: alpha(rope_spring_stiffness(m.stretch_stiffness, l)),
                compliance_compression: alpha(rope_spring_stiffness(m.compression_stiffness, l)),
                damping: m.damping,
            };
            p.distance.push(c, ConstraintFamily::Structural, ElementStiffness::Axial { length: l }, (i % 2) as u32);
        }
        p.mass_sources = share.into_iter().map(MassSource::Share).collect();
        if let Some(mass) = self.particle_mass {
            p.masses.iter_mut().for_each(|x| *x = mass);
            p.mass_sources.iter_mut().for_each(|s| *s = MassSource::Fixed);
        }
        for i in 0..bends {
            let l = (p.positions[i + 2] - p.positions[i]).length();
            let a = alpha(rope_spring_stiffness(m.bend_stiffness, l));
            let c = DistanceConstraint {
                i: i as u32,
                j: i as u32 + 2,
                rest_length: l,
                compliance_stretch: a,
                compliance_compression: a,
                damping: m.damping,
            };
            let colour = 2 + ((i / 2) % 2) as u32;
            p.distance.push(c, ConstraintFamily::BendSpring, ElementStiffness::Axial { length: l }, colour);
        }
        if self.bending == Bending::Angle {
            // Joint i between segments i−1 and i, over the length l̄ = (l_{i−1} + l_i)/2.
            for i in 1..n.saturating_sub(1) {
                let l = 0.5
                    * ((p.positions[i] - p.positions[i - 1]).length() + (p.positions[i + 1] - p.positions[i]).length());
                let c = RopeBending {
                    particles: [i as u32 - 1, i as u32, i as u32 + 1],
                    compliance: alpha(rope_spring_stiffness(m.bending_modulus, l)),
                    damping: m.damping,
                    _pad: 0,
                };
                let e = ElementStiffness::Axial { length: l };
                p.rope_bending.push(c, ConstraintFamily::Bending, e, (i % 3) as u32);
            }
        }
        p
    }
}

pub(crate) fn validate_rope_material(ctx: &str, m: &RopeMaterial) -> Result<(), ModelError> {
    error::positive(ctx, "linear density (kg/m)", m.linear_density)?;
    error::axial_stiffness(ctx, "stretch stiffness", m.stretch_stiffness)?;
    error::axial_stiffness(ctx, "compression stiffness", m.compression_stiffness)?;
    error::axial_stiffness(ctx, "bend stiffness", m.bend_stiffness)?;
    error::modulus(ctx, "bending modulus", m.bending_modulus, "N·m²")?;
    error::damping(ctx, "damping (s)", m.damping)?;
    error::non_negative(ctx, "radius (m)", m.radius)?;
    error::contact(ctx, "radius", m.radius, m.self_collision, m.self_friction)
}
