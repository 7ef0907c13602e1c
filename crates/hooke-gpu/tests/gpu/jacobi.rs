//! The Jacobi constraint solve.

use crate::*;

/// Plain Jacobi's relaxation in the tests (the former default): below 2/μ_hi ≈ 0.5, μ_hi ≈ 4
/// the largest eigenvalue of D⁻¹JWJᵀ of a stiff cloth grid with structural and shear
/// constraints (see the `jacobi` and `chebyshev` modules), and far enough from 1 that a
/// relaxation applied to the displacements but not to λ would change the stiffness threefold.
const OMEGA: f32 = 0.3;

fn gpu_settings(xpbd: XpbdSettings, solve: GpuSolve) -> GpuSettings {
    GpuSettings { xpbd, solve, ..GpuSettings::default() }
}

/// Jacobi and Gauss–Seidel solve the same equations, so once each substep's solve has
/// converged a cloth hanging from its top edge settles into the same static drape with either:
/// a 10×10, 1 m cloth of a soft material (K = 10 N/m, so that the weight, 0.2 kg/m² ·
/// 9.81 m/s², stretches the top rows by ≈ 20 % and the bottom edge drops by several
/// centimetres), 10 substeps, 3 s of heavy air damping. Their drapes agree to 1 % of the
/// cloth's size, several times less than the sag itself.
///
/// Iterations: the material is so compliant at h = 1/600 s (α̃ = α/h² ≈ 36 000 against
/// wᵢ + wⱼ ≈ 800) that Gauss–Seidel converges in one or two iterations and 5 are plenty;
/// Jacobi with ω = 0.3 applies only 1 − 0.7ᵏ of the converged λ after k iterations (83 % at
/// k = 5, which was measured to give a 21 % softer sag), so it gets 20 (99.9 %).
#[test]
fn jacobi_and_gauss_seidel_give_the_same_drape() {
    let ctx = gpu_or_skip!();
    let n = 10;
    let material = ClothMaterial {
        stretch_stiffness: 10.0,
        compression_stiffness: 10.0,
        shear_stiffness: 10.0,
        bend_stiffness: 0.01,
        bending_modulus: 1e-5,
        damping: 0.0,
        thickness: 0.0,
        ..ClothMaterial::default()
    };
    let (model, control) = scenes::hanging_cloth(n, 1.0, material);
    let drape = |solve, iterations| {
        let xpbd = XpbdSettings { substeps: 10, iterations, air_damping: 3.0, ..settings() };
        let mut gpu = GpuXpbdSolver::new(ctx.clone(), model.clone(), gpu_settings(xpbd, solve)).unwrap();
        for _ in 0..180 {
            gpu.step(&control, 1.0 / 60.0).unwrap();
        }
        state_of(&mut gpu)
    };
    let gs = drape(GpuSolve::GaussSeidel, 5);
    let jacobi = drape(GpuSolve::plain_jacobi(OMEGA), 20);
    let body = &model.bodies()[0];
    let sag = |st: &State| {
        (0..n)
            .map(|c| {
                let k = body.grid_index(n - 1, c).unwrap() as usize;
                model.particle_position()[k].y - st.particle_position[k].y
            })
            .sum::<f32>()
            / n as f32
    };
    let dx = max_diff(&gs.particle_position, &jacobi.particle_position);
    let speed = jacobi.particle_velocity.iter().map(|v| v.length()).fold(0.0, f32::max);
    eprintln!(
        "drape: sag Gauss–Seidel {:.4} m, Jacobi {:.4} m; max |Δx| = {dx:.3e} m; Jacobi max speed {speed:.2e} m/s",
        sag(&gs),
        sag(&jacobi)
    );
    assert!(speed < 2e-2, "not at rest: {speed} m/s");
    assert!(sag(&gs) > 0.04, "sag {} m: too stiff to tell the solves apart", sag(&gs));
    assert!(dx < 0.01, "drapes differ by {dx} m (1 % of the cloth is 0.01 m)");
}

/// Root mean square of the structural stretch strains max((‖xᵢ − xⱼ‖ − L₀)/L₀, 0).
fn rms_stretch(model: &Model, x: &[Vec3]) -> f64 {
    let (mut sum, mut count) = (0.0f64, 0usize);
    for (c, f) in model.distance().constraints().iter().zip(model.distance().families()) {
        if *f == ConstraintFamily::Structural {
            let e = (((x[c.i as usize] - x[c.j as usize]).length() - c.rest_length) / c.rest_length).max(0.0) as f64;
            sum += e * e;
            count += 1;
        }
    }
    (sum / count as f64).sqrt()
}

/// The known trade-off of Jacobi: per iteration it reduces the constraint residual more
/// slowly than Gauss–Seidel. A 12×12 cloth with the default (stiff) cotton material, no
/// gravity, starts at rest with every particle displaced randomly by up to 2.5 % of the grid
/// spacing per axis; after one substep of 1/60 s with k = 1…32 iterations the RMS structural
/// stretch strain falls with k in both modes, and at every k Jacobi's is the larger.
#[test]
fn jacobi_residual_falls_with_iterations_but_slower_than_gauss_seidel() {
    let ctx = gpu_or_skip!();
    let n = 12;
    let mut b = ModelBuilder::new();
    b.set_gravity(Vec3::ZERO).unwrap();
    b.add_cloth_grid(&ClothGrid::new("cloth", n, n, 1.0 / (n - 1) as f32)).unwrap();
    let model = Arc::new(b.finalize().unwrap());
    let mut start = State::from_model(&model);
    let mut seed = 1u32;
    let mut rnd = move || {
        seed = seed.wrapping_mul(1664525).wrapping_add(1013904223);
        (seed >> 8) as f32 / (1u32 << 24) as f32 - 0.5
    };
    for x in &mut start.particle_position {
        *x += Vec3::new(rnd(), rnd(), rnd()) * (0.05 / (n - 1) as f32);
    }
    let initial = rms_stretch(&model, &start.particle_position);
    let residual = |solve, iterations| {
        let xpbd = XpbdSettings { substeps: 1, iterations, air_damping: 0.0, ..settings() };
        let mut gpu = GpuXpbdSolver::new(ctx.clone(), model.clone(), gpu_settings(xpbd, solve)).unwrap();
        gpu.write_state(&start).unwrap();
        gpu.step(&Control::new(), 1.0 / 60.0).unwrap();
        rms_stretch(&model, &state_of(&mut gpu).particle_position)
    };
    let counts = [1, 2, 4, 8, 16, 32];
    let gs: Vec<f64> = counts.iter().map(|&k| residual(GpuSolve::GaussSeidel, k)).collect();
    let jacobi: Vec<f64> = counts.iter().map(|&k| residual(GpuSolve::plain_jacobi(OMEGA), k)).collect();
    eprintln!("RMS stretch strain, start {initial:.3e}");
    for (k, (g, j)) in counts.iter().zip(gs.iter().zip(&jacobi)) {
        eprintln!("  {k:>3} iterations: Gauss–Seidel {g:.3e}, Jacobi ω={OMEGA} {j:.3e}");
    }
    assert!(jacobi[0] < initial, "one Jacobi iteration did not reduce the residual");
    for w in jacobi.windows(2).chain(gs.windows(2)) {
        assert!(w[1] < w[0], "the residual grew with more iterations: {gs:?} {jacobi:?}");
    }
    for (g, j) in gs.iter().zip(&jacobi) {
        assert!(j > g, "Jacobi converged faster than Gauss–Seidel: {gs:?} {jacobi:?}");
    }
}

/// Chebyshev acceleration (Wang 2015) with ω and ρ chosen from the model: a 16×16, 1 m sheet
/// of K = 1e4 N/m hung from its top row, undamped (no axial or air damping, so nothing but
/// the solve's own behaviour keeps it stable), 20 substeps, 2/3 s. The RMS structural strain
/// at the end, at k iterations per substep:
///
/// - the automatic parameters never blow up, at k = 1, 2, 3, 5, 10;
/// - at k = 3 and 10 Chebyshev holds the sheet tighter than plain Jacobi (ω = 0.3) — at 10 at
///   least 3× tighter — and at k = 10 tighter than colour Gauss–Seidel;
/// - the overshoot bound matters: the same solve with ρ = 0.98 at k = 5 (the estimated ρ,
///   without the cap ρ₅ ≈ 0.92 that keeps the error polynomial above −¼) is unstable — it
///   ends at several times the automatic solve's strain or blows up.
#[test]
fn chebyshev_jacobi_holds_a_stiff_sheet_tighter_than_plain_jacobi() {
    let ctx = gpu_or_skip!();
    let n = 16;
    let material = ClothMaterial {
        areal_density: 0.15,
        stretch_stiffness: 1e4,
        compression_stiffness: 1e4,
        damping: 0.0,
        ..ClothMaterial::default()
    };
    let (model, control) = scenes::hanging_cloth(n, 1.0, material);
    // The substep: 20 per 1/60 s frame.
    const H: f32 = 1.0 / 1200.0;
    let strain = |solve: GpuSolve, iterations: u32| -> Option<f64> {
        let xpbd = XpbdSettings { substeps: 20, iterations, air_damping: 0.0, tethers: false, ..settings() };
        let mut gpu = GpuXpbdSolver::new(ctx.clone(), model.clone(), gpu_settings(xpbd, solve)).unwrap();
        for _ in 0..40 {
            if gpu.step(&control, 1.0 / 60.0).is_err() {
                return None;
            }
        }
        Some(rms_stretch(&model, &state_of(&mut gpu).particle_position))
    };
    let show = |s: Option<f64>| s.map_or("blew up".to_string(), |s| format!("{:.3} %", 100.0 * s));
    let mut cheb = std::collections::BTreeMap::new();
    for k in [1u32, 2, 3, 5, 10] {
        let s = strain(GpuSolve::jacobi(), k);
        let (w, rho) = GpuSolve::jacobi()
            .jacobi_parameters(&model, &XpbdSettings { iterations: k, ..settings() }, Some(H))
            .unwrap();
        eprintln!("  k = {k:>2}: Chebyshev (ω {w:.3}, ρ {rho:.3}) {}", show(s));
        cheb.insert(k, s.unwrap_or_else(|| panic!("Chebyshev Jacobi blew up at {k} iterations")));
    }
    for k in [3u32, 10] {
        let plain = strain(GpuSolve::plain_jacobi(OMEGA), k).unwrap_or(f64::INFINITY);
        eprintln!("  k = {k:>2}: plain Jacobi ω = {OMEGA} {}", show(Some(plain)));
        let factor = if k == 10 { 3.0 } else { 1.0 };
        assert!(cheb[&k] * factor < plain, "k = {k}: Chebyshev {} against plain Jacobi {plain}", cheb[&k]);
    }
    let gs = strain(GpuSolve::GaussSeidel, 10).unwrap();
    eprintln!("  k = 10: Gauss–Seidel {}", show(Some(gs)));
    assert!(cheb[&10] < gs, "k = 10: Chebyshev {} against Gauss–Seidel {gs}", cheb[&10]);
    let (w, _) =
        GpuSolve::jacobi().jacobi_parameters(&model, &XpbdSettings { iterations: 5, ..settings() }, Some(H)).unwrap();
    let uncapped = strain(GpuSolve::Jacobi { relaxation: Some(w), spectral_radius: Some(0.98) }, 5);
    eprintln!("  k =  5, ρ = 0.98 (no overshoot cap): {}", show(uncapped));
    let capped = cheb[&5];
    assert!(uncapped.is_none_or(|s| s > 3.0 * capped), "ρ = 0.98 at 5 iterations stayed stable: {uncapped:?}");
}

/// The article's demo cloth (`scenes/cloth_on_sphere.toml`'s cotton, 1.46 m, hung by the two
/// corners of its first row, in its wind and air) at 64² without the sphere, 10 substeps × 8
/// iterations. As it swings, folds run down from the free corners, where pairs of particles turn
/// by tens of degrees within a substep. The sweeps project a pair along its direction at the
/// start of the substep until it has turned by 25°, then along its direction now; with that
/// rule Chebyshev's extrapolation blew the cloth up at frame 59 (plain Jacobi and Gauss–Seidel
/// held it), and with the start direction blended into the one now between 15° and 35° too.
/// The Jacobi solve now blends them between 3° and 10° (`blended_step` in `jacobi.wgsl`): the
/// cloth hangs for 75 frames with Chebyshev's automatic ω and ρ, within 2 % residual strain at
/// every frame and below Gauss–Seidel's worst at the same budget.
#[test]
fn chebyshev_jacobi_holds_the_demo_cloth_through_its_folds() {
    use hooke::diagnostics::ConstraintResiduals;
    let ctx = gpu_or_skip!();
    let n = 64;
    let mut b = ModelBuilder::new();
    let mut g = ClothGrid::new("cloth", n, n, 1.4625 / (n - 1) as f32);
    g.center = Vec3::new(0.0, 2.0, 0.0);
    g.material = ClothMaterial {
        areal_density: 0.2,
        stretch_stiffness: 5000.0,
        compression_stiffness: 50.0,
        shear_stiffness: 500.0,
        bending_modulus: 1e-5,
        damping: 1e-4,
        thickness: 0.01,
        triangle_contact: false,
        ..ClothMaterial::default()
    };
    let id = b.add_cloth_grid(&g).unwrap();
    b.set_air(Air { density: 1.225, drag_coefficient: 1.0, lift_coefficient: 0.0 }).unwrap();
    let model = Arc::new(b.finalize().unwrap());
    let mut control = Control::new();
    control.wind = Vec3::new(1.0, 0.0, 0.5);
    for c in [0, n - 1] {
        control.pin(model.bodies()[id.0].grid_index(0, c).unwrap());
    }
    // The largest residual strain of any frame (m/m), or the frame that blew up.
    let worst = |solve: GpuSolve| -> Result<f32, usize> {
        let xpbd = XpbdSettings { substeps: 10, iterations: 8, air_damping: 0.05, ..settings() };
        let mut gpu = GpuXpbdSolver::new(ctx.clone(), model.clone(), gpu_settings(xpbd, solve)).unwrap();
        let mut r = ConstraintResiduals::default();
        let mut worst = 0.0f32;
        for frame in 1..=75usize {
            gpu.step(&control, 1.0 / 60.0).map_err(|_| frame)?;
            assert!(gpu.constraint_residuals(&mut r));
            worst = r.strain.iter().copied().filter(|s| s.is_finite()).fold(worst, f32::max);
        }
        Ok(worst)
    };
    let cheb = worst(GpuSolve::jacobi());
    let gs = worst(GpuSolve::GaussSeidel).expect("Gauss–Seidel holds the cloth");
    eprintln!("worst residual strain: Chebyshev Jacobi {cheb:?}, Gauss–Seidel {gs}");
    let cheb = cheb.unwrap_or_else(|frame| panic!("Chebyshev Jacobi blew up in frame {frame}"));
    assert!(cheb < 0.02 && cheb < gs, "Chebyshev Jacobi {cheb} against Gauss–Seidel {gs}");
}

/// The Jacobi solve keeps the start direction of a pair (whose impulses act along the line
/// through the particles' start positions, the levers of the substep's angular momentum) while
/// it turns by under 3° in a substep, so resolved rotation keeps its angular momentum, as under
/// Gauss–Seidel. A free 16² sheet of 0.5 m (K = 5000 N/m, no gravity, air or pins) spun in its
/// plane at 10 rad/s (0.5° a substep), stretched by 1 % so that its constraints pull: after
/// 1 s at 20 substeps × 8 iterations, Gauss–Seidel and the Jacobi solve, plain and with
/// Chebyshev, keep its angular momentum within 10⁻⁴. (Taking every pair along its direction
/// now braked it by 7.7 %; turns within the blend, 3–10° a substep, lose some.)
#[test]
fn the_jacobi_solve_keeps_a_spinning_sheets_angular_momentum() {
    let ctx = gpu_or_skip!();
    let n = 16;
    let mut b = ModelBuilder::new();
    b.set_gravity(Vec3::ZERO).unwrap();
    let mut g = ClothGrid::new("sheet", n, n, 0.5 / (n - 1) as f32);
    g.material = ClothMaterial {
        stretch_stiffness: 5000.0,
        compression_stiffness: 5000.0,
        damping: 0.0,
        ..ClothMaterial::default()
    };
    b.add_cloth_grid(&g).unwrap();
    let model = Arc::new(b.finalize().unwrap());
    let masses: Vec<f32> = model.particle_inv_mass().iter().map(|w| 1.0 / w).collect();
    let centre = model.particle_position().iter().fold(Vec3::ZERO, |a, x| a + *x) / model.particle_count() as f32;
    let spin = Vec3::new(0.0, 10.0, 0.0);
    let mut start = State::from_model(&model);
    for (x, v) in start.particle_position.iter_mut().zip(start.particle_velocity.iter_mut()) {
        *x = centre + (*x - centre) * 1.01;
        *v = spin.cross(*x - centre);
    }
    let momentum = |st: &State| -> f64 {
        let c =
            st.particle_position.iter().zip(&masses).fold(glam::DVec3::ZERO, |a, (x, m)| a + x.as_dvec3() * *m as f64)
                / masses.iter().map(|&m| m as f64).sum::<f64>();
        st.particle_position
            .iter()
            .zip(&st.particle_velocity)
            .zip(&masses)
            .map(|((x, v), m)| (x.as_dvec3() - c).cross(v.as_dvec3()).y * *m as f64)
            .sum()
    };
    let l0 = momentum(&start);
    let drift = |solve: GpuSolve| -> f64 {
        let xpbd = XpbdSettings { substeps: 20, iterations: 8, air_damping: 0.0, tethers: false, ..settings() };
        let mut gpu = GpuXpbdSolver::new(ctx.clone(), model.clone(), gpu_settings(xpbd, solve)).unwrap();
        gpu.write_state(&start).unwrap();
        for _ in 0..60 {
            gpu.step(&Control::new(), 1.0 / 60.0).unwrap();
        }
        momentum(&state_of(&mut gpu)) / l0 - 1.0
    };
    let (gs, plain, cheb) =
        (drift(GpuSolve::GaussSeidel), drift(GpuSolve::plain_jacobi(OMEGA)), drift(GpuSolve::jacobi()));
    eprintln!("angular momentum after 1 s: Gauss–Seidel {gs:+.2e}, plain Jacobi {plain:+.2e}, Chebyshev {cheb:+.2e}");
    assert!(gs.abs() < 1e-4, "Gauss–Seidel {gs}");
    assert!(plain.abs() < 1e-4 && cheb.abs() < 1e-4, "plain Jacobi {plain}, Chebyshev {cheb}");
}

/// The relaxation must be in (0, 2] and the spectral radius in [0, 1); anything else (including
/// NaN and ∞) is refused with an error that names it.
#[test]
fn jacobi_relaxation_is_validated() {
    let ctx = gpu_or_skip!();
    let (model, _) = contact_free_scene();
    for bad in [0.0, -0.5, 2.001, f32::NAN, f32::INFINITY] {
        let s = gpu_settings(settings(), GpuSolve::plain_jacobi(bad));
        match GpuXpbdSolver::new(ctx.clone(), model.clone(), s) {
            Err(hooke_gpu::GpuError::Solver(SolverError::InvalidSettings { setting, message })) => {
                assert_eq!(setting, "relaxation");
                assert!(message.contains("(0, 2]"), "{message}");
            }
            Err(e) => panic!("ω = {bad}: unexpected error {e}"),
            Ok(_) => panic!("ω = {bad} was accepted"),
        }
    }
    for good in [2.0, 1.0, 1e-3] {
        let s = gpu_settings(settings(), GpuSolve::plain_jacobi(good));
        let gpu = GpuXpbdSolver::new(ctx.clone(), model.clone(), s).unwrap();
        assert_eq!(gpu.info().name, "xpbd-jacobi-gpu");
    }
    // The Chebyshev spectral radius must be in [0, 1).
    for bad in [-0.1, 1.0, 1.5, f32::NAN] {
        let s = gpu_settings(settings(), GpuSolve::Jacobi { relaxation: None, spectral_radius: Some(bad) });
        match GpuXpbdSolver::new(ctx.clone(), model.clone(), s) {
            Err(hooke_gpu::GpuError::Solver(SolverError::InvalidSettings { setting, message })) => {
                assert_eq!(setting, "spectral_radius");
                assert!(message.contains("[0, 1)"), "{message}");
            }
            Err(e) => panic!("ρ = {bad}: unexpected error {e}"),
            Ok(_) => panic!("ρ = {bad} was accepted"),
        }
    }
}
