//! Tile-local Gauss–Seidel (issue #13, item 2): each body's constraints swept by a workgroup of
//! its own, every colour in one dispatch, give the colour-by-colour sweep's positions bit for
//! bit — distance constraints, cloth hinges and rope joints, XPBD and PBD, one world or many.

use crate::*;

/// Three cloths of different sizes (dihedral bending), a rope (with its joints under
/// `rope_bending`, swept by Gauss–Seidel), pins (so tethers, where on), a sphere; optionally in
/// two worlds. Shared with `local_sweep.rs`.
pub(crate) fn scene(worlds: bool, rope_bending: hooke::Bending) -> (Arc<Model>, Control) {
    let mut b = ModelBuilder::new();
    let mut pins = Vec::new();
    for (k, n) in [7usize, 12, 5].into_iter().enumerate() {
        if worlds && k == 2 {
            b.add_world(Vec3::new(0.5, -9.81, 0.0)).unwrap();
        }
        let mut g = ClothGrid::new(format!("cloth{k}"), n, n, 0.05);
        g.center = Vec3::new(0.4 * k as f32, 1.0, 0.0);
        g.material.stretch_stiffness = 2000.0;
        g.bending = hooke::Bending::Angle;
        b.add_cloth_grid(&g).unwrap();
        let first = b.particle_count() as u32 - (n * n) as u32;
        pins.extend([first, first + n as u32 - 1]);
    }
    let mut rope = Rope::straight("rope", Vec3::new(-0.5, 1.2, 0.0), Vec3::new(0.5, 1.2, 0.0), 14);
    rope.bending = rope_bending;
    b.add_rope(&rope).unwrap();
    pins.push(b.particle_count() as u32 - 14);
    b.add_collider(Collider::new("ball", Shape::Sphere { center: Vec3::new(0.4, 0.5, 0.0), radius: 0.2 })).unwrap();
    let model = Arc::new(b.finalize().unwrap());
    assert!(!model.dihedral().is_empty(), "the cloths have hinges");
    let mut control = Control::new();
    for p in pins {
        control.pin(p);
    }
    if worlds {
        control.world_wind.push((Vec3::new(1.0, 0.0, 0.0), None));
    }
    (model, control)
}

/// Positions after 40 frames of `scene` under `settings`, and the solver itself (to ask it how
/// it swept).
pub(crate) fn run_scene(
    ctx: &Arc<GpuContext>,
    model: &Arc<Model>,
    control: &Control,
    settings: GpuSettings,
) -> (Vec<Vec3>, GpuXpbdSolver) {
    let mut solver = GpuXpbdSolver::new(ctx.clone(), model.clone(), settings).unwrap();
    for _ in 0..40 {
        solver.step(control, 1.0 / 60.0).unwrap();
    }
    let mut x = Vec::new();
    solver.read_positions(&mut x);
    (x, solver)
}

fn positions(ctx: &Arc<GpuContext>, model: &Arc<Model>, control: &Control, settings: GpuSettings) -> (Vec<Vec3>, bool) {
    let (x, solver) = run_scene(ctx, model, control, settings);
    (x, solver.uses_tiles())
}

#[test]
fn tile_sweeps_give_the_colour_sweeps_bit_for_bit() {
    let ctx = gpu_or_skip!();
    for (worlds, method) in [(false, Method::Xpbd), (true, Method::Xpbd), (false, Method::Pbd { stiffness: 0.8 })] {
        let (model, control) = scene(worlds, hooke::Bending::Angle);
        let xpbd = XpbdSettings {
            substeps: 8,
            iterations: 3,
            method,
            rope_solver: hooke::RopeSolver::GaussSeidel,
            ..XpbdSettings::default()
        };
        let colours = GpuSettings { xpbd, ..GpuSettings::default() };
        let (reference, used) = positions(&ctx, &model, &control, colours);
        assert!(!used);
        let (tiled, used) = positions(&ctx, &model, &control, GpuSettings { tiles: true, ..colours });
        assert!(used, "no constraint set was swept by tiles");
        let differ = reference
            .iter()
            .zip(&tiled)
            .filter(|(a, b)| a.to_array().map(f32::to_bits) != b.to_array().map(f32::to_bits))
            .count();
        assert_eq!(differ, 0, "worlds {worlds}, {method:?}: {differ} particles differ");
        // The scene moved: the free rope end swung down.
        assert!(tiled.last().unwrap().y < 1.0, "{}", tiled.last().unwrap());
    }
}
