//! The direct rope solver on the GPU (`rope_solver.wgsl`): the CPU's solve, bit for bit on
//! lavapipe, and rigid ropes that stay rigid alongside cloth under the Jacobi solve.

use crate::*;

/// Issue #9's input A released horizontally (a rigid 11-particle chain of 0.1 kg segments with
/// 500 kg at its end): on the GPU its length stays within 1 % and the trajectory is the CPU's
/// (identical on lavapipe).
#[test]
fn gpu_direct_rope_solver_matches_the_cpu_and_keeps_a_heavy_chain_rigid() {
    let ctx = gpu_or_skip!();
    let mut b = ModelBuilder::new();
    let mut chain = Rope::straight("chain", Vec3::new(0.0, 3.0, 0.0), Vec3::new(2.0, 3.0, 0.0), 11);
    chain.material.linear_density = 0.5;
    chain.material.stretch_stiffness = f32::INFINITY;
    chain.material.compression_stiffness = f32::INFINITY;
    let id = b.add_rope(&chain).unwrap();
    let last = b.body(id).particles.end - 1;
    b.set_particle_mass(last, 500.0).unwrap();
    let model = Arc::new(b.finalize().unwrap());
    let mut control = Control::new();
    control.pin(0);
    let s = XpbdSettings { air_damping: 0.0, ..settings() };
    let (mut cpu, mut gpu) = run_both(&ctx, &model, &control, s, 40);
    let (c, g) = (state_of(&mut cpu), state_of(&mut gpu));
    let dx = max_diff(&c.particle_position, &g.particle_position);
    let x = &g.particle_position;
    let length: f32 = x.windows(2).map(|w| (w[1] - w[0]).length()).sum();
    eprintln!("heavy chain on the GPU: length {length:.5} m (rest 2 m), |Δx| against the CPU {dx:.3e} m");
    assert!((length / 2.0 - 1.0).abs() < 0.01, "length {length} m");
    assert!(x[last as usize].y < 2.0, "the chain swung down ({})", x[last as usize]);
    if rounding(&ctx).exact() {
        assert_eq!(dx, 0.0);
    }
    assert!(dx < 1e-3, "{dx}");
}

/// A cloth and a rigid rope on the Jacobi solve: the rope is taken out of the Jacobi iteration
/// and solved directly on the buffer the iteration left its displacements in, so it stays
/// rigid (Jacobi alone stretches it).
#[test]
fn gpu_direct_rope_solver_runs_inside_the_jacobi_solve() {
    let ctx = gpu_or_skip!();
    let (model, control) = contact_free_scene();
    let mut rigid = (*model).clone();
    let rope = 1;
    let mut m = match rigid.bodies()[rope].material {
        hooke::BodyMaterial::Rope(m) => m,
        _ => unreachable!(),
    };
    m.stretch_stiffness = f32::INFINITY;
    m.compression_stiffness = f32::INFINITY;
    rigid = rigid.with_rope_material(rope, m).unwrap();
    let model = Arc::new(rigid);
    let length = |st: &State| {
        let r = model.bodies()[rope].particles.clone();
        let x = &st.particle_position[r.start as usize..r.end as usize];
        x.windows(2).map(|w| (w[1] - w[0]).length()).sum::<f32>()
    };
    let rest = length(&State::from_model(&model));
    for (rope_solver, bound) in [(hooke::RopeSolver::Direct, 0.001), (hooke::RopeSolver::GaussSeidel, f32::INFINITY)] {
        for iterations in [1, 2] {
            let xpbd = XpbdSettings { iterations, rope_solver, tethers: false, ..settings() };
            let s = GpuSettings { xpbd, solve: GpuSolve::plain_jacobi(0.3), ..GpuSettings::default() };
            let mut gpu = GpuXpbdSolver::new(ctx.clone(), model.clone(), s).unwrap();
            let mut worst = 0.0f32;
            for _ in 0..30 {
                gpu.step(&control, 1.0 / 60.0).unwrap();
                worst = worst.max(length(&state_of(&mut gpu)) / rest - 1.0);
            }
            eprintln!(
                "Jacobi, {rope_solver:?} ropes, {iterations} iteration(s): largest rope stretch {:.3} %",
                100.0 * worst
            );
            assert!(worst < bound, "{rope_solver:?}, {iterations} iterations: stretch {worst}");
            if rope_solver == hooke::RopeSolver::GaussSeidel {
                assert!(worst > 0.01, "the Jacobi solve was expected to stretch the rope ({worst})");
            }
        }
    }
}

/// A horizontal cable 1 m long of `n` particles (0.1 kg/m), clamped by its first two particles,
/// of bending stiffness `ei` (N·m²), after 5 s (300 frames, air damping 2/s) on both
/// backends: the tip's droop (m) on the CPU and on the GPU, and the largest difference of a
/// particle's position between them (m).
fn cantilevered_cable(ctx: &Arc<GpuContext>, n: usize, ei: f32, rope_solver: hooke::RopeSolver) -> (f32, f32, f32) {
    let mut b = ModelBuilder::new();
    let mut rope = Rope::straight("cable", Vec3::new(0.0, 1.0, 0.0), Vec3::new(1.0, 1.0, 0.0), n);
    rope.material.bending_modulus = ei;
    let id = b.add_rope(&rope).unwrap();
    let particles = b.body(id).particles.clone();
    let model = Arc::new(b.finalize().unwrap());
    let mut control = Control::new();
    control.pin(particles.start);
    control.pin(particles.start + 1);
    let s = XpbdSettings { air_damping: 2.0, rope_solver, tethers: false, ..settings() };
    let (mut cpu, mut gpu) = run_both(ctx, &model, &control, s, 300);
    let (c, g) = (state_of(&mut cpu), state_of(&mut gpu));
    let tip = particles.end as usize - 1;
    (
        1.0 - c.particle_position[tip].y,
        1.0 - g.particle_position[tip].y,
        max_diff(&c.particle_position, &g.particle_position),
    )
}

/// Issue #9's rope angle bending on the GPU, where the direct solver holds the joints in its
/// banded system with the segments: a horizontal cantilevered cable of high bending stiffness
/// (EI = 1000 N·m²) droops less than 1 % of its length, and at a moderate one (EI = 2 N·m²) as
/// the beam formula wL⁴/(8EI) within 3 % (L the free length plus half a segment, as in the
/// CPU's test `xpbd_cantilevered_cable_holds_its_shape`), at 21 and 51 particles — the CPU's
/// droops, bit for bit on lavapipe. With the joints swept by Gauss–Seidel instead (the rope
/// solver `gauss-seidel`) the stiff cable droops far more than 1 %.
#[test]
fn gpu_cantilevered_cable_holds_its_shape() {
    let ctx = gpu_or_skip!();
    let exact = rounding(&ctx).exact();
    for n in [21, 51] {
        let (stiff_cpu, stiff, dx_stiff) = cantilevered_cable(&ctx, n, 1e3, hooke::RopeSolver::Direct);
        let (moderate_cpu, moderate, dx_moderate) = cantilevered_cable(&ctx, n, 2.0, hooke::RopeSolver::Direct);
        let beam = crate::scenes::cantilevered_cable_beam_droop(n, 2.0);
        eprintln!(
            "GPU cantilever n = {n}: EI = 1000 droop {stiff:.5} m (CPU {stiff_cpu:.5}); EI = 2 droop {moderate:.5} m (CPU {moderate_cpu:.5}), beam formula {beam:.5} m; |Δx| {dx_stiff:.2e}, {dx_moderate:.2e} m"
        );
        assert!(stiff < 0.01, "n = {n}: droop {stiff} m at EI = 1000");
        assert!((moderate - beam).abs() < 0.03 * beam, "n = {n}: droop {moderate} m, beam {beam} m");
        if exact {
            assert_eq!((dx_stiff, dx_moderate), (0.0, 0.0), "n = {n}: the GPU left the CPU's trajectory");
        }
        assert!(dx_stiff < 1e-3 && dx_moderate < 1e-3, "n = {n}: |Δx| {dx_stiff}, {dx_moderate} m");
    }
    let (_, swept, _) = cantilevered_cable(&ctx, 21, 1e3, hooke::RopeSolver::GaussSeidel);
    eprintln!("GPU, Gauss–Seidel joints, n = 21, EI = 1000: droop {swept:.4} m");
    assert!(swept > 0.05, "the swept joints were expected to droop ({swept} m)");
}

/// A fine, stiff cable (2 m of 401 particles: 5 mm segments of 1 g, EA = 10⁶ N) hanging from its
/// pin and set swinging at 4 rad/s, released: in tension from its first frame.
fn swinging_cable() -> (Arc<Model>, Control, State) {
    let mut rope = Rope::straight("cable", Vec3::new(0.0, 3.0, 0.0), Vec3::new(0.0, 1.0, 0.0), 401);
    rope.material.linear_density = 0.2;
    rope.material.stretch_stiffness = 1e6;
    rope.bending = hooke::Bending::None;
    let mut b = ModelBuilder::new();
    b.add_rope(&rope).unwrap();
    let model = Arc::new(b.finalize().unwrap());
    let mut control = Control::new();
    control.pin(0);
    let mut st = State::from_model(&model);
    let pin = st.particle_position[0];
    for (x, v) in st.particle_position.iter().zip(st.particle_velocity.iter_mut()) {
        *v = Vec3::new(0.0, 0.0, 4.0).cross(*x - pin);
    }
    (model, control, st)
}

/// The tension limit on the substep (`hooke::solver::xpbd::stability`) on the GPU: each frame
/// gets the substeps the CPU's limit gives it — the first frame taken again from its start,
/// later ones raised from the last frame's tension, read back with the health record — and
/// the trajectory is the CPU's (bit for bit on lavapipe). The cable stays within 1 % of its
/// length (the CPU: 48 substeps in the first frame, taken again, down to 25 by the twentieth;
/// 0.04 %); at the fixed 20 substeps it zigzags and blows up (the CPU: in frame 10).
#[test]
fn the_tension_limit_gives_the_gpu_the_cpus_substeps() {
    let ctx = gpu_or_skip!();
    let (model, control, st) = swinging_cable();
    let s = XpbdSettings { tethers: false, parallel: false, ..XpbdSettings::default() };
    let mut cpu = XpbdSolver::new(model.clone(), s).unwrap();
    let mut gpu = GpuXpbdSolver::new(ctx.clone(), model.clone(), s).unwrap();
    assert!(gpu.applies_tension_limit());
    cpu.write_state(&st).unwrap();
    gpu.write_state(&st).unwrap();
    let (mut most, mut retries) = (0, 0);
    for frame in 0..20 {
        let (c, g) = (cpu.step(&control, 1.0 / 60.0).unwrap(), gpu.step(&control, 1.0 / 60.0).unwrap());
        assert_eq!((g.substeps, g.retries), (c.substeps, c.retries), "frame {frame}");
        (most, retries) = (most.max(g.substeps), retries + g.retries);
    }
    let (c, g) = (state_of(&mut cpu), state_of(&mut gpu));
    let dx = max_diff(&c.particle_position, &g.particle_position);
    let stretch = |x: &[Vec3]| x.windows(2).map(|w| (w[1] - w[0]).length() / 0.005 - 1.0).fold(0.0, f32::max);
    eprintln!(
        "swinging cable on the GPU: up to {most} substeps, {retries} frame(s) taken again, largest segment strain {:.3} %, |Δx| against the CPU {dx:.3e} m",
        100.0 * stretch(&g.particle_position)
    );
    assert!(most > 20 && retries >= 1, "the limit was not exercised: {most} substeps, {retries} retries");
    assert!(stretch(&g.particle_position) < 0.01);
    if rounding(&ctx).exact() {
        assert_eq!(dx, 0.0);
    }
    assert!(dx < 1e-3, "{dx}");
    // The same cable at the fixed count.
    let fixed = XpbdSettings { max_substeps: 0, ..s };
    let mut gpu = GpuXpbdSolver::new(ctx.clone(), model.clone(), fixed).unwrap();
    assert!(!gpu.applies_tension_limit());
    gpu.write_state(&st).unwrap();
    let mut blew_up = false;
    for _ in 0..20 {
        if gpu.step(&control, 1.0 / 60.0).is_err() {
            blew_up = true;
            break;
        }
    }
    let fixed_stretch = if blew_up { f32::INFINITY } else { stretch(&state_of(&mut gpu).particle_position) };
    eprintln!("at a fixed 20 substeps: blew up {blew_up}, largest segment strain {:.3} %", 100.0 * fixed_stretch);
    assert!(fixed_stretch > 0.05, "{fixed_stretch}");
}

/// Ropes whose solve is longer than an llvmpipe invocation may loop (65 535 iterations in all,
/// `GpuContext::loop_budget`), hanging straight down from a pin: a 15 m cable of 3 001
/// particles (5 mm segments of 1 g, EA = 10⁶ N, stretch only: a tridiagonal band) and a 7.5 m
/// one of 1 501 with joints (band width 4). Two frames on the GPU are the CPU's (bit for bit
/// on lavapipe) and the cables keep their length; a solve cut short by the budget left the
/// first one 24 % stretched.
#[test]
fn long_ropes_are_solved_whole() {
    let ctx = gpu_or_skip!();
    for (n, bending) in [(3001, hooke::Bending::None), (1501, hooke::Bending::Angle)] {
        let length = 0.005 * (n - 1) as f32;
        let mut rope = Rope::straight("cable", Vec3::new(0.0, 3.0, 0.0), Vec3::new(0.0, 3.0 - length, 0.0), n);
        rope.material.linear_density = 0.2;
        rope.material.stretch_stiffness = 1e6;
        rope.bending = bending;
        let mut b = ModelBuilder::new();
        b.add_rope(&rope).unwrap();
        let model = Arc::new(b.finalize().unwrap());
        let mut control = Control::new();
        control.pin(0);
        let s = XpbdSettings { tethers: false, ..settings() };
        let (mut cpu, mut gpu) = run_both(&ctx, &model, &control, s, 2);
        let (c, g) = (state_of(&mut cpu), state_of(&mut gpu));
        let dx = max_diff(&c.particle_position, &g.particle_position);
        let stretch = |x: &[Vec3]| x.windows(2).map(|w| (w[1] - w[0]).length() / 0.005 - 1.0).fold(0.0, f32::max);
        let (sc, sg) = (stretch(&c.particle_position), stretch(&g.particle_position));
        eprintln!(
            "{n}-particle cable, {bending:?} bending: largest segment strain {:.4} % (CPU {:.4} %), |Δx| against the CPU {dx:.3e} m",
            100.0 * sg,
            100.0 * sc
        );
        assert!(sg < 0.01, "{n} particles: strain {sg}");
        if rounding(&ctx).exact() {
            assert_eq!(dx, 0.0, "{n} particles");
        }
        assert!(dx < 1e-4, "{n} particles: {dx}");
    }
}
