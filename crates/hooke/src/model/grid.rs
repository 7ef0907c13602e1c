//! Rectangular cloth grids with structural and shear springs (article §1.1) and bending:
//! dihedral angles (the default) or bend springs.

use super::builder::{Parts, mass_is_usable};
use super::constraint::{ConstraintFamily, compliance_from_stiffness as alpha};
use super::distance::DistanceConstraint;
use super::material::{Bending, ClothMaterial, ElementStiffness, MassSource};
use crate::error::{self, ModelError};
use glam::{Quat, Vec3};

/// Parameters of [`ModelBuilder::add_cloth_grid`](super::ModelBuilder::add_cloth_grid).
///
/// The grid is built in its local x–z plane, `columns` particles along +x and `rows` along +z,
/// centred on the origin, then rotated by `rotation` and moved to `center`. Particle (r, c)
/// has index `first + r·columns + c`. With the identity rotation the cloth is horizontal and
/// its front face (counter-clockwise triangles) looks up (+y); rotating by +90° about x makes
/// it hang with row 0 on top.
#[derive(Clone, Debug, PartialEq)]
pub struct ClothGrid {
    /// Body name (unique in the model).
    pub name: String,
    /// Number of particle rows, ≥ 2.
    pub rows: usize,
    /// Number of particle columns, ≥ 2.
    pub columns: usize,
    /// Distance between neighbouring particles (m), > 0.
    pub spacing: f32,
    /// World position of the grid's centre (m).
    pub center: Vec3,
    /// Orientation of the grid.
    pub rotation: Quat,
    /// Initial velocity of every particle (m/s).
    pub velocity: Vec3,
    /// Material.
    pub material: ClothMaterial,
    /// Structural springs (grid distance 1).
    pub structural: bool,
    /// Shear springs (both cell diagonals).
    pub shear: bool,
    /// Bending: dihedral angles across every interior edge (the default), bend springs
    /// (distance 2 along each axis) or none.
    pub bending: Bending,
    /// Mass of every particle (kg) instead of density × area.
    pub particle_mass: Option<f32>,
    /// Per-spring stiffness k (N/m) for every distance family (structural, shear, bend
    /// springs) instead of the material moduli — the convention of force-based benchmarks
    /// such as NVIDIA Warp's cloth benchmark. Angle bending keeps the material's modulus.
    pub spring_stiffness: Option<f32>,
}

impl ClothGrid {
    /// A grid with structural and shear springs, angle bending and the default material.
    pub fn new(name: impl Into<String>, rows: usize, columns: usize, spacing: f32) -> ClothGrid {
        ClothGrid {
            name: name.into(),
            rows,
            columns,
            spacing,
            center: Vec3::ZERO,
            rotation: Quat::IDENTITY,
            velocity: Vec3::ZERO,
            material: ClothMaterial::default(),
            structural: true,
            shear: true,
            bending: Bending::Angle,
            particle_mass: None,
            spring_stiffness: None,
        }
    }

    /// Width (along columns) and height (along rows) in m.
    pub fn size(&self) -> (f32, f32) {
        ((self.columns.saturating_sub(1)) as f32 * self.spacing, (self.rows.saturating_sub(1)) as f32 * self.spacing)
    }

    /// Number of constraints this grid will have (u128, so it cannot overflow).
    pub fn constraint_count(&self) -> u128 {
        let (r, c) = (self.rows as u128, self.columns as u128);
        let mut n = 0u128;
        if self.structural {
            n += r * c.saturating_sub(1) + r.saturating_sub(1) * c;
        }
        if self.shear {
            n += 2 * r.saturating_sub(1) * c.saturating_sub(1);
        }
        match self.bending {
            Bending::Springs => n += r * c.saturating_sub(2) + r.saturating_sub(2) * c,
            // Interior edges: all edges (rows, columns, one diagonal per cell) but the boundary.
            Bending::Angle => {
                let edges =
                    r * c.saturating_sub(1) + r.saturating_sub(1) * c + r.saturating_sub(1) * c.saturating_sub(1);
                n += edges.saturating_sub(2 * r.saturating_sub(1) + 2 * c.saturating_sub(1));
            }
            Bending::None => {}
        }
        n
    }

    pub(crate) fn validate(&self) -> Result<(), ModelError> {
        let ctx = format!("cloth {:?}", self.name);
        if self.rows < 2 || self.columns < 2 {
            return Err(ModelError::invalid(
                format!("{ctx}: grid"),
                format!("needs at least 2×2 particles, got {}×{}", self.rows, self.columns),
            ));
        }
        error::positive(&ctx, "spacing", self.spacing)?;
        // The model refuses positions beyond 10⁹ m; say so by the key that puts them there (the
        // spacing is finite and > 0 here, so the size is not NaN).
        let (width, height) = self.size();
        if width.max(height) > 1e9 {
            return Err(ModelError::invalid(
                format!("{ctx}: spacing"),
                format!("{:e} m makes the grid {width:e} m × {height:e} m; it must span at most 1e9 m", self.spacing),
            ));
        }
        error::finite_vec(&ctx, "center", self.center)?;
        error::finite_vec(&ctx, "velocity", self.velocity)?;
        if !self.rotation.is_finite() || (self.rotation.length() - 1.0).abs() > 1e-3 {
            return Err(ModelError::invalid(format!("{ctx}: rotation"), "must be a finite unit quaternion"));
        }
        validate_cloth_material(&ctx, &self.material)?;
        match self.particle_mass {
            Some(m) => error::positive(&ctx, "particle mass (kg)", m)?,
            None => {
                // The particles' masses come from the spacing: a corner's is ρh²/4, an inner
                // one's ρh². Where they leave f32's normal range (the model refuses them), say
                // so by the spacing and the density that made them, not by a particle's mass.
                let cell = self.material.areal_density * self.spacing * self.spacing;
                if !(mass_is_usable(0.25 * cell) && mass_is_usable(cell)) {
                    return Err(ModelError::invalid(
                        format!("{ctx}: spacing"),
                        format!(
                            "{:e} m at an areal density of {:e} kg/m² gives particles of {:e} to {:e} kg, \
                             beyond what f32 arithmetic holds (about 1e-38 to 1e38 kg); change the spacing \
                             or the density, or give particle_mass",
                            self.spacing,
                            self.material.areal_density,
                            0.25 * cell,
                            cell
                        ),
                    ));
                }
            }
        }
        if self.spring_stiffness.is_some() && self.material.tear_energy.is_finite() {
            return Err(ModelError::invalid(
                format!("{ctx}: tear energy"),
                "the springs' stiffness is set by spring_stiffness, not by the material's moduli that \
                 tear_energy is measured against; use tear_strain",
            ));
        }
        if let Some(k) = self.spring_stiffness {
            error::stiffness(&ctx, "spring stiffness", k)?;
        }
        Ok(())
    }

    pub(crate) fn build(&self) -> Parts {
        let (rows, cols, h) = (self.rows, self.columns, self.spacing);
        let n = rows * cols;
        let m = &self.material;
        let mut p = Parts::with_capacity(n, self.constraint_count() as usize, 2 * (rows - 1) * (cols - 1));
        let cx = (cols - 1) as f32 * 0.5;
        let cz = (rows - 1) as f32 * 0.5;
        let cell_mass = m.areal_density * h * h;
        for r in 0..rows {
            for c in 0..cols {
                let local = Vec3::new((c as f32 - cx) * h, 0.0, (r as f32 - cz) * h);
                p.positions.push(self.center + self.rotation * local);
                let corners =
                    (if r == 0 || r == rows - 1 { 1 } else { 2 }) * (if c == 0 || c == cols - 1 { 1 } else { 2 });
                p.masses.push(self.particle_mass.unwrap_or(cell_mass * corners as f32 * 0.25));
                p.mass_sources.push(match self.particle_mass {
                    Some(_) => MassSource::Fixed,
                    None => MassSource::Share(h * h * corners as f32 * 0.25),
                });
            }
        }
        // u along the columns (the grid's local x), v along the rows (local z), both in [0, 1].
        p.uvs = Some(
            (0..rows)
                .flat_map(|r| {
                    (0..cols).map(move |c| glam::Vec2::new(c as f32 / (cols - 1) as f32, r as f32 / (rows - 1) as f32))
                })
                .collect(),
        );
        p.velocities = vec![self.velocity; n];
        p.radii = vec![m.thickness * 0.5; n];
        let id = |r: usize, c: usize| (r * cols + c) as u32;
        let k_fixed = self.spring_stiffness;
        // The element of a spring standing for area `a` over length `l`.
        let element = |a: f32, l: f32| match k_fixed {
            Some(_) => ElementStiffness::Fixed,
            None => ElementStiffness::Membrane { area: a, length: l },
        };
        // A strip of width w and length L of modulus K: k = K·w/L (see material.rs).
        let strip = |modulus: f32, w: f32, l: f32| {
            k_fixed.unwrap_or(super::material::membrane_spring_stiffness(modulus, w * l, l))
        };
        let push = |p: &mut Parts,
                    a: u32,
                    b: u32,
                    family,
                    k_stretch: f32,
                    k_compress: f32,
                    colour: u32,
                    e: ElementStiffness| {
            let rest = (p.positions[a as usize] - p.positions[b as usize]).length();
            let c = DistanceConstraint {
                i: a,
                j: b,
                rest_length: rest,
                compliance_stretch: alpha(k_stretch),
                compliance_compression: alpha(k_compress),
                damping: m.damping,
            };
            p.distance.push(c, family, e, colour);
        };
        let edge_w = |boundary: bool| if boundary { 0.5 * h } else { h };
        if self.structural {
            for r in 0..rows {
                for c in 0..cols - 1 {
                    let w = edge_w(r == 0 || r == rows - 1);
                    let (ks, kc) = (strip(m.stretch_stiffness, w, h), strip(m.compression_stiffness, w, h));
                    let e = element(w * h, h);
                    push(&mut p, id(r, c), id(r, c + 1), ConstraintFamily::Structural, ks, kc, (c % 2) as u32, e);
                }
            }
            for r in 0..rows - 1 {
                for c in 0..cols {
                    let w = edge_w(c == 0 || c == cols - 1);
                    let (ks, kc) = (strip(m.stretch_stiffness, w, h), strip(m.compression_stiffness, w, h));
                    let e = element(w * h, h);
                    push(&mut p, id(r, c), id(r + 1, c), ConstraintFamily::Structural, ks, kc, 2 + (r % 2) as u32, e);
                }
            }
        }
        if self.shear {
            // Each diagonal stands for one cell of area h² (k = K·h²/L² = K/2).
            let l = h * std::f32::consts::SQRT_2;
            let k = k_fixed.unwrap_or(super::material::membrane_spring_stiffness(m.shear_stiffness, h * h, l));
            for r in 0..rows - 1 {
                for c in 0..cols - 1 {
                    let e = element(h * h, l);
                    push(&mut p, id(r, c), id(r + 1, c + 1), ConstraintFamily::Shear, k, k, 4 + (r % 2) as u32, e);
                    push(&mut p, id(r, c + 1), id(r + 1, c), ConstraintFamily::Shear, k, k, 6 + (r % 2) as u32, e);
                }
            }
        }
        if self.bending == Bending::Springs {
            let bend = ConstraintFamily::BendSpring;
            for r in 0..rows {
                for c in 0..cols.saturating_sub(2) {
                    let w = edge_w(r == 0 || r == rows - 1);
                    let k = strip(m.bend_stiffness, w, 2.0 * h);
                    let e = element(w * (2.0 * h), 2.0 * h);
                    push(&mut p, id(r, c), id(r, c + 2), bend, k, k, 8 + ((c / 2) % 2) as u32, e);
                }
            }
            for r in 0..rows.saturating_sub(2) {
                for c in 0..cols {
                    let w = edge_w(c == 0 || c == cols - 1);
                    let k = strip(m.bend_stiffness, w, 2.0 * h);
                    let e = element(w * (2.0 * h), 2.0 * h);
                    push(&mut p, id(r, c), id(r + 2, c), bend, k, k, 10 + ((r / 2) % 2) as u32, e);
                }
            }
        }
        for r in 0..rows - 1 {
            for c in 0..cols - 1 {
                let (a, b, cc, d) = (id(r, c), id(r, c + 1), id(r + 1, c), id(r + 1, c + 1));
                p.triangles.push([a, cc, b]);
                p.triangles.push([b, cc, d]);
            }
        }
        if self.bending == Bending::Angle {
            super::dihedral::add_hinges(&p.positions, &p.triangles, m.bending_modulus, m.damping, &mut p.dihedral);
        }
        p
    }
}

pub(crate) fn validate_cloth_material(ctx: &str, m: &ClothMaterial) -> Result<(), ModelError> {
    error::positive(ctx, "areal density (kg/m²)", m.areal_density)?;
    error::stiffness(ctx, "stretch stiffness", m.stretch_stiffness)?;
    error::stiffness(ctx, "compression stiffness", m.compression_stiffness)?;
    error::stiffness(ctx, "shear stiffness", m.shear_stiffness)?;
    error::stiffness(ctx, "bend stiffness", m.bend_stiffness)?;
    error::modulus(ctx, "bending modulus", m.bending_modulus, "N·m")?;
    error::damping(ctx, "damping (s)", m.damping)?;
    error::non_negative(ctx, "thickness (m)", m.thickness)?;
    if m.tear_strain.is_nan() || m.tear_strain <= 0.0 {
        return Err(ModelError::invalid(
            format!("{ctx}: tear strain"),
            format!("must be > 0 (inf: never tears), got {}", m.tear_strain),
        ));
    }
    // A strain that rounding alone passes (f32 lengths carry about 1e-7 of relative error)
    // breaks every constraint at once; the same floor as the energy's below.
    if m.tear_strain < 1e-6 {
        return Err(ModelError::invalid(
            format!("{ctx}: tear strain"),
            format!(
                "{:e} is below rounding (1e-6): every constraint would break at once (inf: never tears)",
                m.tear_strain
            ),
        ));
    }
    if m.tear_energy.is_nan() || m.tear_energy <= 0.0 {
        return Err(ModelError::invalid(
            format!("{ctx}: tear energy"),
            format!("must be > 0 J/m² (inf: no energy criterion), got {}", m.tear_energy),
        ));
    }
    if m.tear_energy.is_finite() && !m.stretch_stiffness.is_finite() {
        return Err(ModelError::invalid(
            format!("{ctx}: tear energy"),
            "a rigid constraint stores no elastic energy: tear_energy needs a finite stretch stiffness \
             (got inf); use tear_strain",
        ));
    }
    // An energy whose breaking strain rounding alone would pass breaks every constraint at once.
    for (family, modulus) in [
        (crate::ConstraintFamily::Structural, m.stretch_stiffness),
        (crate::ConstraintFamily::Shear, m.shear_stiffness),
    ] {
        let strain = (2.0 * m.tear_energy / modulus).sqrt();
        if strain < 1e-6 {
            return Err(ModelError::invalid(
                format!("{ctx}: tear energy"),
                format!(
                    "{} J/m² breaks {} constraints at a strain of {strain:e}, below rounding (1e-6): \
                     every constraint would break at once",
                    m.tear_energy,
                    family.name()
                ),
            ));
        }
    }
    if let Some(t) = m.self_collision_thickness {
        error::positive(ctx, "self-collision thickness (m)", t)?;
    }
    let contact = m.self_collision_thickness.unwrap_or(m.thickness);
    error::contact(ctx, "thickness", contact, m.self_collision, m.self_friction)
}
