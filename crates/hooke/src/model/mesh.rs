//! Cloth from an arbitrary triangle mesh: stretch springs on the edges, and bending across
//! each interior edge — its dihedral angle (the default) or a bend spring between the two
//! opposite vertices.

use super::builder::Parts;
use super::constraint::{ConstraintFamily, compliance_from_stiffness as alpha};
use super::distance::DistanceConstraint;
use super::grid::validate_cloth_material;
use super::material::{Bending, ClothMaterial, ElementStiffness, MassSource, membrane_spring_stiffness};
use crate::error::{self, ModelError};
use glam::{Quat, Vec2, Vec3};
use std::collections::HashMap;

/// Parameters of [`ModelBuilder::add_cloth_mesh`](super::ModelBuilder::add_cloth_mesh).
///
/// Each edge gets a structural spring of stiffness k = K·A/L² where A is the summed area of
/// the triangles next to it (van Gelder 1998); each edge shared by exactly two triangles gets
/// a dihedral bending constraint with the mesh's angle as its rest angle
/// ([`Bending::Angle`]), or a bend spring between the two vertices opposite it, with the
/// same scaling as the stretch springs ([`Bending::Springs`]).
#[derive(Clone, Debug, PartialEq)]
pub struct ClothMesh {
    /// Body name (unique in the model).
    pub name: String,
    /// Vertex positions in the mesh's own frame (m); every vertex must be used by a triangle.
    pub positions: Vec<Vec3>,
    /// Triangles as vertex indices, counter-clockwise seen from the front.
    pub triangles: Vec<[u32; 3]>,
    /// Texture coordinates (u, v), one per vertex (dimensionless; finite), or `None`. They give
    /// the tangents of [`surface::vertex_tangents`](crate::surface::vertex_tangents).
    pub uvs: Option<Vec<Vec2>>,
    /// Uniform scale applied first.
    pub scale: f32,
    /// Rotation applied second.
    pub rotation: Quat,
    /// Translation applied last (m).
    pub translation: Vec3,
    /// Material.
    pub material: ClothMaterial,
    /// Bending across interior edges: dihedral angles (the default), bend springs or none.
    pub bending: Bending,
    /// Mass of every particle (kg) instead of density × area.
    pub particle_mass: Option<f32>,
}

impl ClothMesh {
    /// A mesh cloth with the default material and identity transform.
    pub fn new(name: impl Into<String>, positions: Vec<Vec3>, triangles: Vec<[u32; 3]>) -> ClothMesh {
        ClothMesh {
            name: name.into(),
            positions,
            triangles,
            uvs: None,
            scale: 1.0,
            rotation: Quat::IDENTITY,
            translation: Vec3::ZERO,
            material: ClothMaterial::default(),
            bending: Bending::Angle,
            particle_mass: None,
        }
    }

    pub(crate) fn validate(&self) -> Result<(), ModelError> {
        let ctx = format!("cloth mesh {:?}", self.name);
        if self.triangles.is_empty() {
            return Err(ModelError::invalid(format!("{ctx}: triangles"), "the mesh has no triangles"));
        }
        error::positive(&ctx, "scale", self.scale)?;
        error::finite_vec(&ctx, "translation", self.translation)?;
        validate_cloth_material(&ctx, &self.material)?;
        if let Some(m) = self.particle_mass {
            error::positive(&ctx, "particle mass (kg)", m)?;
        }
        for (k, p) in self.positions.iter().enumerate() {
            error::finite_vec(&ctx, &format!("vertex {k}"), *p)?;
        }
        if let Some(uvs) = &self.uvs {
            if uvs.len() != self.positions.len() {
                return Err(ModelError::invalid(
                    format!("{ctx}: uvs"),
                    format!("{} UVs for {} vertices (one per vertex)", uvs.len(), self.positions.len()),
                ));
            }
            if let Some(k) = uvs.iter().position(|uv| !uv.is_finite()) {
                return Err(ModelError::invalid(format!("{ctx}: uv {k}"), format!("{} is not finite", uvs[k])));
            }
        }
        let n = self.positions.len();
        let mut used = vec![false; n];
        let scale = self.positions.iter().fold((Vec3::MAX, Vec3::MIN), |(lo, hi), p| (lo.min(*p), hi.max(*p)));
        let diag = (scale.1 - scale.0).length().max(f32::MIN_POSITIVE);
        // A vertex so far out that the mesh's size overflows f32 would make every triangle's
        // area test fail, and be named as a degenerate triangle (with no vertices, the loop
        // below names the index out of range).
        if !diag.is_finite()
            && let Some(v) = (0..n).max_by(|&i, &j| {
                self.positions[i].abs().max_element().total_cmp(&self.positions[j].abs().max_element())
            })
        {
            return Err(ModelError::invalid(
                format!("{ctx}: vertex {v}"),
                format!("at {} m: the mesh spans more than f32 can measure", self.positions[v]),
            ));
        }
        for (t, tri) in self.triangles.iter().enumerate() {
            for &v in tri {
                if v as usize >= n {
                    return Err(ModelError::invalid(
                        format!("{ctx}: triangle {t}"),
                        format!("vertex index {v} is out of range (the mesh has {n} vertices)"),
                    ));
                }
                used[v as usize] = true;
            }
            let [a, b, c] = tri.map(|v| self.positions[v as usize]);
            let area = 0.5 * (b - a).cross(c - a).length();
            if tri[0] == tri[1] || tri[1] == tri[2] || tri[0] == tri[2] || area.is_nan() || area <= 1e-10 * diag * diag
            {
                return Err(ModelError::invalid(
                    format!("{ctx}: triangle {t}"),
                    format!("is degenerate (vertices {:?}, area {area} m²)", tri),
                ));
            }
        }
        if let Some(v) = used.iter().position(|u| !u) {
            return Err(ModelError::invalid(
                format!("{ctx}: vertex {v}"),
                "is used by no triangle (it would have no mass)",
            ));
        }
        Ok(())
    }

    pub(crate) fn build(&self) -> Parts {
        let m = &self.material;
        let n = self.positions.len();
        let mut p = Parts::with_capacity(n, 3 * self.triangles.len(), self.triangles.len());
        p.positions = self.positions.iter().map(|&x| self.translation + self.rotation * (x * self.scale)).collect();
        p.velocities = vec![Vec3::ZERO; n];
        p.radii = vec![m.thickness * 0.5; n];
        p.masses = vec![0.0; n];
        let mut share = vec![0.0f32; n];
        // Edge → (summed area of adjacent triangles, opposite vertices).
        let mut edges: HashMap<(u32, u32), (f32, Vec<u32>)> = HashMap::with_capacity(3 * self.triangles.len() / 2);
        let mut order = Vec::with_capacity(3 * self.triangles.len() / 2);
        for tri in &self.triangles {
            let [a, b, c] = tri.map(|v| p.positions[v as usize]);
            let area = 0.5 * (b - a).cross(c - a).length();
            for v in tri {
                p.masses[*v as usize] += m.areal_density * area / 3.0;
                share[*v as usize] += area / 3.0;
            }
            for k in 0..3 {
                let (u, v, w) = (tri[k], tri[(k + 1) % 3], tri[(k + 2) % 3]);
                let key = (u.min(v), u.max(v));
                let e = edges.entry(key).or_insert_with(|| {
                    order.push(key);
                    (0.0, Vec::new())
                });
                e.0 += area;
                e.1.push(w);
            }
        }
        p.mass_sources = share.into_iter().map(MassSource::Share).collect();
        if let Some(mass) = self.particle_mass {
            p.masses.iter_mut().for_each(|x| *x = mass);
            p.mass_sources.iter_mut().for_each(|s| *s = MassSource::Fixed);
        }
        for key in &order {
            let (area, _) = &edges[key];
            let l = (p.positions[key.0 as usize] - p.positions[key.1 as usize]).length();
            let c = DistanceConstraint {
                i: key.0,
                j: key.1,
                rest_length: l,
                compliance_stretch: alpha(membrane_spring_stiffness(m.stretch_stiffness, *area, l)),
                compliance_compression: alpha(membrane_spring_stiffness(m.compression_stiffness, *area, l)),
                damping: m.damping,
            };
            let e = ElementStiffness::Membrane { area: *area, length: l };
            p.distance.push(c, ConstraintFamily::Structural, e, 0);
        }
        if self.bending == Bending::Springs {
            for key in &order {
                let (area, opposite) = &edges[key];
                if let [a, b] = opposite[..] {
                    let l = (p.positions[a as usize] - p.positions[b as usize]).length();
                    if a != b && l > 0.0 {
                        let k = alpha(membrane_spring_stiffness(m.bend_stiffness, *area, l));
                        let c = DistanceConstraint {
                            i: a.min(b),
                            j: a.max(b),
                            rest_length: l,
                            compliance_stretch: k,
                            compliance_compression: k,
                            damping: m.damping,
                        };
                        let e = ElementStiffness::Membrane { area: *area, length: l };
                        p.distance.push(c, ConstraintFamily::BendSpring, e, 0);
                    }
                }
            }
        }
        let pairs: Vec<[u32; 2]> = p.distance.items.iter().map(|c| [c.i, c.j]).collect();
        p.distance.colours = super::colouring::greedy(n, &pairs);
        p.triangles = self.triangles.clone();
        p.uvs = self.uvs.clone();
        if self.bending == Bending::Angle {
            super::dihedral::add_hinges(&p.positions, &p.triangles, m.bending_modulus, m.damping, &mut p.dihedral);
        }
        p
    }
}
