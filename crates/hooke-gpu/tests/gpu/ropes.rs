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
