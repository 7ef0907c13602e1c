//! Worlds (issue #13, item 1): independent scenes packed into one model and solved by the same
//! sweeps, each with its own colliders, gravity, wind and pins, give each scene's positions bit
//! for bit as when it runs alone, and never touch each other.

use glam::Vec3;
use hooke::collision::{Collider, Shape};
use hooke::{Air, ClothGrid, ClothMaterial, Control, Model, ModelBuilder, Rope, Solver, XpbdSettings, XpbdSolver};
use std::sync::Arc;

/// One scene: a cloth grid (pinned at two corners, or free), maybe a rope, maybe a sphere.
#[derive(Clone)]
struct Spec {
    gravity: Vec3,
    wind: Vec3,
    n: usize,
    stiffness: f32,
    pinned: bool,
    sphere: Option<(Vec3, f32)>,
    rope: bool,
    self_collision: bool,
}

fn specs() -> Vec<Spec> {
    let base = Spec {
        gravity: Vec3::new(0.0, -9.81, 0.0),
        wind: Vec3::ZERO,
        n: 12,
        stiffness: 1000.0,
        pinned: true,
        sphere: None,
        rope: false,
        self_collision: false,
    };
    vec![
        // Falls freely through where the next world's sphere is.
        Spec { pinned: false, ..base.clone() },
        Spec {
            pinned: false,
            sphere: Some((Vec3::new(0.0, 0.4, 0.0), 0.25)),
            stiffness: 3000.0,
            self_collision: true,
            ..base.clone()
        },
        Spec { wind: Vec3::new(4.0, 0.0, 1.0), n: 9, ..base.clone() },
        Spec {
            gravity: Vec3::new(0.0, -3.7, 0.0),
            rope: true,
            sphere: Some((Vec3::new(0.3, 0.2, 0.1), 0.2)),
            ..base.clone()
        },
        Spec {
            gravity: Vec3::new(1.0, -9.81, 0.0),
            n: 16,
            self_collision: true,
            pinned: false,
            sphere: Some((Vec3::ZERO, 0.3)),
            ..base
        },
    ]
}

/// Adds the scene's bodies and collider to `b`; returns the particles to pin.
fn add(b: &mut ModelBuilder, s: &Spec, k: usize) -> Vec<u32> {
    let mut g = ClothGrid::new(format!("cloth{k}"), s.n, s.n, 0.05);
    g.center = Vec3::new(0.0, 1.0, 0.0);
    g.material = ClothMaterial {
        stretch_stiffness: s.stiffness,
        self_collision: s.self_collision,
        thickness: 0.02,
        ..ClothMaterial::default()
    };
    let id = b.add_cloth_grid(&g).unwrap();
    let first = b.particle_count() as u32 - (s.n * s.n) as u32;
    let _ = id;
    let mut pins = Vec::new();
    if s.pinned {
        pins = vec![first, first + s.n as u32 - 1];
    }
    if s.rope {
        b.add_rope(&Rope::straight(format!("rope{k}"), Vec3::new(-0.3, 1.2, 0.0), Vec3::new(0.3, 1.2, 0.0), 10))
            .unwrap();
        pins.push(b.particle_count() as u32 - 10);
    }
    if let Some((center, radius)) = s.sphere {
        b.add_collider(Collider::new(format!("ball{k}"), Shape::Sphere { center, radius }).with_friction(0.3, 0.2))
            .unwrap();
    }
    pins
}

fn air() -> Air {
    Air { drag_coefficient: 1.0, lift_coefficient: 0.2, ..Air::default() }
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
    // Each alone.
    let alone: Vec<Vec<Vec3>> = specs
        .iter()
        .enumerate()
        .map(|(k, s)| {
            let mut b = ModelBuilder::new();
            b.set_gravity(s.gravity).unwrap().set_air(air()).unwrap();
            let pins = add(&mut b, s, k);
            let mut control = Control { wind: s.wind, ..Control::new() };
            pins.iter().for_each(|&p| {
                control.pin(p);
            });
            run(b.finalize().unwrap(), &control, frames)
        })
        .collect();
    // Packed.
    let mut b = ModelBuilder::new();
    b.set_air(air()).unwrap();
    let mut control = Control::new();
    for (k, s) in specs.iter().enumerate() {
        if k == 0 {
            b.set_gravity(s.gravity).unwrap();
            control.wind = s.wind;
        } else {
            b.add_world(s.gravity).unwrap();
            control.world_wind.push((s.wind, None));
        }
        for p in add(&mut b, s, k) {
            control.pin(p);
        }
    }
    let model = b.finalize().unwrap();
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
