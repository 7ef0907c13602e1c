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

/// The device's tear check (`check_tear` in `health.wgsl`, [`Solver::tear_check`]) never
/// rules out a tear the host would find: a 12×12 sheet of tear strain 0.08 held along two
/// opposite edges that are pulled apart until it tears, each frame's state checked on the
/// host ([`hooke::tearing::strained`]) and torn as a run tears it. The check is clear in the
/// frames where nothing is near the tear strain (no read-back needed there), also after frames
/// that set it, and set in every frame that tears. Then a sheet sheared at rest, which stretches its shear diagonals past
/// the tear strain but no structural edge: the check must see the shear constraints too.
#[test]
fn the_devices_tear_check_never_misses_a_tear() {
    let ctx = gpu_or_skip!();
    let n = 12;
    let spacing = 0.05;
    let material = ClothMaterial { tear_strain: 0.08, ..ClothMaterial::default() };
    let mut b = ModelBuilder::new();
    b.set_gravity(Vec3::ZERO).unwrap();
    let mut g = ClothGrid::new("sheet", n, n, spacing);
    g.material = material;
    let id = b.add_cloth_grid(&g).unwrap();
    let mut model = Arc::new(b.finalize().unwrap());
    let body = model.bodies()[id.0].clone();
    let edge = |c: usize| -> Vec<u32> { (0..n).map(|r| body.grid_index(r, c).unwrap()).collect() };
    let (left, right) = (edge(0), edge(n - 1));
    let start = model.particle_position().to_vec();
    let xpbd = XpbdSettings { substeps: 10, iterations: 4, ..XpbdSettings::default() };
    let mut solver =
        GpuXpbdSolver::new(ctx.clone(), model.clone(), GpuSettings { xpbd, ..GpuSettings::default() }).unwrap();
    assert_eq!(solver.tear_check(), None, "no frame yet");
    // Which particle of the torn model each comes from, back to the first model.
    let mut origin: Vec<u32> = (0..model.particle_count() as u32).collect();
    let (mut clear, mut tore, mut false_alarms, mut clear_after_a_tear) = (0, 0, 0, 0);
    for frame in 1..=90 {
        // Each edge moves out by 0.15 % of the width per frame.
        let pull = 0.0015 * (n - 1) as f32 * spacing * frame as f32;
        let mut control = Control::default();
        for (p, &o) in origin.iter().enumerate() {
            let side = if left.contains(&o) {
                -1.0
            } else if right.contains(&o) {
                1.0
            } else {
                continue;
            };
            control.pin_to(p as u32, start[o as usize] + Vec3::X * (side * pull));
        }
        solver.step(&control, 1.0 / 60.0).unwrap();
        let check = solver.tear_check().expect("a tearing model's frame is checked");
        let mut state = State::from_model(&model);
        solver.read_state(&mut state);
        let broken = hooke::tearing::strained(&model, &state.particle_position);
        if broken.is_empty() {
            clear += !check as usize;
            clear_after_a_tear += (!check && tore > 0) as usize;
            false_alarms += check as usize;
            continue;
        }
        assert!(check, "frame {frame}: {} constraints break, the device's check is clear", broken.len());
        tore += 1;
        let torn = hooke::tearing::tear(&model, &state.particle_position, &broken).unwrap().expect("it tears");
        let next = torn.state(&state);
        origin = torn.parent.iter().map(|&q| origin[q as usize]).collect();
        model = Arc::new(torn.model);
        solver.rebuild_torn(model.clone(), &torn.parent, &torn.copied, &next).unwrap();
        assert_eq!(solver.tear_check(), None, "frame {frame}: no check of the torn model yet");
    }
    assert!(tore >= 2, "the sheet tore in {tore} frames");
    assert!(clear >= 10, "the check was clear in {clear} frames (false alarms in {false_alarms})");
    // (The flag is the frame's own: clear again after frames that set it.)
    assert!(clear_after_a_tear >= 10, "the check was clear in {clear_after_a_tear} frames after a tear");

    // Sheared at rest: x += 0.4 z. The shear diagonals stretch by up to 22 %, the structural
    // edges along z by 7.7 % (under the tear strain), those along x not at all. A short frame
    // without gravity keeps the shear (a soft shear stiffness).
    let material = ClothMaterial { tear_strain: 0.1, shear_stiffness: 1.0, ..ClothMaterial::default() };
    let mut b = ModelBuilder::new();
    b.set_gravity(Vec3::ZERO).unwrap();
    let mut g = ClothGrid::new("sheared", n, n, spacing);
    g.material = material;
    b.add_cloth_grid(&g).unwrap();
    let model = Arc::new(b.finalize().unwrap());
    let mut solver =
        GpuXpbdSolver::new(ctx.clone(), model.clone(), GpuSettings { xpbd, ..GpuSettings::default() }).unwrap();
    let mut state = State::from_model(&model);
    for x in &mut state.particle_position {
        x.x += 0.4 * x.z;
    }
    solver.write_state(&state).unwrap();
    let control = Control::default();
    solver.step(&control, 1e-4).unwrap();
    solver.read_state(&mut state);
    let broken = hooke::tearing::strained(&model, &state.particle_position);
    let set = model.distance();
    assert!(!broken.is_empty(), "the shear diagonals break");
    assert!(
        broken.iter().all(|&k| set.families()[k as usize] == ConstraintFamily::Shear),
        "only shear constraints break"
    );
    assert_eq!(solver.tear_check(), Some(true), "the device's check sees the shear constraints");
}
