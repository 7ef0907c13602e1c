//! A tear on the GPU (`GpuXpbdSolver::rebuild_torn`): the torn model's distance constraints
//! and hinges are copied on the device from the old buffers where the tear kept them, and its
//! per-particle and per-triangle lists where they are the same (`patch.rs`), and the frames
//! that follow are those of a solver given every record anew, bit for bit — also when the
//! runs it is told were copied are wrong.

use crate::*;
use hooke::tearing::{CopiedRun, CopiedRuns, Cut};

#[test]
fn a_torn_models_records_copied_on_the_device_give_the_frames_of_a_full_upload() {
    let ctx = gpu_or_skip!();
    // A 16×16 cloth (angle bending: hinges too) in the x–z plane, held along its first row,
    // in a wind (the aerodynamic force reads the triangles and the triangles around each
    // particle), swinging onto a sphere (the contact reads the radii); a second cloth after it,
    // away from the blades, whose particles a split in the first renumbers.
    let n = 16;
    let mut b = ModelBuilder::new();
    b.set_air(Air { density: 1.225, drag_coefficient: 1.0, lift_coefficient: 0.3 }).unwrap();
    let mut g = ClothGrid::new("cloth", n, n, 0.04);
    g.center = Vec3::new(0.0, 1.0, 0.0);
    let id = b.add_cloth_grid(&g).unwrap();
    let mut other = ClothGrid::new("other", 4, 4, 0.04);
    other.center = Vec3::new(2.0, 1.0, 0.0);
    b.add_cloth_grid(&other).unwrap();
    b.add_collider(Collider::new("sphere", Shape::Sphere { center: Vec3::new(0.0, 0.8, 0.15), radius: 0.12 })).unwrap();
    let model = Arc::new(b.finalize().unwrap());
    let start_count = model.particle_count();
    let wind = Vec3::new(1.0, 0.0, 2.0);
    let body = model.bodies()[id.0].clone();
    let mut pins: Vec<u32> = (0..n).map(|c| body.grid_index(0, c).unwrap()).collect();
    let mut control = Control { wind, ..Control::default() };
    for &p in &pins {
        control.pin(p);
    }
    let xpbd = XpbdSettings { substeps: 8, iterations: 3, ..XpbdSettings::default() };
    let settings = GpuSettings { xpbd, ..GpuSettings::default() };
    // Four solvers torn alike: told the runs the tear copied, told none (every constraint
    // record uploaded), told runs off by one record (none holds), and rebuilt from the torn
    // model alone (every buffer uploaded: the triangles, inverse masses, radii, texture
    // coordinates and triangles around each particle too, which the others keep where they
    // are the same).
    let mut solvers: Vec<GpuXpbdSolver> =
        (0..4).map(|_| GpuXpbdSolver::new(ctx.clone(), model.clone(), settings).unwrap()).collect();
    let mut model = model;
    for tear in 0..3 {
        for s in &mut solvers {
            for _ in 0..5 {
                s.step(&control, 1.0 / 60.0).unwrap();
            }
        }
        let mut state = State::from_model(&model);
        solvers[0].read_state(&mut state);
        // Vertical blades: across the cloth (its lower part falls), then twice along it.
        let (a, b) = match tear {
            0 => (Vec3::new(-1.0, 0.0, 0.05), Vec3::new(1.0, 0.0, 0.05)),
            1 => (Vec3::new(-0.1, 0.0, -1.0), Vec3::new(-0.1, 0.0, 1.0)),
            _ => (Vec3::new(0.12, 0.0, -1.0), Vec3::new(0.12, 0.0, 1.0)),
        };
        let blade = Cut { points: vec![a, b], direction: Vec3::Y };
        let broken = hooke::tearing::cut(&model, &state.particle_position, &blade);
        let torn = hooke::tearing::tear(&model, &state.particle_position, &broken).unwrap().expect("the blade cut");
        let held = |runs: &[CopiedRun]| runs.iter().map(|r| r.len as usize).sum::<usize>();
        assert!(
            2 * held(&torn.copied.distance) > torn.model.distance().len()
                && 2 * held(&torn.copied.dihedral) > torn.model.dihedral().len(),
            "tear {tear}: most records are copied"
        );
        let off = |runs: &[CopiedRun]| runs.iter().map(|r| CopiedRun { from: r.from + 1, ..*r }).collect();
        let wrong = CopiedRuns { distance: off(&torn.copied.distance), dihedral: off(&torn.copied.dihedral) };
        let next = torn.state(&state);
        let torn_model = Arc::new(torn.model);
        for (s, copied) in solvers.iter_mut().zip([&torn.copied, &CopiedRuns::default(), &wrong]) {
            s.rebuild_torn(torn_model.clone(), &torn.parent, copied, &next).unwrap();
        }
        solvers[3].rebuild(torn_model.clone(), &next).unwrap();
        // The pins go to their particles' copies.
        pins = (0..torn.parent.len() as u32).filter(|&p| pins.contains(&torn.parent[p as usize])).collect();
        control = Control { wind, ..Control::default() };
        for &p in &pins {
            control.pin(p);
        }
        model = torn_model;
    }
    let x: Vec<Vec<Vec3>> = solvers
        .iter_mut()
        .map(|s| {
            for _ in 0..10 {
                s.step(&control, 1.0 / 60.0).unwrap();
            }
            let mut state = State::from_model(&model);
            s.read_state(&mut state);
            state.particle_position
        })
        .collect();
    for (k, other) in x[1..].iter().enumerate() {
        let differ = x[0]
            .iter()
            .zip(other)
            .filter(|(a, b)| a.to_array().map(f32::to_bits) != b.to_array().map(f32::to_bits))
            .count();
        assert_eq!(differ, 0, "solver {}: {differ} of {} particles differ", k + 1, x[0].len());
    }
    // The blades split particles.
    assert!(model.particle_count() > start_count, "nothing split");
    // The second cloth's particles were renumbered.
    assert!(model.bodies()[1].particles.start > start_count as u32 - 16, "the second cloth kept its numbers");
}
