//! Particle contacts (issue #10 items 1–2): the spatial hash and cloth self-collision on the
//! CPU, for XPBD and implicit Euler.
//!
//! * The hash's queries equal a brute-force search, at negative coordinates and on cell
//!   borders.
//! * A cloth folded onto itself keeps its layers at least 90 % of the thickness apart with
//!   self-collision on; off, the same fold interpenetrates.
//! * The contact correction is continuous across the contact distance.
//! * Two layers resting on each other come to rest; layers built overlapping relax at a
//!   bounded speed instead of exploding; switching self-collision on mid-run makes no jump.

use glam::Vec3;
use hooke::collision::{Collider, Shape, SpatialHash};
use hooke::{
    ClothGrid, Control, ForceSettings, ForceSolver, Integrator, Model, ModelBuilder, Solver, State, XpbdSettings,
    XpbdSolver,
};
use proptest::prelude::*;
use std::sync::Arc;

mod common;
use common::contact_cases as cases;

// ---------------------------------------------------------------------------------------------
// The spatial hash.

fn brute_force(points: &[Vec3], x: Vec3, r: f32) -> Vec<u32> {
    (0..points.len() as u32).filter(|&i| (points[i as usize] - x).length_squared() <= r * r).collect()
}

/// A coordinate in [−2, 2] m, half of them snapped to a multiple of the cell size (on a
/// border).
fn coordinate(cell: f32) -> impl Strategy<Value = f32> {
    prop_oneof![-2.0f32..2.0, (-20i32..=20).prop_map(move |k| k as f32 * cell)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Every query of the hash returns exactly the points a brute-force search finds, each
    /// once, for points and query centres in [−2, 2]³ m with many on cell borders.
    #[test]
    fn hash_queries_equal_brute_force(
        cell in prop_oneof![Just(0.1f32), Just(0.25f32), 0.05f32..0.5],
        seed in prop::collection::vec((0u8..3, 0u8..3, 0u8..3), 1..300),
        raw in prop::collection::vec((-2.0f32..2.0, -2.0f32..2.0, -2.0f32..2.0), 300),
        queries in prop::collection::vec((coordinate(0.1), coordinate(0.25), coordinate(0.1)), 20),
        radius_fraction in 0.0f32..=1.0,
    ) {
        // Points: random, or snapped to the cell lattice on some axes (borders).
        let points: Vec<Vec3> = seed
            .iter()
            .zip(&raw)
            .map(|(&(a, b, c), &(x, y, z))| {
                let snap = |flag: u8, v: f32| if flag == 0 { (v / cell).round() * cell } else { v };
                Vec3::new(snap(a, x), snap(b, y), snap(c, z))
            })
            .collect();
        let ids: Vec<u32> = (0..points.len() as u32).collect();
        let mut hash = SpatialHash::new();
        hash.build(cell, &ids, |i| points[i as usize].extend(0.0));
        let r = radius_fraction * cell;
        // The points themselves and lattice points as query centres.
        let centres = points.iter().take(20).copied().chain(queries.iter().map(|&(x, y, z)| Vec3::new(x, y, z)));
        for x in centres {
            let mut found = Vec::new();
            hash.query(x, r, |i| points[i as usize], &mut found);
            let mut sorted = found.clone();
            sorted.sort_unstable();
            sorted.dedup();
            prop_assert_eq!(sorted.len(), found.len(), "a point reported twice at {:?}", x);
            prop_assert_eq!(sorted, brute_force(&points, x, r), "query at {:?}, r = {}", x, r);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Cloth self-collision.

/// Which solver runs a scene.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Xpbd,
    Implicit,
}

impl Kind {
    /// Makes this kind's solver for a scene of [`cases`]: XPBD with the scene's settings, or
    /// implicit Euler at the scene's substeps.
    fn make(self) -> impl Fn(&Arc<Model>, XpbdSettings) -> Box<dyn Solver> {
        move |model, s| match self {
            Kind::Xpbd => Box::new(XpbdSolver::new(model.clone(), s).unwrap()),
            Kind::Implicit => {
                let f = ForceSettings {
                    integrator: Integrator::ImplicitEuler,
                    substeps: s.substeps,
                    ..ForceSettings::default()
                };
                Box::new(ForceSolver::new(model.clone(), f).unwrap())
            }
        }
    }
}

/// A 10 × 20 cloth of spacing 2 cm and thickness 3 cm lying on a ground plane with friction.
fn cloth_on_ground(self_collision: bool) -> (Arc<Model>, hooke::Body) {
    let mut g = ClothGrid::new("cloth", 20, 10, 0.02);
    g.center = Vec3::new(0.0, 0.5 * cases::FOLD_THICKNESS, 0.0);
    g.material.thickness = cases::FOLD_THICKNESS;
    g.material.self_collision = self_collision;
    let mut b = ModelBuilder::new();
    let id = b.add_cloth_grid(&g).unwrap();
    let ground = Shape::Plane { point: Vec3::ZERO, normal: Vec3::Y };
    b.add_collider(Collider::new("ground", ground).with_friction(0.6, 0.5)).unwrap();
    let model = Arc::new(b.finalize().unwrap());
    let body = model.bodies()[id.0].clone();
    (model, body)
}

/// A cloth folded onto itself ([`cases::fold`]): with self-collision on no two particles that
/// are not neighbours at rest end closer than 90 % of the thickness, under XPBD and implicit
/// Euler; with it off, the folded half falls through the other (closer than half the
/// thickness).
#[test]
fn a_folded_cloth_keeps_its_layers_apart() {
    for kind in [Kind::Xpbd, Kind::Implicit] {
        let (on, speed_on, _) = cases::fold(true, 150, &kind.make());
        let (off, _, _) = cases::fold(false, 150, &kind.make());
        println!(
            "{kind:?} fold: closest approach {:.1} % of the thickness with self-collision, {:.1} % without; \
             largest speed at the end {speed_on:.2e} m/s",
            100.0 * on,
            100.0 * off
        );
        assert!(on >= 0.9, "{kind:?}: layers {:.1} % of the thickness apart", 100.0 * on);
        assert!(off < 0.5, "{kind:?}: without self-collision the fold should interpenetrate ({off})");
    }
}

/// Two 2-particle ropes, one particle of each placed at the contact distance t plus ε for ε
/// from −2·10⁻⁴ to 2·10⁻⁴ m: the correction one substep applies is 0 for ε ≥ 0 and grows
/// continuously as ε goes below 0: between neighbouring ε it changes by no more than the
/// change of ε plus 10⁻⁶ m ([`cases::check_pair_correction_is_continuous`]).
#[test]
fn the_contact_correction_is_continuous_across_the_contact_distance() {
    cases::check_pair_correction_is_continuous(&Kind::Xpbd.make());
}

/// Two 10 × 10 cloths of thickness 1 cm, one lying on the ground and one lying on it 1 cm
/// above, with self-collision on: after 0.5 s every particle is slower than 10⁻³ m/s, at
/// every frame for 2 s more, and the layers stay at least 90 % of the thickness apart.
#[test]
fn two_resting_layers_stay_at_rest() {
    for kind in [Kind::Xpbd, Kind::Implicit] {
        let (fastest, closest, _) = cases::resting_layers(&kind.make());
        println!("{kind:?} resting layers: fastest particle after 0.5 s {fastest:.2e} m/s, closest {closest:.4} t");
        assert!(fastest < 1e-3, "{kind:?}: a resting layer moves at {fastest} m/s");
        assert!(closest >= 0.9, "{kind:?}: layers at {closest} of the thickness");
    }
}

/// Two cloths built overlapping (0.3 of the thickness apart, no gravity): with self-collision
/// on from the start, or switched on after 0.5 s by a material change, the layers separate to
/// at least 90 % of the thickness without any particle moving faster than 1.5× the
/// depenetration speed (1 m/s) — no explosion and no jump.
#[test]
fn overlapping_layers_relax_without_a_jump() {
    for switch_at in [None, Some(30)] {
        let (closest, fastest, _) = cases::overlapping_layers(switch_at, 120, &Kind::Xpbd.make());
        println!(
            "overlap relaxed (switched on at frame {switch_at:?}): closest {closest:.3} t, fastest {fastest:.3} m/s"
        );
        assert!(closest >= 0.9, "layers still at {closest} of the thickness");
        // Each pair separates at most at the depenetration speed; the cloths' own waves add a
        // little. Without the limit the first substep alone would give 3.6 m/s.
        let bound = 1.5 * hooke::collision::DEPENETRATION_SPEED;
        assert!(fastest <= bound, "a particle reached {fastest} m/s (bound {bound} m/s)");
    }
}

/// Explicit integrators have no contacts stage: a model with self-collision is refused with
/// a message naming the body, not run without it.
#[test]
fn explicit_integrators_refuse_self_collision() {
    let (model, _) = cloth_on_ground(true);
    let s = ForceSettings { integrator: Integrator::SymplecticEuler, ..ForceSettings::default() };
    let err = ForceSolver::new(model, s).err().expect("refused").to_string();
    assert!(err.contains("\"cloth\"") && err.contains("self_collision"), "{err}");
}

/// Linear momentum Σ m v (kg·m/s) and centre of mass (m) of a state.
fn momentum_and_centre(model: &Model, st: &State) -> (glam::DVec3, glam::DVec3) {
    let m = model.particle_mass();
    let p = st.particle_velocity.iter().zip(m).map(|(v, &m)| v.as_dvec3() * m as f64).sum();
    let c = st.particle_position.iter().zip(m).map(|(x, &m)| x.as_dvec3() * m as f64).sum::<glam::DVec3>()
        / model.total_mass();
    (p, c)
}

/// Contacts push both particles of a pair by equal and opposite impulses, so with no gravity,
/// air or collider the total momentum stays zero and the centre of mass stays put — also for
/// two cloths of different sizes, whose particles have different numbers of contacts
/// (dividing each particle's push by its own count would move the centre of mass by
/// centimetres per second), under XPBD and implicit Euler.
#[test]
fn contacts_keep_momentum() {
    let mut b = ModelBuilder::new();
    b.set_gravity(Vec3::ZERO).unwrap();
    for (name, n, y) in [("big", 20, 1.0f32), ("small", 6, 1.03)] {
        let mut g = ClothGrid::new(name, n, n, 0.04);
        g.center = Vec3::new(0.1 * (n == 6) as u8 as f32, y, 0.1 * (n == 6) as u8 as f32);
        g.material.thickness = 0.06;
        g.material.self_collision = true;
        g.particle_mass = Some(0.001);
        b.add_cloth_grid(&g).unwrap();
    }
    let model = Arc::new(b.finalize().unwrap());
    let start = momentum_and_centre(&model, &State::from_model(&model)).1;
    for kind in [Kind::Xpbd, Kind::Implicit] {
        let mut s: Box<dyn Solver> = match kind {
            Kind::Xpbd => Box::new(
                XpbdSolver::new(model.clone(), XpbdSettings { air_damping: 0.0, ..Default::default() }).unwrap(),
            ),
            Kind::Implicit => kind.make()(&model, XpbdSettings::default()),
        };
        let mut st = State::from_model(&model);
        for _ in 0..60 {
            s.step(&Control::new(), 1.0 / 60.0).unwrap();
        }
        s.read_state(&mut st);
        let (p, c) = momentum_and_centre(&model, &st);
        let drift = (c - start).length();
        // The contacts pushed the small cloth (3 cm inside the 6 cm contact distance) away.
        let small = &model.bodies()[1];
        let rise = small.particles.clone().map(|k| st.particle_position[k as usize].y).sum::<f32>()
            / small.particles.len() as f32
            - 1.03;
        println!(
            "{kind:?}: small cloth pushed {rise:.4} m; momentum {:.2e} kg·m/s, centre of mass moved {drift:.2e} m",
            p.length()
        );
        assert!(rise > 0.01, "the cloths must have pushed each other ({rise} m)");
        // f32 rounding over 1200 substeps leaves ~1e-6; dividing each push by the particle's
        // own contact count gave ~1e-3 kg·m/s here.
        assert!(p.length() < 2e-5, "{kind:?}: contacts made momentum {p}");
        assert!(drift < 2e-5, "{kind:?}: the centre of mass moved {drift} m");
    }
}

/// Two identical cloths built at the same place (every particle on its twin) separate to at
/// least 90 % of the thickness instead of staying inside each other.
#[test]
fn coincident_cloths_separate() {
    let (closest, _) = cases::coincident_cloths(90, &Kind::Xpbd.make());
    println!("coincident cloths after 1.5 s: closest pair {closest:.3} of the thickness");
    assert!(closest >= 0.9, "still {closest} of the thickness apart");
}

/// The optional speed clamp: a 1 cm thick cloth with self-collision falling for 0.5 s at the
/// default 20 substeps of 1/60 s never moves faster than 0.2 × thickness / h = 2.4 m/s with
/// the clamp on, and falls freely (≈ 4.9 m/s) with it off.
#[test]
fn the_speed_clamp_caps_falling_cloth_at_a_fifth_of_the_thickness_per_substep() {
    let fastest = |clamp: bool| {
        let mut g = ClothGrid::new("cloth", 8, 8, 0.01);
        g.center = Vec3::new(0.0, 2.0, 0.0);
        g.material.thickness = 0.01;
        g.material.self_collision = true;
        g.material.self_collision_speed_clamp = clamp;
        let mut b = ModelBuilder::new();
        b.add_cloth_grid(&g).unwrap();
        let model = Arc::new(b.finalize().unwrap());
        let mut s = XpbdSolver::new(model.clone(), XpbdSettings { air_damping: 0.0, ..Default::default() }).unwrap();
        let mut st = State::from_model(&model);
        let mut fastest = 0.0f32;
        for _ in 0..30 {
            s.step(&Control::new(), 1.0 / 60.0).unwrap();
            s.read_state(&mut st);
            fastest = st.particle_velocity.iter().map(|v| v.length()).fold(fastest, f32::max);
        }
        fastest
    };
    let (on, off) = (fastest(true), fastest(false));
    let cap = 0.2 * 0.01 * 1200.0;
    println!("fastest particle in 0.5 s of fall: {on:.4} m/s with the clamp (cap {cap} m/s), {off:.4} m/s without");
    assert!(on <= cap * (1.0 + 1e-5) && on > 0.99 * cap, "{on} m/s against a cap of {cap} m/s");
    assert!(off > 4.8, "{off}");
}

/// Cloth–rope and rope–rope contact through the same hash: two light ropes (radius 1 cm,
/// 20 g/m) dropped crosswise onto a cloth held at its corners (spacing 2 cm, thickness 3 cm,
/// K = 2e4 N/m), all with self-collision, come
/// to rest on it and on each other — no particle of a rope ends below the cloth or inside the
/// other rope — while with self-collision off they fall through.
#[test]
fn ropes_rest_on_a_cloth_and_on_each_other() {
    let (on, closest_on, _) = cases::ropes_on_cloth(true, 120, &Kind::Xpbd.make());
    let (off, _, _) = cases::ropes_on_cloth(false, 120, &Kind::Xpbd.make());
    println!(
        "ropes on a cloth: lowest rope particle {on:.4} m above the cloth's lowest point (closest pair {closest_on:.3} \
         of the contact distance); without self-collision {off:.3} m"
    );
    assert!(on > 0.0 && closest_on >= 0.9, "the ropes sank into the cloth or each other: {on} m, {closest_on}");
    assert!(off < -0.5, "without self-collision the ropes should fall through ({off} m)");
}

/// `self_collision_thickness` sets the self-contact distance apart from the thickness: two
/// layers 1 cm thick with a 3 cm self-collision thickness, dropped flat onto the ground, rest
/// 3 cm apart (at least 90 % of it), while the lower one lies the 5 mm of its own radius above
/// the ground (the collider distance stays thickness/2). Without it they would rest 1 cm apart.
#[test]
fn self_collision_thickness_sets_the_distance_between_layers() {
    let gap = |self_thickness: Option<f32>| {
        let mut b = ModelBuilder::new();
        for (k, y) in [0.02f32, 0.08].into_iter().enumerate() {
            let mut g = ClothGrid::new(format!("layer{k}"), 10, 10, 0.02);
            g.center = Vec3::new(0.0, y, 0.0);
            g.material.thickness = 0.01;
            g.material.self_collision = true;
            g.material.self_collision_thickness = self_thickness;
            b.add_cloth_grid(&g).unwrap();
        }
        b.add_collider(
            Collider::new("ground", Shape::Plane { point: Vec3::ZERO, normal: Vec3::Y }).with_friction(0.6, 0.5),
        )
        .unwrap();
        let model = Arc::new(b.finalize().unwrap());
        let mut s = Kind::Xpbd.make()(&model, XpbdSettings::default());
        for _ in 0..90 {
            s.step(&Control::new(), 1.0 / 60.0).unwrap();
        }
        let mut x = Vec::new();
        s.read_positions(&mut x);
        let mean = |r: std::ops::Range<usize>| x[r.clone()].iter().map(|p| p.y).sum::<f32>() / r.len() as f32;
        (mean(0..100), mean(100..200))
    };
    let (low, high) = gap(Some(0.03));
    let (low_default, high_default) = gap(None);
    println!(
        "layers at {low:.4} and {high:.4} m (self thickness 3 cm); {low_default:.4} and {high_default:.4} m by default"
    );
    assert!((low - 0.005).abs() < 0.001, "the lower layer rests at {low} m, not its 5 mm radius");
    assert!(high - low > 0.9 * 0.03 && high - low < 0.033, "layers {} m apart", high - low);
    assert!((high_default - low_default - 0.01).abs() < 0.002, "default gap {}", high_default - low_default);
}
