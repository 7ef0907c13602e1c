//! The limited aerodynamic step on the GPU (issue #9 item 9): light cloth in a strong wind at
//! one substep is never carried past the wind, frame by frame the CPU's trajectory.

use crate::*;

/// Issue #9's input D: a 2×2-particle square of 0.03 kg/m² silk, 0.1 m apart, in the x–z plane,
/// no gravity, in air of C_d = 1 and the given C_l.
fn input_d(lift_coefficient: f32) -> Arc<Model> {
    let mut b = ModelBuilder::new();
    b.set_gravity(Vec3::ZERO).unwrap();
    b.set_air(Air { density: 1.225, drag_coefficient: 1.0, lift_coefficient }).unwrap();
    let mut g = ClothGrid::new("cloth0", 2, 2, 0.1);
    g.material = ClothMaterial { areal_density: 0.03, ..ClothMaterial::default() };
    b.add_cloth_grid(&g).unwrap();
    Arc::new(b.finalize().unwrap())
}

/// Input D on the GPU at one substep per 60 Hz frame, wind 10, 30 and 100 m/s face-on: no
/// particle faster than the wind in any of 30 frames, no blow-up, and every frame bit for bit
/// the CPU's where the device rounds like the CPU (lavapipe). The same with lift (C_l = 0.5)
/// in an oblique 30 m/s wind, where only parity and finiteness are asserted.
#[test]
fn input_d_never_outruns_the_wind_and_matches_the_cpu() {
    let ctx = gpu_or_skip!();
    let exact = rounding(&ctx).exact();
    let s = XpbdSettings { substeps: 1, ..settings() };
    let cases =
        [(0.0f32, Vec3::new(0.0, 10.0, 0.0)), (0.0, Vec3::new(0.0, 30.0, 0.0)), (0.0, Vec3::new(0.0, 100.0, 0.0))];
    let lift = (0.5f32, Vec3::new(20.0, 20.0, 5.0));
    for (lift_coefficient, wind) in cases.into_iter().chain([lift]) {
        let model = input_d(lift_coefficient);
        let mut control = Control::new();
        control.wind = wind;
        let mut cpu = XpbdSolver::new(model.clone(), s).unwrap();
        let mut gpu = GpuXpbdSolver::new(ctx.clone(), model.clone(), s).unwrap();
        let mut fastest = 0.0f32;
        for frame in 0..30 {
            cpu.step(&control, 1.0 / 60.0).unwrap();
            gpu.step(&control, 1.0 / 60.0).unwrap_or_else(|e| panic!("{wind} m/s, frame {frame}: {e}"));
            let (c, g) = (state_of(&mut cpu), state_of(&mut gpu));
            assert!(g.particle_position.iter().chain(&g.particle_velocity).all(|x| x.is_finite()));
            if exact {
                assert_eq!(c, g, "lavapipe rounds like the CPU: frame {frame} in a {wind} m/s wind must be identical");
            }
            let speed = g.particle_velocity.iter().map(|v| v.length()).fold(0.0, f32::max);
            if lift_coefficient == 0.0 {
                assert!(speed <= wind.length() * (1.0 + 1e-5), "{speed} m/s in a {wind} m/s wind at frame {frame}");
            }
            fastest = fastest.max(speed);
        }
        eprintln!(
            "C_l = {lift_coefficient}, wind {wind} m/s ({:.1} m/s): fastest particle on the GPU {fastest:.4} m/s{}",
            wind.length(),
            if exact { ", every frame identical to the CPU" } else { "" }
        );
    }
}
