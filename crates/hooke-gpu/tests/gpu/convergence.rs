//! The convergence monitor on the GPU: the residual stretch strain |C + α̃λ|/L₀ of each
//! distance constraint after the last substep (`Solver::constraint_residuals`).

use crate::*;
use hooke::diagnostics::ConstraintResiduals;

/// The GPU computes the residual on the host from the state and multipliers it reads back,
/// with the CPU's function: on a stiff sheet hung by two corners that does not converge at
/// 20 substeps × 1 iteration without tethers (and on the contact-free cloth and rope), the two backends' residuals agree —
/// exactly on lavapipe, where the runs are bit-identical — and asking costs one read-back.
#[test]
fn residuals_match_the_cpu() {
    let ctx = gpu_or_skip!();
    let mut b = ModelBuilder::new();
    let mut g = ClothGrid::new("sheet", 20, 20, 1.0 / 19.0);
    g.rotation = glam::Quat::from_rotation_x(std::f32::consts::FRAC_PI_2);
    g.center = Vec3::new(0.0, 1.0, 0.0);
    g.material = ClothMaterial { areal_density: 0.15, stretch_stiffness: 1e4, ..ClothMaterial::default() };
    let sheet = b.add_cloth_grid(&g).unwrap();
    let model = Arc::new(b.finalize().unwrap());
    let mut control = Control::new();
    control.pin(model.bodies()[sheet.0].grid_index(0, 0).unwrap());
    control.pin(model.bodies()[sheet.0].grid_index(0, 19).unwrap());
    let (contact_free, free_control) = contact_free_scene();
    for (name, model, control) in [("stiff sheet", &model, &control), ("cloth and rope", &contact_free, &free_control)]
    {
        // Without tethers, which would make the stiff sheet converge.
        let (mut cpu, mut gpu) = run_both(&ctx, model, control, XpbdSettings { tethers: false, ..settings() }, 30);
        let (mut rc, mut rg) = (ConstraintResiduals::default(), ConstraintResiduals::default());
        assert!(cpu.constraint_residuals(&mut rc));
        let before = gpu.read_backs();
        assert!(gpu.constraint_residuals(&mut rg));
        assert_eq!(gpu.read_backs(), before + 1);
        assert_eq!(rc.strain.len(), model.distance().len());
        assert_eq!(rc.compliance_dominated, rg.compliance_dominated, "{name}");
        let worst = rc.strain.iter().cloned().filter(|r| r.is_finite()).fold(0.0, f32::max);
        let diff =
            rc.strain.iter().zip(&rg.strain).map(|(a, b)| (a - b).abs()).filter(|d| !d.is_nan()).fold(0.0, f32::max);
        eprintln!("{name}: largest residual {worst:.5}, CPU–GPU difference {diff:.3e}");
        assert!(rc.strain.iter().zip(&rg.strain).all(|(a, b)| a.is_nan() == b.is_nan()));
        if rounding(&ctx).exact() {
            assert_eq!(diff, 0.0, "{name}: lavapipe rounds like the CPU: the residuals must be identical");
        }
        assert!(diff < 1e-4 + 1e-2 * worst, "{name}: {diff}");
        if name == "stiff sheet" {
            assert!(worst > 0.02, "the stiff sheet has not converged: {worst}");
        }
    }
}

/// With the Jacobi solve the last iteration's λ sits in one of two buffers (the solve
/// alternates them and does not copy λ back): after 1 iteration in the second one, after 2 in
/// the first. Reading the other gives λ = 0 or an earlier iterate. On a stiff rope with a heavy
/// end hanging at rest the residual must be the strain minus the physical strain (the weight
/// below each segment times its compliance) at both counts.
#[test]
fn jacobi_residuals_use_the_last_iterations_multipliers() {
    let ctx = gpu_or_skip!();
    let mut b = ModelBuilder::new();
    let mut rope = Rope::straight("rope", Vec3::ZERO, Vec3::new(0.0, -1.0, 0.0), 11);
    rope.material.stretch_stiffness = 1.0e3;
    rope.material.compression_stiffness = 1.0e3;
    rope.material.damping = 0.0;
    rope.bending = hooke::Bending::None;
    let id = b.add_rope(&rope).unwrap();
    let particles = b.body(id).particles.clone();
    b.set_particle_mass(particles.end - 1, 1.0).unwrap();
    let model = Arc::new(b.finalize().unwrap());
    let mut control = Control::new();
    control.pin(particles.start);
    let g = model.gravity().length();
    for iterations in [1, 2] {
        // The rope in the Jacobi solve (not the direct rope solver), no tethers.
        let rope_solver = hooke::RopeSolver::GaussSeidel;
        let xpbd = XpbdSettings { iterations, air_damping: 5.0, rope_solver, tethers: false, ..settings() };
        let s = GpuSettings { xpbd, solve: GpuSolve::plain_jacobi(0.5), ..GpuSettings::default() };
        let mut gpu = GpuXpbdSolver::new(ctx.clone(), model.clone(), s).unwrap();
        for _ in 0..600 {
            gpu.step(&control, 1.0 / 60.0).unwrap();
        }
        let st = state_of(&mut gpu);
        let speed = st.particle_velocity.iter().map(|v| v.length()).fold(0.0, f32::max);
        assert!(speed < 1e-4, "not at rest: {speed} m/s");
        let mut r = ConstraintResiduals::default();
        assert!(gpu.constraint_residuals(&mut r));
        let x = &st.particle_position;
        let mut worst = 0.0f32;
        for (k, c) in model.distance().constraints().iter().enumerate() {
            let mass: f32 = model.particle_mass()[c.i.max(c.j) as usize..particles.end as usize].iter().sum();
            let physical = g * mass * c.compliance_stretch / c.rest_length;
            let strain = ((x[c.i as usize] - x[c.j as usize]).length() - c.rest_length) / c.rest_length;
            let excess = strain - physical;
            assert!(
                (r.strain[k] - excess).abs() <= 0.01 * excess.abs() + 2e-5,
                "{iterations} iteration(s), segment {k}: residual {} vs strain {strain} − physical {physical}",
                r.strain[k]
            );
            worst = worst.max(excess);
        }
        eprintln!("Jacobi, {iterations} iteration(s): largest residual {worst:.4} beyond ~1 % physical strain");
        assert!(worst > 0.01, "{worst}");
    }
}
