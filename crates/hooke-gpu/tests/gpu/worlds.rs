//! Worlds on the GPU (issue #13, item 1): eight different scenes packed into one model and
//! solved by the same dispatches give each scene's positions bit for bit as when it runs
//! alone on the GPU, and — on a device that rounds like the CPU (lavapipe) — as the CPU gives
//! for the packed model; worlds never touch.

use crate::scenes::{WorldSpec as Spec, worlds_alone_and_packed};
use crate::*;

fn sphere(center: Vec3, radius: f32) -> Option<Shape> {
    Some(Shape::Sphere { center, radius })
}

fn specs() -> Vec<Spec> {
    let base = Spec { n: 10, ..Spec::default() };
    vec![
        // Falls freely through where the next world's sphere is.
        Spec { pinned: false, ..base.clone() },
        Spec {
            pinned: false,
            collider: sphere(Vec3::new(0.0, 0.6, 0.0), 0.2),
            stiffness: 3000.0,
            self_collision: true,
            ..base.clone()
        },
        Spec { wind: Vec3::new(4.0, 0.0, 1.0), n: 8, ..base.clone() },
        Spec {
            gravity: Vec3::new(0.0, -3.7, 0.0),
            rope: true,
            collider: sphere(Vec3::new(0.2, 0.8, 0.1), 0.15),
            ..base.clone()
        },
        Spec {
            gravity: Vec3::new(1.0, -9.81, 0.0),
            n: 12,
            self_collision: true,
            pinned: false,
            collider: sphere(Vec3::new(0.0, 0.5, 0.0), 0.25),
            ..base.clone()
        },
        // A box whose edges meet the cloth between particles (triangle contact).
        Spec {
            pinned: false,
            collider: Some(Shape::Box {
                center: Vec3::new(0.05, 0.6, 0.0),
                half_extents: Vec3::new(0.12, 0.1, 0.12),
                rotation: Quat::from_rotation_y(0.4),
            }),
            ..base.clone()
        },
        Spec {
            wind: Vec3::new(-2.0, 0.0, 3.0),
            stiffness: 200.0,
            collider: sphere(Vec3::new(0.0, 0.7, 0.2), 0.2),
            ..base.clone()
        },
        Spec { gravity: Vec3::new(0.0, -20.0, 2.0), n: 6, rope: true, ..base },
    ]
}

fn world_settings() -> XpbdSettings {
    XpbdSettings { substeps: 10, iterations: 2, ..XpbdSettings::default() }
}

fn run_gpu(ctx: &Arc<GpuContext>, model: Model, control: &Control, frames: usize) -> Vec<Vec3> {
    let mut solver = GpuXpbdSolver::new(ctx.clone(), Arc::new(model), world_settings()).unwrap();
    for _ in 0..frames {
        solver.step(control, 1.0 / 60.0).unwrap();
    }
    let mut x = Vec::new();
    solver.read_positions(&mut x);
    x
}

fn bits(x: &[Vec3]) -> Vec<[u32; 3]> {
    x.iter().map(|v| v.to_array().map(f32::to_bits)).collect()
}

#[test]
fn packed_worlds_give_each_scene_bit_for_bit_and_never_touch() {
    let ctx = gpu_or_skip!();
    let frames = 60;
    let (alone, packed_model, control) = worlds_alone_and_packed(&specs());
    assert_eq!(packed_model.worlds().len(), 8);
    let worlds: Vec<_> = packed_model.worlds().to_vec();
    let packed = run_gpu(&ctx, packed_model.clone(), &control, frames);
    for (k, (model, control)) in alone.into_iter().enumerate() {
        let mine = &packed[worlds[k].particles.start as usize..worlds[k].particles.end as usize];
        let by_itself = run_gpu(&ctx, model, &control, frames);
        assert_eq!(mine.len(), by_itself.len());
        let differ = bits(mine).iter().zip(bits(&by_itself)).filter(|(a, b)| **a != *b).count();
        assert_eq!(differ, 0, "world {k}: {differ} of {} particles differ from the scene alone", mine.len());
    }
    // World 0 has no collider: its cloth fell through the place of world 1's sphere, which
    // caught world 1's cloth; world 5's box holds its cloth up too.
    let lowest = |k: usize| {
        let w = &worlds[k];
        packed[w.particles.start as usize..w.particles.end as usize].iter().map(|x| x.y).fold(f32::INFINITY, f32::min)
    };
    assert!(lowest(0) < 0.0, "world 0's cloth fell past the sphere of world 1: lowest {}", lowest(0));
    assert!(lowest(1) > 0.3, "world 1's cloth rests on its sphere: lowest {}", lowest(1));
    assert!(lowest(5) > 0.3, "world 5's cloth rests on its box: lowest {}", lowest(5));
    // On a device that rounds like the CPU, the CPU's packed run is the same too.
    if rounding(&ctx).exact() {
        let mut cpu = XpbdSolver::new(Arc::new(packed_model), world_settings()).unwrap();
        for _ in 0..frames {
            cpu.step(&control, 1.0 / 60.0).unwrap();
        }
        let mut x = Vec::new();
        cpu.read_positions(&mut x);
        assert_eq!(bits(&x), bits(&packed), "the CPU's packed run differs from the GPU's");
    }
}

/// The Jacobi solve estimates ω and ρ from the whole model's spectrum, which would make one
/// world's result depend on the others': refused unless both are given.
#[test]
fn jacobi_with_estimated_parameters_is_refused_for_worlds() {
    let ctx = gpu_or_skip!();
    let (_, model, control) = worlds_alone_and_packed(&specs());
    let model = Arc::new(model);
    let estimated = GpuSettings {
        xpbd: world_settings(),
        solve: GpuSolve::Jacobi { relaxation: None, spectral_radius: None },
        ..GpuSettings::default()
    };
    let e = GpuXpbdSolver::new(ctx.clone(), model.clone(), estimated).err().expect("refused");
    assert!(e.to_string().contains("worlds"), "{e}");
    let given = GpuSettings {
        xpbd: world_settings(),
        solve: GpuSolve::Jacobi { relaxation: Some(1.0), spectral_radius: Some(0.5) },
        ..GpuSettings::default()
    };
    let mut solver = GpuXpbdSolver::new(ctx, model, given).unwrap();
    solver.step(&control, 1.0 / 60.0).unwrap();
}
