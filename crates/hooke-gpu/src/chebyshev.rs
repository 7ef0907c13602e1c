//! Chebyshev semi-iterative acceleration of the Jacobi solve, and the automatic choice of its
//! two parameters — the Jacobi relaxation ω and the spectral radius ρ — from the model.
//!
//! ## The linear picture
//!
//! Linearised about an iterate, one relaxed Jacobi iteration of `jacobi.wgsl` is the
//! iteration λ ← λ + ω D⁻¹(b − Aλ) for the XPBD system A λ = b with
//! A = (1+γ) J W Jᵀ + α̃ (J the constraint gradients, W the inverse masses, α̃ = α/h² the
//! compliances, γ = τ/h the damping; see the `jacobi` module of the source) and D its diagonal; the
//! displacements follow λ (d = W Jᵀ λ). Its error is multiplied by G = I − ω D⁻¹A each
//! iteration. D⁻¹A is similar to the symmetric positive definite D^{−½} A D^{−½}, so its
//! eigenvalues μ are real, in [μ_lo, μ_hi] with μ_lo > 0, and those of G are 1 − ωμ.
//!
//! **Relaxation.** G's eigenvalues lie in (−1, 1) — the iteration converges — if and only if
//! ω < 2/μ_hi, and they are spread evenly about 0, in [−ρ, ρ] with the smallest
//! ρ = (μ_hi − μ_lo)/(μ_hi + μ_lo), for ω = 2/(μ_hi + μ_lo). On a stiff cloth grid with
//! structural and shear constraints μ_hi ≈ 4 (≈ 5 with distance bend springs), so ω < 0.5;
//! on a large grid μ_lo is tiny and
//! ρ → 1: plain Jacobi then needs O(n²) iterations for the smooth modes, which is why it looks
//! soft.
//!
//! **Chebyshev (Wang 2015, "A Chebyshev semi-iterative approach for accelerating projective
//! and position-based dynamics", after Golub & Varga 1961).** Each iterate is replaced by a
//! blend of the new Jacobi iterate ŷᵏ⁺¹ and the one before the previous,
//!
//! yᵏ⁺¹ = yᵏ⁻¹ + ω_{k+1} (ŷᵏ⁺¹ − yᵏ⁻¹),   ω₁ = 1, ω₂ = 2/(2 − ρ²), ω_{k+1} = 4/(4 − ρ²ω_k),
//!
//! applied to the displacements and λ alike (y = (d, λ)), so that M Δx = ∇Cᵀλ still holds for
//! the distance constraints (for the other sets, see "What is extrapolated" below). In
//! the linear picture the error after k iterations is T_k(G/ρ)/T_k(1/ρ) e⁰ (T_k the Chebyshev
//! polynomial): the smallest possible over [−ρ, ρ] for any polynomial of degree k, and falling
//! like (1 − √(2(1−ρ)))ᵏ instead of ρᵏ. An eigenvalue x of G beyond ρ but inside (−1, 1) still
//! decays, since |T_k(x/ρ)| < T_k(1/ρ): an underestimated ρ costs speed. An overestimated ρ
//! (closer to 1 than the spectrum reaches) is, in the linear picture, still convergent, but
//! the truncated polynomial over-corrects every mode by up to 1/T_k(1/ρ), and measured on a
//! soft cloth it is far worse than plain Jacobi (see "The automatic choice").
//!
//! **What is extrapolated.** The other constraint sets of an iteration (dihedral bending, rope
//! joints, tethers) are solved after the Jacobi dispatch, in place. Extrapolating the iterates
//! themselves, yᵏ⁺¹ = yᵏ⁻¹ + ω_k(ŷ − yᵏ⁻¹), would scale their corrections by ω_k too while
//! their own λ is not (with tethers the 256² sheet ended at 1.15 % strain against plain
//! Jacobi's 0.055 %). So the displacements are extrapolated in increments of the distance
//! solve's own steps, sᵏ = ω_k Δᵏ + (ω_k − 1)sᵏ⁻¹ — the same iterates when it is alone — and the
//! other sets' corrections are not extrapolated: with tethers the sheet now ends at 0.076 %,
//! still a little above plain Jacobi's 0.055 % (docs/BENCHMARKS.md).
//!
//! ## The automatic choice
//!
//! [`estimate`] computes μ_hi and μ_lo of D^{−½} A D^{−½} at the model's rest positions with
//! every particle free, by power iteration (for μ_lo on μ_hi·I − D^{−½} A D^{−½}), with each
//! constraint's smaller compliance and its damping at the substep the solver runs (the GPU
//! solver estimates at its first frame, and again when the substep or the materials change;
//! PBD, which ignores compliance, in the stiff limit α̃ = γ = 0). Compliance adds α̃ to A and D
//! and pulls every μ towards 1: a soft cloth (Newton's `cloth_hanging`, α̃ ≈ 18 (wᵢ + wⱼ))
//! has ρ ≈ 0.15, a stiff one (K = 1e4 N/m at 0.15 kg/m²) ρ → 1 like the stiff limit. The
//! estimate matters both ways: Chebyshev with ρ = 0.98 on that soft cloth, whose spectrum
//! ends near 0.6, left 52 % residual strain where ρ = 0.6 left 0.04 % and plain Jacobi 1 %.
//! Power iteration approaches μ_hi from below, and the cloth's geometry changes as it moves (a
//! fold makes neighbouring constraints more parallel, a pin sets w = 0 at a particle), so the
//! relaxation is chosen for μ_hi enlarged by a margin of [`MARGIN`]; μ_lo is approached from
//! above. The direct rope solver's constraints, and constraints between two immovable
//! particles, are left out, as in the Jacobi solve. The estimate costs 200 sweeps over the
//! constraints on the CPU, once per substep length and material change.

use hooke::{BodyKind, Model};

/// The factor by which the estimated μ_hi is enlarged before ω is chosen (see the module
/// documentation): room for the power iteration's shortfall, pins and deformed geometry.
pub const MARGIN: f64 = 1.1;

/// The most the solve may overshoot any mode, δ: the error polynomial of a substep's
/// iterations must stay ≥ −δ over the spectrum. Without damping, a solve that leaves
/// −P of a constraint's violation (P < 0: over-corrected) feeds it back through the velocity,
/// y ← P(2y − y_prev), which grows once P < −1/3 (roots of z² − 2Pz + P); δ = 1/4 keeps a
/// margin below that bound. Measured: an undamped 32² sheet of K = 1e4 N/m at one iteration
/// per substep holds 2.2 % strain with ω = 0.35 (P ≈ −0.38 at μ_hi) and 68 % with ω = 0.4
/// (P ≈ −0.58).
pub const OVERSHOOT: f64 = 0.25;

/// Power iterations for each end of the spectrum.
const POWER_ITERATIONS: usize = 100;

/// The extreme eigenvalues of D^{−½} A D^{−½} (dimensionless; see [`estimate`]), and the
/// Jacobi parameters chosen from them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spectrum {
    /// Largest eigenvalue μ_hi (≥ 1 when there is a constraint; 1 for constraints that share
    /// no particle), an estimate from below.
    pub mu_hi: f64,
    /// Smallest eigenvalue μ_lo (> 0), an estimate from above.
    pub mu_lo: f64,
}

impl Spectrum {
    /// The relaxation ω and spectral radius ρ for `iterations` per substep, each taken from
    /// the arguments when given. With μ_top = MARGIN·μ_hi:
    ///
    /// - ρ is at most ρ_k = 1/cosh(acosh(1/δ)/k), the largest ρ whose Chebyshev error
    ///   polynomial after k iterations, T_k(x/ρ)/T_k(1/ρ), stays above −δ ([`OVERSHOOT`]) on
    ///   [−ρ, ρ] (ρ_k = 0 for k = 1: there is no acceleration in one iteration), and at most
    ///   the spectral radius of the relaxed iteration itself;
    /// - ω maps μ_top to −ρ, the bottom of that interval: ω = (1 + ρ)/μ_top, which for
    ///   ρ = (μ_top − μ_lo)/(μ_top + μ_lo) is the optimum 2/(μ_top + μ_lo); for plain Jacobi
    ///   (ρ = 0) ω = (1 + δ^{1/k})/μ_top, so that (1 − ωμ)ᵏ ≥ −δ, capped at 2/(μ_top + μ_lo).
    pub fn parameters(&self, iterations: u32, relaxation: Option<f32>, spectral_radius: Option<f32>) -> (f32, f32) {
        let k = iterations.max(1) as f64;
        let top = MARGIN * self.mu_hi;
        let cap = if k < 2.0 { 0.0 } else { 1.0 / ((1.0 / OVERSHOOT).acosh() / k).cosh() };
        let rho = match (spectral_radius, relaxation) {
            (Some(rho), _) => rho as f64,
            (None, Some(w)) => {
                // The Chebyshev interval [−ρ, ρ] must cover G's spectrum [1 − ω·μ_top, …]
                // below, or the modes beyond −ρ are over-corrected without bound; where the
                // cap does not allow that, no acceleration.
                let w = w as f64;
                let rho = (1.0 - w * self.mu_lo).abs().max((1.0 - w * top).abs());
                if -(1.0 - w * top) > cap { 0.0 } else { cap.min(rho) }
            }
            (None, None) => cap.min((top - self.mu_lo) / (top + self.mu_lo)),
        }
        .clamp(0.0, 0.999);
        let w = match relaxation {
            Some(w) => w as f64,
            None if rho > 0.0 => (1.0 + rho) / top,
            None => ((1.0 + OVERSHOOT.powf(1.0 / k)) / top).min(2.0 / (top + self.mu_lo)),
        };
        (w as f32, rho as f32)
    }
}

/// The Chebyshev weights ω_k for iterations k = 0 … `iterations` − 1 of a substep with spectral
/// radius `rho` in [0, 1): 1 for the first iteration (there is no earlier iterate), then
/// 2/(2 − ρ²) and 4/(4 − ρ²ω). ρ = 0 gives all ones: plain Jacobi.
pub fn weights(rho: f32, iterations: u32) -> Vec<f32> {
    let r2 = rho as f64 * rho as f64;
    let mut w = Vec::with_capacity(iterations as usize);
    let mut omega = 1.0f64;
    for k in 0..iterations {
        omega = match k {
            0 => 1.0,
            1 => 2.0 / (2.0 - r2),
            _ => 4.0 / (4.0 - r2 * omega),
        };
        w.push(omega as f32);
    }
    w
}

/// Estimates the spectrum of the Jacobi iteration for the model's distance constraints at
/// substep `h` (s) — A = (1+γ) J W Jᵀ + α̃ with each constraint's smaller compliance
/// α̃ = α/h² and damping γ = τ/h — or in the stiff limit (α̃ = γ = 0) for `h = None` (see the
/// module documentation); without the ropes' constraints when `skip_ropes`. A model with no
/// constraint between movable particles gets μ_hi = μ_lo = 1.
pub fn estimate(model: &Model, skip_ropes: bool, h: Option<f32>) -> Spectrum {
    let set = model.distance();
    let x = model.particle_position();
    let w = model.particle_inv_mass();
    // The constraints that take part: (i, j, unit direction, 1 + γ, α̃, 1/√D).
    struct Row {
        i: usize,
        j: usize,
        e: glam::DVec3,
        damped: f64,
        compliance: f64,
        inv_sqrt_d: f64,
    }
    let rows: Vec<Row> = set
        .constraints()
        .iter()
        .enumerate()
        .filter(|&(k, _)| !skip_ropes || set.body_of(k).is_none_or(|b| model.bodies()[b].kind != BodyKind::Rope))
        .filter_map(|(_, c)| {
            let (i, j) = (c.i as usize, c.j as usize);
            let (damped, compliance) = match h {
                Some(h) if h > 0.0 => {
                    let h = h as f64;
                    // The smaller compliance (the wider spectrum), damping only where compliant,
                    // as in the kernel.
                    let alpha = c.compliance_stretch.min(c.compliance_compression) as f64;
                    let gamma = if alpha > 0.0 { c.damping as f64 / h } else { 0.0 };
                    (1.0 + gamma, alpha / (h * h))
                }
                _ => (1.0, 0.0),
            };
            let d = damped * (w[i] as f64 + w[j] as f64) + compliance;
            let e = (x[i] - x[j]).as_dvec3();
            let len = e.length();
            (w[i] + w[j] > 0.0 && len > 1e-12 && d.is_finite()).then(|| Row {
                i,
                j,
                e: e / len,
                damped,
                compliance,
                inv_sqrt_d: 1.0 / d.sqrt(),
            })
        })
        .collect();
    if rows.is_empty() {
        return Spectrum { mu_hi: 1.0, mu_lo: 1.0 };
    }
    let n = x.len();
    let mut scratch = vec![glam::DVec3::ZERO; n];
    // y = S v with S = D^{−½} A D^{−½}.
    let mut apply = |v: &[f64], y: &mut [f64]| {
        scratch.iter_mut().for_each(|r| *r = glam::DVec3::ZERO);
        for (r, &vk) in rows.iter().zip(v) {
            let u = r.e * (vk * r.inv_sqrt_d);
            scratch[r.i] += u;
            scratch[r.j] -= u;
        }
        for ((yk, r), &vk) in y.iter_mut().zip(&rows).zip(v) {
            let dot = r.e.dot(w[r.i] as f64 * scratch[r.i] - w[r.j] as f64 * scratch[r.j]);
            *yk = (r.damped * dot + r.compliance * vk * r.inv_sqrt_d) * r.inv_sqrt_d;
        }
    };
    let m = rows.len();
    // A deterministic start with every mode present.
    let start: Vec<f64> = (0..m).map(|k| 1.0 + 0.5 * ((k as f64 * 0.618_033_988_749_894_9).fract() - 0.5)).collect();
    let mut power = |shift: f64| -> f64 {
        let mut v = start.clone();
        let mut y = vec![0.0; m];
        let mut rayleigh = 0.0;
        for _ in 0..POWER_ITERATIONS {
            let norm = v.iter().map(|a| a * a).sum::<f64>().sqrt();
            v.iter_mut().for_each(|a| *a /= norm);
            apply(&v, &mut y);
            // (shift·I − S) v when shifting.
            if shift != 0.0 {
                y.iter_mut().zip(&v).for_each(|(yk, vk)| *yk = shift * vk - *yk);
            }
            rayleigh = y.iter().zip(&v).map(|(a, b)| a * b).sum::<f64>();
            std::mem::swap(&mut v, &mut y);
        }
        rayleigh
    };
    let mu_hi = power(0.0).max(1e-12);
    let mu_lo = (mu_hi - power(mu_hi)).clamp(1e-6 * mu_hi, mu_hi);
    Spectrum { mu_hi, mu_lo }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hooke::{ClothGrid, ModelBuilder, Rope};

    /// A rope of equal masses and equal segments: J W Jᵀ/D is the tridiagonal matrix with 1
    /// on the diagonal and −½ beside it (collinear segments share a particle), whose
    /// eigenvalues are 1 − cos(kπ/(m+1)), k = 1 … m.
    #[test]
    fn a_rope_has_the_spectrum_of_the_path_laplacian() {
        let particles = 21;
        let mut b = ModelBuilder::new();
        b.add_rope(&Rope::straight("r", glam::Vec3::ZERO, glam::Vec3::new(2.0, 0.0, 0.0), particles)).unwrap();
        let model = b.finalize().unwrap();
        assert_eq!(model.distance().len(), particles - 1, "the rope's distance set is its segments");
        let s = estimate(&model, false, None);
        let m = particles - 1;
        let angle = std::f64::consts::PI / (m as f64 + 1.0);
        let (hi, lo) = (1.0 + angle.cos(), 1.0 - angle.cos());
        eprintln!("rope: μ_hi {:.5} (exact {hi:.5}), μ_lo {:.5} (exact {lo:.5})", s.mu_hi, s.mu_lo);
        // Power iteration approaches μ_hi from below and μ_lo from above.
        assert!(s.mu_hi <= hi + 1e-9 && s.mu_hi > hi * 0.995, "μ_hi {}", s.mu_hi);
        assert!(s.mu_lo >= lo - 1e-9 && s.mu_lo < lo * 1.5, "μ_lo {}", s.mu_lo);
        // Without the rope (the direct solver takes it) nothing is left.
        assert_eq!(estimate(&model, true, None), Spectrum { mu_hi: 1.0, mu_lo: 1.0 });
    }

    /// The error polynomial of `weights` after k iterations at an eigenvalue x of the relaxed
    /// iteration G: e₀ = 1, ê = x e_k, e_{k+1} = e_{k−1} + ω_k (ê − e_{k−1}).
    fn error_after(weights: &[f32], x: f64) -> f64 {
        let (mut prev, mut e) = (1.0f64, 1.0f64);
        for &w in weights {
            let next = prev + w as f64 * (x * e - prev);
            (prev, e) = (e, next);
        }
        e
    }

    /// On a cloth grid (structural + shear; μ_hi ≈ 4) the chosen parameters never let a mode
    /// overshoot by more than δ after the substep's iterations — over the whole estimated
    /// spectrum, enlarged by the margin — and at 10 iterations Chebyshev leaves less of the
    /// a slow mode than plain Jacobi at its own ω.
    #[test]
    fn the_chosen_parameters_never_overshoot_and_chebyshev_wins() {
        let mut b = ModelBuilder::new();
        b.add_cloth_grid(&ClothGrid::new("c", 16, 16, 0.05)).unwrap();
        let model = b.finalize().unwrap();
        let s = estimate(&model, false, None);
        eprintln!("16² grid: μ_hi {:.3}, μ_lo {:.2e}", s.mu_hi, s.mu_lo);
        assert!((3.5..4.5).contains(&s.mu_hi), "μ_hi {}", s.mu_hi);
        for k in [1u32, 2, 3, 5, 10, 20, 50] {
            let (w, rho) = s.parameters(k, None, None);
            let weights = weights(rho, k);
            let (x_lo, x_hi) = (1.0 - w as f64 * MARGIN * s.mu_hi, 1.0 - w as f64 * s.mu_lo);
            let worst = (0..=2000)
                .map(|t| error_after(&weights, x_lo + (x_hi - x_lo) * t as f64 / 2000.0))
                .fold(f64::INFINITY, f64::min);
            eprintln!("  k = {k:>2}: ω {w:.3}, ρ {rho:.4}, most negative error {worst:.3}");
            assert!(worst >= -OVERSHOOT - 1e-4, "k = {k}: overshoot {worst}");
            assert!(x_hi < 1.0 && x_lo > -1.0);
        }
        // A given ω that puts G's spectrum below −ρ₅ gets no acceleration (ρ = 0) rather than
        // a Chebyshev interval that leaves its bottom modes over-corrected.
        let top = MARGIN * s.mu_hi;
        let w_given = (1.0 + 0.95) / top;
        assert_eq!(s.parameters(5, Some(w_given as f32), None).1, 0.0);
        let w_ok = (1.0 + 0.8) / top;
        assert!(s.parameters(5, Some(w_ok as f32), None).1 > 0.8);
        let (w, rho) = s.parameters(10, None, None);
        let (w0, _) = s.parameters(10, None, Some(0.0));
        let slow = 4.0 * s.mu_lo;
        let cheb = error_after(&weights(rho, 10), 1.0 - w as f64 * slow);
        let plain = error_after(&weights(0.0, 10), 1.0 - w0 as f64 * slow);
        eprintln!("  a slow mode (μ = 4 μ_lo) after 10 iterations: Chebyshev {cheb:.3}, plain {plain:.3}");
        assert!(cheb.abs() < 0.5 * plain.abs(), "Chebyshev {cheb} against plain {plain}");
    }

    /// Compliance pulls the spectrum towards 1: Newton's `cloth_hanging` material (k = 1000
    /// N/m springs, 0.1 kg particles, h = 1/600 s: α̃ = 360 against wᵢ + wⱼ = 20) has a
    /// narrow spectrum and gets a small ρ and ω near 1, while the stiff limit of the same grid
    /// is wide (ρ at the cap). A ρ near 1 on the soft cloth was measured to leave 52 %
    /// residual strain (module documentation), so the difference matters.
    #[test]
    fn compliance_narrows_the_spectrum() {
        let mut b = ModelBuilder::new();
        let mut g = ClothGrid::new("c", 12, 12, 0.1);
        g.particle_mass = Some(0.1);
        g.spring_stiffness = Some(1000.0);
        b.add_cloth_grid(&g).unwrap();
        let model = b.finalize().unwrap();
        let h = 1.0 / 600.0;
        let soft = estimate(&model, false, Some(h));
        let stiff = estimate(&model, false, None);
        let (w, rho) = soft.parameters(10, None, None);
        let (w0, rho0) = stiff.parameters(10, None, None);
        eprintln!(
            "soft: μ {:.3}…{:.3}, ω {w:.3}, ρ {rho:.3}; stiff limit: μ {:.3}…{:.3}, ω {w0:.3}, ρ {rho0:.3}",
            soft.mu_lo, soft.mu_hi, stiff.mu_lo, stiff.mu_hi
        );
        // μ = 1 + (1+γ)·(off-diagonal part)/(…+α̃): within 1 ± 4·20/380.
        assert!(soft.mu_lo > 0.75 && soft.mu_hi < 1.25, "{soft:?}");
        assert!(rho < 0.3 && w > 0.7, "ω {w}, ρ {rho}");
        assert!(rho0 > 0.95 && w0 < 0.5, "ω {w0}, ρ {rho0}");
    }

    #[test]
    fn weights_follow_the_chebyshev_recurrence() {
        assert_eq!(weights(0.0, 4), vec![1.0; 4]);
        let w = weights(0.9, 40);
        assert_eq!(w[0], 1.0);
        assert!((w[1] as f64 - 2.0 / (2.0 - 0.81)).abs() < 1e-6);
        // They fall monotonically to the fixed point ω* = 2/(1 + √(1 − ρ²)).
        let limit = 2.0 / (1.0 + (1.0f64 - 0.81).sqrt());
        assert!(w[2..].windows(2).all(|p| p[1] <= p[0]));
        assert!((w[39] as f64 - limit).abs() < 1e-4, "{} vs {limit}", w[39]);
        // The error polynomial is T_k(x/ρ)/T_k(1/ρ): at x = ρ it is 1/T_k(1/ρ).
        let t = |k: f64, y: f64| (k * y.acosh()).cosh();
        for k in [2usize, 5, 9] {
            let e = error_after(&w[..k], 0.9);
            assert!((e - 1.0 / t(k as f64, 1.0 / 0.9)).abs() < 1e-5, "k = {k}: {e}");
        }
    }
}
