//! Collisions across the board (issue #10): every analytic collider under XPBD and implicit
//! Euler, with self-collision off and on, and friction against a moving collider at the
//! Coulomb threshold.
//!
//! * A cloth dropped onto a plane, a sphere, a capsule, a box, or a sphere and a box given as
//!   triangle meshes (signed distance grids), settles with no particle deeper than 10 % of its
//!   thickness in the collider, in all 24 combinations.
//! * A box accelerating sideways carries a cloth lying on it while its acceleration is below
//!   μₛ·g, and lets it slip above, the cloth then accelerating at μₖ·g.

mod common;
use common::contact_cases as cases;

use glam::{Quat, Vec3};
use hooke::collision::{Collider, Keyframe, Motion, Shape};
use hooke::{
    ClothGrid, Control, ForceSettings, ForceSolver, Integrator, Model, ModelBuilder, Solver, XpbdSettings, XpbdSolver,
};
use std::sync::Arc;

/// XPBD with a scene's settings, or implicit Euler at its substeps.
fn make(implicit: bool) -> impl Fn(&Arc<Model>, XpbdSettings) -> Box<dyn Solver> {
    move |model, s| -> Box<dyn Solver> {
        if implicit {
            let f = ForceSettings {
                integrator: Integrator::ImplicitEuler,
                substeps: s.substeps,
                ..ForceSettings::default()
            };
            Box::new(ForceSolver::new(model.clone(), f).unwrap())
        } else {
            Box::new(XpbdSolver::new(model.clone(), s).unwrap())
        }
    }
}

/// Every collider × XPBD and implicit Euler × self-collision off and on: no particle ends
/// deeper than 10 % of the thickness (2 mm) in a collider, nor goes deeper during the last
/// second of settling. For the meshes the depth is the grid's, which is exact at the box's
/// faces and within 10⁻⁴ m of the sphere's surface at this resolution.
#[test]
fn no_collider_is_penetrated_in_any_combination() {
    for (name, shape, top) in cases::matrix_shapes() {
        for self_collision in [false, true] {
            for implicit in [false, true] {
                let (end, worst, _) = cases::drop_onto(shape.clone(), top, self_collision, 120, &make(implicit));
                let solver = if implicit { "implicit Euler" } else { "XPBD" };
                println!(
                    "{name:11} self-collision {self_collision:5} {solver:14}: penetration {end:.2e} m at the end, \
                     {worst:.2e} m at worst in the last second"
                );
                assert!(
                    end < 0.002 && worst < 0.002,
                    "{name}, self-collision {self_collision}, {solver}: {end} / {worst} m"
                );
            }
        }
    }
}

/// Below the static threshold (a = 0.75 μₛg) the patch rides the box (slip under 1 mm in 1 s);
/// above it (a = 1.5 μₛg) it slips, accelerating at μₖg, so it falls behind by ½(a − μₖg)t²
/// within 2 % (measured: 0.1 %). With μₛ and μₖ swapped the second figure changes by a third:
/// the test tells them apart.
#[test]
fn a_moving_box_carries_a_cloth_below_static_friction_and_lets_it_slip_above() {
    let g = 9.81f32;
    let (mu_s, mu_k) = (0.4f32, 0.3f32);
    let below = cases::slip(0.75 * mu_s * g, &make(false)).0;
    let a = 1.5 * mu_s * g;
    let above = cases::slip(a, &make(false)).0;
    let expected = 0.5 * (a - mu_k * g);
    println!("slip in 1 s: {below:.2e} m at 0.75 μₛg; {above:.4} m at 1.5 μₛg (Coulomb: {expected:.4} m)");
    assert!(below.abs() < 1e-3, "the patch slipped {below} m below the static threshold");
    assert!((above - expected).abs() < 0.02 * expected, "slipped {above} m, Coulomb says {expected} m");
}

/// A 10 × 10 cloth (1 cm thick) thrown at 20 m/s at a board 1 mm thick — it moves 17–67 mm per
/// substep, far more than the board and its radius — does not pass through at 5, 10 and 20
/// substeps, face on (falling onto a horizontal board) and tilted 30° (it then slides down the
/// frictionless board), under XPBD and implicit Euler: no particle is ever on the far side.
#[test]
fn a_cloth_thrown_at_a_thin_board_does_not_pass_through() {
    for tilt in [0.0f32, 30.0] {
        for substeps in [5u32, 10, 20] {
            for implicit in [false, true] {
                let (lowest, _) = cases::thrown_at_board(tilt, substeps, &make(implicit));
                let solver = if implicit { "implicit Euler" } else { "XPBD" };
                println!(
                    "tilt {tilt}°, {substeps} substeps, {solver}: lowest particle {lowest:.4} m from the board's mid-plane"
                );
                assert!(
                    lowest > 0.0,
                    "tilt {tilt}°, {substeps} substeps, {solver}: a particle passed through ({lowest} m)"
                );
            }
        }
    }
}

/// A particle gliding past a collider within its contact distance keeps its speed: an 8 × 8
/// cloth 2 cm above a ground plane, moving at 1 000 m/s along it without gravity or drag (1.67 m
/// a substep at 10 substeps, 83 times its 2 cm clearance), touches nothing and is still at
/// 1 000 m/s a frame later. When the swept contact took the point that its 64 sphere-tracing
/// steps reached as a contact, the cloth was held back to 576 m/s.
#[test]
fn a_cloth_gliding_past_a_plane_keeps_its_speed() {
    let (slowest, contacts, _) = cases::glide_past_plane(&make(false));
    println!("gliding 2 cm above a plane: slowest particle {slowest} m/s, {contacts} contacts");
    assert_eq!(contacts, 0);
    assert!(slowest > 999.0, "the plane held a particle back to {slowest} m/s");
}

/// The colliders' broad phase changes nothing but the cost: a cloth falling onto 16 capsules
/// (some keyframed, moving and turning) ends bit for bit where testing every collider against
/// every particle leaves it, and does touch the capsules.
#[test]
fn the_broad_phase_gives_the_all_pairs_result() {
    let mut b = ModelBuilder::new();
    let mut g = ClothGrid::new("cloth", 20, 20, 0.05);
    g.center = Vec3::new(0.0, 0.5, 0.0);
    g.material.thickness = 0.01;
    b.add_cloth_grid(&g).unwrap();
    for i in 0..4 {
        for j in 0..4 {
            let c = Vec3::new(-0.36 + 0.24 * i as f32, 0.3, -0.36 + 0.24 * j as f32);
            let axis = if (i + j) % 2 == 0 { Vec3::X } else { Vec3::Z } * 0.08;
            let shape = Shape::Capsule { a: c - axis, b: c + axis, radius: 0.03 };
            b.add_collider(Collider::new(format!("c{i}{j}"), shape).with_friction(0.5, 0.4)).unwrap();
        }
    }
    b.add_collider(Collider::new("ground", Shape::Plane { point: Vec3::ZERO, normal: Vec3::Y })).unwrap();
    let model = Arc::new(b.finalize().unwrap());
    let mut control = Control::new();
    for k in [0, 5, 10] {
        let keys = vec![
            Keyframe::translation(0.0, Vec3::ZERO),
            Keyframe { time: 1.0, translation: Vec3::new(0.1, 0.15, -0.05), rotation: Quat::from_rotation_y(1.0) },
        ];
        control.animate_collider(k, Arc::new(Motion::new(keys).unwrap()));
    }
    let run = |broad_phase: bool| {
        let s = XpbdSettings { collider_broad_phase: broad_phase, ..XpbdSettings::default() };
        let mut solver = XpbdSolver::new(model.clone(), s).unwrap();
        let mut contacts = 0;
        for _ in 0..60 {
            contacts = contacts.max(solver.step(&control, 1.0 / 60.0).unwrap().contacts);
        }
        let mut x = Vec::new();
        solver.read_positions(&mut x);
        (x, contacts)
    };
    let (fast, contacts) = run(true);
    let (all, _) = run(false);
    // Particles within 1 cm of a capsule at the end (the triangles' virtual particles carry
    // much of the load, so fewer particles touch directly).
    let near = fast
        .iter()
        .filter(|&&x| {
            model.colliders()[..16].iter().any(|c| c.signed_distance_at(x, &hooke::collision::Pose::IDENTITY).0 < 0.01)
        })
        .count();
    println!("{contacts} particles touching at most, {near} near a capsule at the end");
    assert!(contacts > 5 && near > 20, "the cloth barely touched the capsules ({contacts}, {near})");
    assert!(fast.iter().zip(&all).all(|(a, b)| a.to_array().map(f32::to_bits) == b.to_array().map(f32::to_bits)));
}

/// A coarse cloth (6 × 6 particles 0.2 m apart, 1 cm thick) draped over a sphere of 0.3 m: on
/// its own, particle contact lets the flat triangles between the particles sink into the
/// sphere by more than the thickness; the triangles' virtual particles keep the whole surface
/// within half the thickness of the sphere's surface. Depth sampled at 28 points per triangle.
#[test]
fn a_coarse_cloth_does_not_sink_into_a_sphere_between_its_particles() {
    let (radius, centre, thickness) = (0.3f32, Vec3::new(0.0, 0.3, 0.0), 0.01f32);
    let depth = |triangle_contact: bool| {
        let mut g = ClothGrid::new("coarse", 6, 6, 0.2);
        g.center = Vec3::new(0.01, 0.75, -0.02);
        g.material.thickness = thickness;
        g.material.triangle_contact = triangle_contact;
        let mut b = ModelBuilder::new();
        b.add_cloth_grid(&g).unwrap();
        let sphere = Shape::Sphere { center: centre, radius };
        b.add_collider(Collider::new("sphere", sphere).with_friction(0.6, 0.5)).unwrap();
        let model = Arc::new(b.finalize().unwrap());
        let mut s = XpbdSolver::new(model.clone(), XpbdSettings { iterations: 4, ..XpbdSettings::default() }).unwrap();
        let mut x = Vec::new();
        for f in 0..120 {
            s.step(&Control::new(), 1.0 / 60.0).unwrap();
            if std::env::var("DBG").is_ok() && f % 10 == 0 {
                s.read_positions(&mut x);
                let lo = x.iter().map(|p| p.y).fold(f32::INFINITY, f32::min);
                let hi = x.iter().map(|p| p.length()).fold(0.0f32, f32::max);
                println!("{triangle_contact} frame {f}: lowest y {lo:.3}, farthest {hi:.3}");
            }
        }
        s.read_positions(&mut x);
        let n = 6;
        let mut deepest = f32::NEG_INFINITY;
        for t in model.triangles() {
            let [p, q, r] = t.map(|v| x[v as usize]);
            for i in 0..=n {
                for j in 0..=(n - i) {
                    let (u, v) = (i as f32 / n as f32, j as f32 / n as f32);
                    let point = p + (q - p) * u + (r - p) * v;
                    deepest = deepest.max(radius - (point - centre).length());
                }
            }
        }
        deepest
    };
    let (on, off) = (depth(true), depth(false));
    println!("coarse cloth on a sphere: surface up to {on:.4} m inside with triangle contact, {off:.4} m without");
    assert!(off > thickness, "without triangle contact the surface sinks only {off} m");
    assert!(on < 0.5 * thickness, "with triangle contact the surface sinks {on} m");
}
