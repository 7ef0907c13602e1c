//! Convergence per iteration of the GPU's constraint solves: Gauss–Seidel over colours, plain
//! Jacobi with relaxation ω, and Jacobi with Chebyshev acceleration and ω, ρ chosen from the
//! model ([`GpuSolve::jacobi`]; left out with `--no-chebyshev`).
//!
//! A cloth grid (N×N particles, 1 m, the default cotton-like material, no gravity) starts at
//! rest with every particle displaced randomly by up to ±2.5 % of the grid spacing per axis
//! (or, with `--stretch S`, uniformly scaled by S about the origin); after one substep of
//! 1/60 s with k iterations, the structural stretch strain max((‖xᵢ − xⱼ‖ − L₀)/L₀, 0) that
//! remains is printed as "max/RMS" over the structural constraints, for k = 1 … 256 and each
//! mode ("diverged" where the solver reported a blow-up). The last row is the wall time per
//! iteration (ms), from 10 frames of 20 substeps × 10 iterations queued back to back — on
//! lavapipe a correctness check, not a speed figure.
//!
//! ```text
//! cargo run --release -p hooke-gpu --example jacobi_convergence -- [N] [ω ...] [--stretch S]
//! ```
//!
//! Defaults: N = 16, ω = 1, 0.5, 0.3.

use glam::Vec3;
use hooke::{ClothGrid, ConstraintFamily, Control, Model, ModelBuilder, Solver, State, XpbdSettings};
use hooke_gpu::{GpuContext, GpuSettings, GpuSolve, GpuXpbdSolver};
use std::sync::Arc;
use std::time::Instant;

/// (max, RMS) of the structural stretch strains.
fn stretch(model: &Model, x: &[Vec3]) -> (f64, f64) {
    let (mut max, mut sum, mut count) = (0.0f64, 0.0f64, 0usize);
    for (c, f) in model.distance().constraints().iter().zip(model.distance().families()) {
        if *f == ConstraintFamily::Structural {
            let e = (((x[c.i as usize] - x[c.j as usize]).length() - c.rest_length) / c.rest_length).max(0.0) as f64;
            max = max.max(e);
            sum += e * e;
            count += 1;
        }
    }
    (max, (sum / count.max(1) as f64).sqrt())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut n = 16usize;
    let mut relaxations: Vec<f32> = Vec::new();
    let mut chebyshev = true;
    let mut uniform: Option<f32> = None;
    let mut args = std::env::args().skip(1);
    let mut first = true;
    while let Some(a) = args.next() {
        if a == "--no-chebyshev" {
            chebyshev = false;
        } else if a == "--stretch" {
            uniform = Some(args.next().ok_or("--stretch needs a factor")?.parse()?);
        } else if first {
            n = a.parse()?;
        } else {
            relaxations.push(a.parse()?);
        }
        first = false;
    }
    if n < 2 {
        return Err("N must be ≥ 2".into());
    }
    if relaxations.is_empty() {
        relaxations = vec![1.0, 0.5, 0.3];
    }
    let mut b = ModelBuilder::new();
    b.set_gravity(Vec3::ZERO)?;
    b.add_cloth_grid(&ClothGrid::new("cloth", n, n, 1.0 / (n - 1) as f32))?;
    let model = Arc::new(b.finalize()?);
    let ctx = GpuContext::new()?;
    let mut start = State::from_model(&model);
    let mut seed = 1u32;
    let mut rnd = move || {
        seed = seed.wrapping_mul(1664525).wrapping_add(1013904223);
        (seed >> 8) as f32 / (1u32 << 24) as f32 - 0.5
    };
    for x in &mut start.particle_position {
        match uniform {
            Some(s) => *x *= s,
            None => *x += Vec3::new(rnd(), rnd(), rnd()) * (0.05 / (n - 1) as f32),
        }
    }
    let mut modes = vec![("gauss-seidel".to_string(), GpuSolve::GaussSeidel)];
    modes.extend(relaxations.iter().map(|&w| (format!("jacobi ω={w}"), GpuSolve::plain_jacobi(w))));
    if chebyshev {
        // ω and ρ depend on k; the table's notes list them.
        modes.push(("chebyshev (auto)".to_string(), GpuSolve::jacobi()));
    }
    let (max0, rms0) = stretch(&model, &start.particle_position);
    println!(
        "{}: {n}×{n} cloth, {} particles, {} constraints ({} colours); one substep of 1/60 s from {}",
        ctx.describe(),
        model.particle_count(),
        model.distance().constraints().len(),
        model.distance().colour_count(),
        match uniform {
            Some(s) => format!("a uniform stretch ×{s}"),
            None => "random displacements of ±2.5 % of the spacing".into(),
        }
    );
    println!("structural stretch strain max/RMS: at the start {max0:.2e}/{rms0:.2e}; after k iterations:");
    print!("{:>6}", "k");
    for (name, _) in &modes {
        print!("{name:>20}");
    }
    println!();
    let mut x = Vec::new();
    for iterations in [1u32, 2, 4, 8, 16, 32, 64, 128, 256] {
        print!("{iterations:>6}");
        for &(_, solve) in &modes {
            let xpbd = XpbdSettings { substeps: 1, iterations, air_damping: 0.0, ..XpbdSettings::default() };
            let settings = GpuSettings { xpbd, solve, normals: false, ..GpuSettings::default() };
            let mut gpu = GpuXpbdSolver::new(ctx.clone(), model.clone(), settings)?;
            gpu.write_state(&start)?;
            match gpu.step(&Control::new(), 1.0 / 60.0) {
                Ok(_) => {
                    gpu.try_read_positions(&mut x)?;
                    let (max, rms) = stretch(&model, &x);
                    print!("{:>20}", format!("{max:.2e}/{rms:.2e}"));
                }
                // A blow-up (non-finite, faster than 500 m/s or strained beyond 1 000 %).
                Err(_) => print!("{:>20}", "diverged"),
            }
        }
        println!();
    }
    print!("{:>6}", "ms/it");
    for &(_, solve) in &modes {
        let xpbd = XpbdSettings { substeps: 20, iterations: 10, ..XpbdSettings::default() };
        let settings = GpuSettings { xpbd, solve, normals: false, health_interval: 0, ..GpuSettings::default() };
        let mut gpu = GpuXpbdSolver::new(ctx.clone(), model.clone(), settings)?;
        gpu.step(&Control::new(), 1.0 / 60.0)?;
        gpu.try_read_positions(&mut x)?;
        let t = Instant::now();
        for _ in 0..10 {
            gpu.step(&Control::new(), 1.0 / 60.0)?;
        }
        gpu.try_read_positions(&mut x)?;
        print!("{:>20.4}", t.elapsed().as_secs_f64() * 1e3 / (10.0 * 20.0 * 10.0));
    }
    println!();
    Ok(())
}
