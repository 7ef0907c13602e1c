//! Worlds (issue #13, item 1): independent scenes packed into one model and solved by the same
//! sweeps, each with its own colliders, gravity, wind and pins, give each scene's positions bit
//! for bit as when it runs alone, and never touch each other.

mod common;

use common::{WorldSpec, worlds_alone_and_packed};
use glam::Vec3;
use hooke::collision::Shape;
use hooke::{Air, ClothGrid, Control, Model, ModelBuilder, Solver, XpbdSettings, XpbdSolver};
use std::sync::Arc;

fn sphere(center: Vec3, radius: f32) -> Option<Shape> {
    Some(Shape::Sphere { center, radius })
}

fn specs() -> Vec<WorldSpec> {
    let base = WorldSpec::default();
    vec![
        // Falls freely through where the next world's sphere is.
        WorldSpec { pinned: false, ..base.clone() },
        WorldSpec {
            pinned: false,
            collider: sphere(Vec3::new(0.0, 0.4, 0.0), 0.25),
            stiffness: 3000.0,
            self_collision: true,
            ..base.clone()
        },
        WorldSpec { wind: Vec3::new(4.0, 0.0, 1.0), n: 9, ..base.clone() },
        WorldSpec {
            gravity: Vec3::new(0.0, -3.7, 0.0),
            rope: true,
            collider: sphere(Vec3::new(0.3, 0.2, 0.1), 0.2),
            ..base.clone()
        },
        WorldSpec {
            gravity: Vec3::new(1.0, -9.81, 0.0),
            n: 16,
            self_collision: true,
            pinned: false,
            collider: sphere(Vec3::ZERO, 0.3),
            ..base
        },
    ]
}

fn run(model: Model, control: &Control, frames: usize) -> Vec<Vec3> {
    let settings = XpbdSettings { substeps: 10, iterations: 2, ..XpbdSettings::default() };
    let mut solver = XpbdSolver::new(Arc::new(model), settings).unwrap();
    for _ in 0..frames {
        solver.step(control, 1.0 / 60.0).unwrap();
    }
    let mut x = Vec::new();
    solver.read_positions(&mut x);
    x
}

#[test]
fn packed_worlds_give_each_scene_bit_for_bit_and_never_touch() {
    let specs = specs();
    let frames = 90;
    let (scenes, model, control) = worlds_alone_and_packed(&specs);
    // Each alone.
    let alone: Vec<Vec<Vec3>> = scenes.into_iter().map(|(model, control)| run(model, &control, frames)).collect();
    assert_eq!(model.worlds().len(), specs.len());
    let worlds: Vec<_> = model.worlds().to_vec();
    let packed = run(model, &control, frames);
    for (k, w) in worlds.iter().enumerate() {
        let mine = &packed[w.particles.start as usize..w.particles.end as usize];
        assert_eq!(mine.len(), alone[k].len());
        let differ = mine
            .iter()
            .zip(&alone[k])
            .filter(|(a, b)| a.to_array().map(f32::to_bits) != b.to_array().map(f32::to_bits))
            .count();
        assert_eq!(differ, 0, "world {k}: {differ} of {} particles differ from the scene alone", mine.len());
    }
    // World 0 has no collider: its cloth fell through the place of world 1's sphere, which
    // caught world 1's cloth.
    let lowest = |k: usize| {
        let w = &worlds[k];
        packed[w.particles.start as usize..w.particles.end as usize].iter().map(|x| x.y).fold(f32::INFINITY, f32::min)
    };
    assert!(lowest(0) < -1.0, "world 0's cloth fell: lowest {}", lowest(0));
    assert!(lowest(1) > 0.0, "world 1's cloth rests on its sphere: lowest {}", lowest(1));
}

#[test]
fn a_world_with_its_own_gravity_falls_at_it() {
    // Two free particles' worth of cloth in two worlds: −9.81 and −1.62 m/s² (the Moon).
    let mut b = ModelBuilder::new();
    b.set_air(Air::default()).unwrap();
    let g = ClothGrid::new("a", 3, 3, 0.1);
    b.add_cloth_grid(&g).unwrap();
    b.add_world(Vec3::new(0.0, -1.62, 0.0)).unwrap();
    b.add_cloth_grid(&ClothGrid { name: "b".into(), ..g.clone() }).unwrap();
    let model = b.finalize().unwrap();
    let settings = XpbdSettings { air_damping: 0.0, tethers: false, ..XpbdSettings::default() };
    let mut solver = XpbdSolver::new(Arc::new(model), settings).unwrap();
    let control = Control::new();
    for _ in 0..60 {
        solver.step(&control, 1.0 / 60.0).unwrap();
    }
    let mut state = hooke::State::from_model(solver.model());
    solver.read_state(&mut state);
    let v = &state.particle_velocity;
    assert!((v[0].y + 9.81).abs() < 1e-3, "{}", v[0].y);
    assert!((v[9].y + 1.62).abs() < 1e-3, "{}", v[9].y);
    // The same bodies in one world are another topology: a solver does not take them as a
    // parameter change.
    let mut one = ModelBuilder::new();
    one.add_cloth_grid(&g).unwrap();
    one.add_cloth_grid(&ClothGrid { name: "b".into(), ..g.clone() }).unwrap();
    let one = Arc::new(one.finalize().unwrap());
    assert!(!solver.model().same_topology(&one));
    assert!(solver.notify_model_changed(one).is_err());
    // "auto" iterations measure the whole model: refused for worlds.
    let auto = XpbdSettings {
        auto_iterations: Some(hooke::AutoIterations { tolerance: 0.01, max_iterations: 8 }),
        ..XpbdSettings::default()
    };
    assert!(XpbdSolver::new(solver.model().clone(), auto).is_err());
}
