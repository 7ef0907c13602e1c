//! Materials in SI units, and their conversion to per-element spring stiffness.
//!
//! A material states how stiff the *material* is, not how stiff each spring is, so that a finer
//! mesh of the same material is not softer (article §3.3: "the finer the mesh, the softer the
//! PBD cloth"). Each spring gets its own stiffness from the material and its geometry:
//!
//! * **Cloth (2-D)**: a material modulus K in N/m (the membrane's Young's modulus times its
//!   thickness). A spring of rest length L that stands for a piece of cloth of area A gets
//!   k = K·A/L² (van Gelder 1998, "Approximate simulation of elastic membranes by triangulated
//!   spring meshes"). For a grid spring along one axis A = w·L with w the width of the strip it
//!   stands for, so k = K·w/L and an n×n grid of any resolution has the sheet stiffness K·W/H.
//! * **Rope (1-D)**: an axial stiffness EA in N; a segment of rest length L gets k = EA/L, so n
//!   segments in series always give EA/L_total.
//!
//! Compliance is α = 1/k (m/N). `f32::INFINITY` stiffness means a rigid constraint (α = 0).
//!
//! Bending has two models ([`Bending`]). Angle bending takes a *bending modulus*: a cloth's
//! flexural rigidity B (N·m, energy ½B∫κ² dA) and a rope's EI (N·m², energy ½EI∫κ² ds),
//! turned into one compliance per hinge or joint in `dihedral.rs` and `rope_bending.rs`. Bend
//! springs take a spring modulus (`bend_stiffness`) scaled like the stretch springs.

use crate::collision::Friction;

/// Default friction of particle contacts: μₛ = 0.5, μₖ = 0.4 (woven cotton on itself).
pub const SELF_FRICTION: Friction = Friction { static_coefficient: 0.5, kinetic_coefficient: 0.4 };

/// A cloth material. All quantities are per unit area of cloth.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClothMaterial {
    /// Areal density ρ_A (kg/m²), > 0.
    pub areal_density: f32,
    /// Membrane stretch modulus K (N/m) for structural springs under tension; may be `INFINITY`.
    pub stretch_stiffness: f32,
    /// Membrane modulus (N/m) for structural springs under compression; may be `INFINITY`.
    pub compression_stiffness: f32,
    /// Shear modulus (N/m) for the shear (diagonal) springs; may be `INFINITY`.
    pub shear_stiffness: f32,
    /// Modulus (N/m) of the bend springs ([`Bending::Springs`]), scaled like the others.
    pub bend_stiffness: f32,
    /// Flexural rigidity B (N·m) of angle bending ([`Bending::Angle`]): the moment per unit
    /// width that bends the sheet to a curvature of 1/m; may be `INFINITY`.
    pub bending_modulus: f32,
    /// Axial damping time τ = k_d/k (s), applied to every spring; 0 for none.
    pub damping: f32,
    /// Cloth thickness (m): particles collide with radius thickness/2.
    pub thickness: f32,
    /// Whether the particles of a cloth of this material collide with each other and with
    /// those of every other body that has it on (self-collision, see
    /// `collision::self_collision`); the thickness must then be > 0. Off by default.
    pub self_collision: bool,
    /// Contact distance of self-collision (m), when it should differ from the thickness (the
    /// particles' radius against colliders stays thickness/2); `None`: the thickness.
    pub self_collision_thickness: Option<f32>,
    /// Friction between layers in self-contact (averaged with the other body's).
    pub self_friction: Friction,
    /// Caps each substep's displacement of the body's particles at 0.2 × the self-contact
    /// distance (the thickness, or `self_collision_thickness`) when self-collision is on (the velocity clamp of Ten Minute Physics' self-collision: speed
    /// ≤ 0.2·t/h, 2.4 m/s for a 1 cm cloth at 20 substeps of 1/60 s), so that layers cannot
    /// pass through each other within a substep. Off by default: it slows falling cloth.
    pub self_collision_speed_clamp: bool,
    /// Whether the cloth's triangles, not only its particles, collide with colliders: virtual
    /// particles at each triangle's centroid and edge midpoints are pushed out of the colliders
    /// and their corrections handed to the vertices, so that a collider's edges and corners do
    /// not poke between the particles (see `collision::triangle_contact`). On by default.
    pub triangle_contact: bool,
    /// Stretch strain |xᵢ − xⱼ|/L₀ − 1 at which a structural or shear constraint breaks
    /// ([`tearing`](crate::tearing)), at least 1e-6 (below, rounding alone would break every
    /// constraint: refused); `INFINITY` (the default): the cloth never tears.
    pub tear_strain: f32,
    /// Elastic energy per unit area of cloth (J/m²) at which a structural or shear constraint
    /// breaks, > 0; `INFINITY` (the default): no energy criterion. A constraint of membrane
    /// modulus K (N/m: [`stretch_stiffness`](Self::stretch_stiffness) for structural,
    /// [`shear_stiffness`](Self::shear_stiffness) for shear constraints) stretched to strain ε
    /// stores ½·k·(L − L₀)² = ½·K·ε²·A, k = K·A/L₀² its spring stiffness (see the module
    /// documentation) and A the area it stands for: an energy density ½·K·ε², the same at any
    /// mesh resolution. It breaks when that density passes `tear_energy`, that is at the strain
    /// √(2·tear_energy/K), or at [`tear_strain`](Self::tear_strain) if that comes first
    /// ([`ClothMaterial::breaking_strain`]). So the stiffer family fails first: at 1 J/m², a
    /// 5 000 N/m weave at 2.0 % strain, its 500 N/m shear at 6.3 %. The density is each
    /// spring's own (the areas the springs stand for overlap: each family covers the sheet
    /// about twice), not a measured fracture energy of the whole sheet. The stretch modulus
    /// must be finite; rigid shear (∞) stores no energy and breaks only at `tear_strain`. Not
    /// with a grid's `spring_stiffness`, which replaces the moduli it is measured against.
    pub tear_energy: f32,
}

impl ClothMaterial {
    /// Whether the cloth tears: a finite [`tear_strain`](Self::tear_strain) or
    /// [`tear_energy`](Self::tear_energy).
    pub fn tears(&self) -> bool {
        self.tear_strain.is_finite() || self.tear_energy.is_finite()
    }

    /// The stretch strain |xᵢ − xⱼ|/L₀ − 1 past which a constraint of `family` breaks:
    /// the smaller of [`tear_strain`](Self::tear_strain) and √(2·[`tear_energy`](Self::tear_energy)/K),
    /// K the family's membrane modulus (N/m; a rigid family, K = ∞, by the tear strain only);
    /// `INFINITY` for bend springs and angles, which never break, and for a cloth that does
    /// not tear.
    pub fn breaking_strain(&self, family: crate::ConstraintFamily) -> f32 {
        let modulus = match family {
            crate::ConstraintFamily::Structural => self.stretch_stiffness,
            crate::ConstraintFamily::Shear => self.shear_stiffness,
            crate::ConstraintFamily::BendSpring | crate::ConstraintFamily::Bending => return f32::INFINITY,
        };
        // A rigid family (K = ∞) stores no energy: only the tear strain breaks it.
        let by_energy = if self.tear_energy.is_finite() && modulus.is_finite() {
            (2.0 * self.tear_energy / modulus).sqrt()
        } else {
            f32::INFINITY
        };
        self.tear_strain.min(by_energy)
    }
}

impl Default for ClothMaterial {
    /// A cotton-like cloth: 0.2 kg/m², K = 5 000 N/m in stretch, 50 N/m in compression,
    /// flexural rigidity B = 10⁻⁵ N·m (a cotton shirting).
    fn default() -> Self {
        ClothMaterial {
            areal_density: 0.2,
            stretch_stiffness: 5.0e3,
            compression_stiffness: 50.0,
            shear_stiffness: 500.0,
            bend_stiffness: 1.0,
            bending_modulus: 1.0e-5,
            damping: 1.0e-4,
            thickness: 0.01,
            self_collision: false,
            self_collision_thickness: None,
            self_friction: SELF_FRICTION,
            self_collision_speed_clamp: false,
            triangle_contact: true,
            tear_strain: f32::INFINITY,
            tear_energy: f32::INFINITY,
        }
    }
}

/// A rope material. All quantities are per unit length of rope.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RopeMaterial {
    /// Linear density (kg/m), > 0.
    pub linear_density: f32,
    /// Axial stiffness EA (N) under tension; may be `INFINITY`.
    pub stretch_stiffness: f32,
    /// Axial stiffness (N) under compression; may be `INFINITY`.
    pub compression_stiffness: f32,
    /// Stiffness (N) of the i–i+2 bend springs ([`Bending::Springs`]), scaled like a segment
    /// of that length (k = bend_stiffness/L).
    pub bend_stiffness: f32,
    /// Bending stiffness EI (N·m²) of angle bending ([`Bending::Angle`]); may be `INFINITY`.
    pub bending_modulus: f32,
    /// Axial damping time τ = k_d/k (s); 0 for none.
    pub damping: f32,
    /// Rope radius (m), used for collisions.
    pub radius: f32,
    /// Whether the rope's particles collide with each other and with those of every other
    /// body that has it on (see [`ClothMaterial::self_collision`]); the radius must then be
    /// > 0. Off by default.
    pub self_collision: bool,
    /// Friction in particle contacts (averaged with the other body's).
    pub self_friction: Friction,
    /// Caps each substep's displacement at 0.2 × the diameter when self-collision is on (see
    /// [`ClothMaterial::self_collision_speed_clamp`]). Off by default.
    pub self_collision_speed_clamp: bool,
}

impl Default for RopeMaterial {
    /// A stiff 1 cm rope: 0.1 kg/m, EA = 10 kN, weak bending (EI = 10⁻³ N·m²).
    fn default() -> Self {
        RopeMaterial {
            linear_density: 0.1,
            stretch_stiffness: 1.0e4,
            compression_stiffness: 1.0e4,
            bend_stiffness: 1.0,
            bending_modulus: 1.0e-3,
            damping: 1.0e-4,
            radius: 0.005,
            self_collision: false,
            self_friction: SELF_FRICTION,
            self_collision_speed_clamp: false,
        }
    }
}

/// Spring stiffness k = K·A/L² (N/m) of a membrane of modulus `modulus` (N/m) over area `area`
/// (m²) for a spring of rest length `rest_length` (m). Infinite modulus gives infinite k.
pub fn membrane_spring_stiffness(modulus: f32, area: f32, rest_length: f32) -> f32 {
    if modulus.is_infinite() { f32::INFINITY } else { modulus * area / (rest_length * rest_length) }
}

/// Spring stiffness k = EA/L (N/m) of a rope segment of axial stiffness `axial` (N).
pub fn rope_spring_stiffness(axial: f32, rest_length: f32) -> f32 {
    if axial.is_infinite() { f32::INFINITY } else { axial / rest_length }
}

/// How a body resists bending.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Bending {
    /// No bending resistance.
    None,
    /// Bend springs: distance constraints across two edges (grid distance 2, rope i–i+2, the
    /// wings of an interior mesh edge), of modulus `bend_stiffness`. They resist folds only
    /// to second order and hold no rest curvature.
    Springs,
    /// Angles: the dihedral angle of every interior edge of a cloth
    /// ([`DihedralBending`](super::DihedralBending), rest angles from the rest shape) and the
    /// angle at every joint of a rope ([`RopeBending`](super::RopeBending), straight at rest),
    /// of modulus `bending_modulus`. The default.
    #[default]
    Angle,
}

impl Bending {
    /// The scene-file word: `none`, `springs` or `angle`.
    pub fn name(self) -> &'static str {
        match self {
            Bending::None => "none",
            Bending::Springs => "springs",
            Bending::Angle => "angle",
        }
    }
}

/// Angular stiffness k = B·L²/A (J/rad²) of a cloth hinge of length `length` (m) between
/// triangles of summed area `area` (m²), for the flexural rigidity `modulus` B (N·m); see
/// `dihedral.rs`. Infinite B gives infinite k.
pub fn hinge_stiffness(modulus: f32, area: f32, length: f32) -> f32 {
    if modulus.is_infinite() { f32::INFINITY } else { modulus * length * length / area }
}

/// The material a body was built with (see [`Body::material`](super::Body::material)).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BodyMaterial {
    /// A cloth's material (per unit area).
    Cloth(ClothMaterial),
    /// A rope's material (per unit length).
    Rope(RopeMaterial),
}

/// How a constraint's stiffness follows from its body's material, so that a material change
/// at run time ([`Model::with_cloth_material`](super::Model::with_cloth_material)) gives each
/// element the stiffness it would have been built with.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum ElementStiffness {
    /// A cloth spring standing for `area` (m²) of membrane over `length` (m):
    /// k = K·area/length² ([`membrane_spring_stiffness`]).
    Membrane { area: f32, length: f32 },
    /// A rope spring of `length` (m): k = EA/length ([`rope_spring_stiffness`]); also a rope
    /// joint of length l̄ (k = EI/l̄, `rope_bending.rs`).
    Axial { length: f32 },
    /// A cloth hinge (an interior edge) of `length` (m) between triangles of summed `area`
    /// (m²): k = B·length²/area (`dihedral.rs`).
    Hinge { area: f32, length: f32 },
    /// A stiffness given directly (`spring_stiffness`, `particle_mass` style overrides): a
    /// material change leaves it alone (its damping time still follows the material).
    Fixed,
}

/// A constraint's body (index into [`Model::bodies`](super::Model::bodies)) and element.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Element {
    pub body: u32,
    pub stiffness: ElementStiffness,
}

impl ElementStiffness {
    /// The stiffness (N/m) of this element for the material modulus `modulus` (N/m for cloth,
    /// N for rope); `None` for a fixed stiffness.
    pub fn stiffness(self, modulus: f32) -> Option<f32> {
        match self {
            ElementStiffness::Membrane { area, length } => Some(membrane_spring_stiffness(modulus, area, length)),
            ElementStiffness::Axial { length } => Some(rope_spring_stiffness(modulus, length)),
            ElementStiffness::Hinge { area, length } => Some(hinge_stiffness(modulus, area, length)),
            ElementStiffness::Fixed => None,
        }
    }
}

/// How a particle's mass follows from its body's density: m = density × share.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum MassSource {
    /// `share` is an area (m²) times the areal density (kg/m²), or a length (m) times the
    /// linear density (kg/m).
    Share(f32),
    /// A mass given directly (`particle_mass`, `end_mass`): density changes leave it alone.
    Fixed,
}
