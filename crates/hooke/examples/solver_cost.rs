//! Cost of one implicit-Euler step against XPBD and symplectic Euler on an n×n cloth.
//!
//! The cloth is NVIDIA Warp's cloth benchmark (DESIGN §4): spacing 0.1 m, 0.1 kg particles,
//! structural, shear and bending springs of k = 1 000 N/m with k_d = 10 N·s/m (τ = 0.01 s), two
//! corners pinned, 1/60 s frames. Timings are wall-clock medians over 60 frames after 30 frames
//! of warm-up, on whatever machine runs it; nothing is asserted.
//!
//! ```text
//! cargo run --release -p hooke --example solver_cost [n]
//! ```

use glam::Vec3;
use hooke::{
    ClothGrid, ClothMaterial, Control, ForceSettings, ForceSolver, Integrator, ModelBuilder, Solver, StepReport,
    XpbdSettings, XpbdSolver,
};
use std::sync::Arc;
use std::time::Instant;

fn model(n: usize) -> (Arc<hooke::Model>, Control) {
    let mut b = ModelBuilder::new();
    let mut g = ClothGrid::new("cloth", n, n, 0.1);
    g.center = Vec3::new(0.0, 2.0, 0.0);
    g.particle_mass = Some(0.1);
    g.spring_stiffness = Some(1000.0);
    g.material = ClothMaterial { damping: 0.01, ..ClothMaterial::default() };
    let id = b.add_cloth_grid(&g).unwrap();
    let model = Arc::new(b.finalize().unwrap());
    let mut control = Control::new();
    let body = &model.bodies()[id.0];
    control.pin(body.grid_index(0, 0).unwrap()).pin(body.grid_index(0, n - 1).unwrap());
    (model, control)
}

/// Median frame time (ms), the last report and the most CG iterations of a frame.
fn time(solver: &mut dyn Solver, control: &Control) -> Result<(f64, StepReport, u32), hooke::SolverError> {
    let mut report = StepReport::default();
    let mut max_cg = 0;
    for _ in 0..30 {
        report = solver.step(control, 1.0 / 60.0)?;
    }
    let mut ms = Vec::with_capacity(60);
    for _ in 0..60 {
        let t = Instant::now();
        report = solver.step(control, 1.0 / 60.0)?;
        ms.push(t.elapsed().as_secs_f64() * 1e3);
        max_cg = max_cg.max(report.linear_iterations);
    }
    ms.sort_by(f64::total_cmp);
    Ok((ms[ms.len() / 2], report, max_cg))
}

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(32);
    let (model, control) = model(n);
    println!(
        "{n}×{n} cloth, {} particles, {} springs, 1/60 s frames",
        model.particle_count(),
        model.distance().constraints().len()
    );
    for parallel in [false, true] {
        let mut runs: Vec<(String, Box<dyn Solver>)> = Vec::new();
        for substeps in [1, 4] {
            let s =
                ForceSettings { integrator: Integrator::ImplicitEuler, substeps, parallel, ..ForceSettings::default() };
            runs.push((
                format!("implicit Euler, {substeps} step/frame"),
                Box::new(ForceSolver::new(model.clone(), s).unwrap()),
            ));
        }
        let s = ForceSettings {
            integrator: Integrator::SymplecticEuler,
            substeps: 16,
            parallel,
            ..ForceSettings::default()
        };
        runs.push(("symplectic Euler, 16 steps/frame".into(), Box::new(ForceSolver::new(model.clone(), s).unwrap())));
        let s = XpbdSettings { parallel, ..XpbdSettings::default() };
        runs.push((
            format!("XPBD, {} substeps × {} iteration/frame", s.substeps, s.iterations),
            Box::new(XpbdSolver::new(model.clone(), s).unwrap()),
        ));
        println!("parallel = {parallel}:");
        for (name, mut solver) in runs {
            let (ms, report, max_cg) = match time(&mut *solver, &control) {
                Ok(t) => t,
                Err(e) => {
                    println!("  {name:<38} stopped: {e}");
                    continue;
                }
            };
            let per_step = ms / report.substeps as f64;
            let cg = if max_cg > 0 {
                format!(", CG ≤ {max_cg} iterations, residual {:.1e}", report.linear_residual)
            } else {
                String::new()
            };
            println!("  {name:<38} {ms:8.3} ms/frame  {per_step:8.4} ms/step{cg}");
        }
    }
}
