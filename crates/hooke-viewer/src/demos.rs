//! The article's interactive demos that the viewer has so far (`hooke view --demo NAME`, or
//! one click in the panel): `cloth` (§5.5) and `pbd-rope` (§3.1, §3.3). Each is a scene, in
//! the scene-file format, plus the controls of its own.

use anyhow::Result;
use hooke_io::scene::Scene;

/// A demo of the article.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Demo {
    /// §5.5: the cloth hung by two corners over a red sphere, in a wind the panel sets, with
    /// a "cut / free fall" button that releases the pins so it drops and wraps the sphere.
    Cloth,
    /// §3.1 and §3.3: a rope of 12 particles hanging from its top one. Under PBD its stiffness
    /// depends on the iterations per frame (a slider); switched to XPBD it no longer does.
    PbdRope,
    /// §2.3: a harmonic oscillator run side by side by the four force-based integrators, with
    /// Δt and k sliders and live plots of position and energy ([`crate::integrators`]).
    Integrators,
    /// §1.1: a 5×5 cloth whose structural, shear and bending springs are drawn by family and
    /// can each be switched off (the model is rebuilt without them), so a drag shows what each
    /// family resists.
    Topology,
    /// §5.2: a rope (two colours, red and black) and a cloth (several colours) with every
    /// constraint drawn in its graph colour, the colours lit one pass after another: the
    /// constraints of one colour share no particle and are solved together.
    Coloring,
}

impl Demo {
    /// Every demo, in the panel's order.
    pub const ALL: [Demo; 5] = [Demo::Topology, Demo::Integrators, Demo::PbdRope, Demo::Coloring, Demo::Cloth];

    /// The name on the command line (`--demo`) and in the panel.
    pub fn name(self) -> &'static str {
        match self {
            Demo::Cloth => "cloth",
            Demo::PbdRope => "pbd-rope",
            Demo::Integrators => "integrators",
            Demo::Topology => "topology",
            Demo::Coloring => "coloring",
        }
    }

    /// The demo called `name`.
    ///
    /// # Errors
    /// For an unknown name, listing the known ones.
    pub fn from_name(name: &str) -> Result<Demo> {
        Demo::ALL.into_iter().find(|d| d.name() == name).ok_or_else(|| {
            let known: Vec<&str> = Demo::ALL.iter().map(|d| d.name()).collect();
            anyhow::anyhow!("unknown demo {name:?} (known: {})", known.join(", "))
        })
    }

    /// Its scene (for `integrators`, which draws plots instead, the small rope of `pbd-rope`,
    /// paused behind them).
    ///
    /// # Errors
    /// Only if the built-in scene text were invalid (a test checks it is not).
    pub fn scene(self) -> Result<Scene> {
        let text = match self {
            Demo::Cloth => hooke_io::scene::DEFAULT_SCENE.to_string(),
            Demo::PbdRope | Demo::Integrators => PBD_ROPE.to_string(),
            Demo::Topology => topology_scene([true; 3]),
            Demo::Coloring => COLORING.to_string(),
        };
        Ok(hooke_io::scene::parse(&text, &format!("<demo {}>", self.name()), self.name(), None, 1 << 30)?)
    }
}

/// The `topology` demo's scene with the families `[structural, shear, bending]` on or off: a
/// 5×5 cloth of 10 cm cells hung by its two top corners, bending by distance-2 springs.
pub fn topology_scene(families: [bool; 3]) -> String {
    let [structural, shear, bending] = families;
    format!(
        r#"
name = "topology"
[solver]
substeps = 20
iterations = 4
air_damping = 1.0
frames = 600
[[cloth]]
name = "grid"
rows = 5
columns = 5
spacing = 0.1
center = [0.0, 1.2, 0.0]
structural = {structural}
shear = {shear}
bending = "{}"
pin_cells = [[0, 0], [0, 4]]
"#,
        if bending { "springs" } else { "none" }
    )
}

/// The `coloring` demo's scene: a rope of 12 particles and an 8×8 cloth, side by side, both
/// hanging, the rope solved by Gauss–Seidel colour by colour (so its two colours show).
const COLORING: &str = r#"
name = "coloring"
[solver]
substeps = 10
iterations = 2
rope_solver = "gauss-seidel"
air_damping = 1.0
frames = 600
[[rope]]
name = "rope"
points = [[-0.6, 1.5, 0.0], [-0.6, 0.6, 0.0]]
particles = 12
pin_indices = [0]
[[cloth]]
name = "cloth"
rows = 8
columns = 8
spacing = 0.1
center = [0.3, 1.2, 0.0]
bending = "springs"
pin_cells = [[0, 0], [0, 7]]
"#;

/// PBD's stiffness factor s of the `pbd-rope` demo (each correction scaled by s, so n
/// iterations of a substep reach 1 − (1 − s)ⁿ of the full projection: the article's
/// iteration-dependent stiffness).
pub const PBD_ROPE_STIFFNESS: f32 = 0.05;

/// The rope of the `pbd-rope` demo: 12 particles over 1.1 m hanging from the first, a soft
/// material (EA = 20 N: under XPBD it stretches by its own weight, ρgL²/2EA ≈ 3 cm), 20
/// substeps of one iteration to start with, PBD's stiffness factor
/// [`PBD_ROPE_STIFFNESS`], Gauss–Seidel along the rope (the direct solver would be rigid at any
/// count), no tethers — so PBD's dependence on the iteration count shows (15 mm of stretch at 1
/// iteration, under 1 mm at 20), and XPBD's independence of it (30 mm at both; tested).
const PBD_ROPE: &str = r#"
name = "pbd-rope"

[solver]
method = "pbd"
pbd_stiffness = 0.05
substeps = 20
iterations = 1
air_damping = 2.0
rope_solver = "gauss-seidel"
tethers = false
frames = 600

[materials.cord]
density = 0.1               # kg/m
stretch_stiffness = 20.0    # N (EA)
bending_modulus = 1e-6      # N·m²
radius = 0.01

[[rope]]
name = "rope"
material = "cord"
points = [[0.0, 1.5, 0.0], [0.0, 0.4, 0.0]]
particles = 12
pin_indices = [0]
"#;
