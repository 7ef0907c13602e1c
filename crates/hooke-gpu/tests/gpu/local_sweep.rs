//! Tile-local Gauss–Seidel in workgroup memory (issue #13, item 2; `local_sweep.wgsl`): every
//! iteration of a substep — distance colours, hinge colours, tethers — in one dispatch, one
//! workgroup per body, gives the colour-by-colour sweep's positions bit for bit; and the solver
//! falls back to that sweep where the local one does not apply.

use crate::*;

/// The tile tests' scene (`tiles::scene`) with a rope without joints: every body can be swept
/// locally.
fn scene(worlds: bool) -> (Arc<Model>, Control) {
    crate::tiles::scene(worlds, hooke::Bending::None)
}

fn positions(ctx: &Arc<GpuContext>, model: &Arc<Model>, control: &Control, settings: GpuSettings) -> (Vec<Vec3>, bool) {
    let (x, solver) = crate::tiles::run_scene(ctx, model, control, settings);
    (x, solver.uses_local_sweep())
}

/// How many particles of `a` and `b` differ in any bit.
fn differing(a: &[Vec3], b: &[Vec3]) -> usize {
    a.iter().zip(b).filter(|(a, b)| a.to_array().map(f32::to_bits) != b.to_array().map(f32::to_bits)).count()
}

#[test]
fn local_sweeps_give_the_colour_sweeps_bit_for_bit() {
    let ctx = gpu_or_skip!();
    let cases = [
        (false, Method::Xpbd, true),
        (true, Method::Xpbd, true),
        (false, Method::Pbd { stiffness: 0.8 }, true),
        (false, Method::Xpbd, false),
    ];
    for (worlds, method, tethers) in cases {
        let (model, control) = scene(worlds);
        let xpbd = XpbdSettings {
            substeps: 8,
            iterations: 3,
            method,
            tethers,
            rope_solver: hooke::RopeSolver::GaussSeidel,
            ..XpbdSettings::default()
        };
        let colours = GpuSettings { xpbd, local: LocalSweepMode::Never, ..GpuSettings::default() };
        let (reference, used) = positions(&ctx, &model, &control, colours);
        assert!(!used);
        let (local, used) = positions(&ctx, &model, &control, GpuSettings { local: LocalSweepMode::Always, ..colours });
        assert!(used, "the local sweep did not apply");
        let differ = differing(&reference, &local);
        let case = format!("worlds {worlds}, {method:?}, tethers {tethers}");
        assert_eq!(differ, 0, "{case}: {differ} of {} particles differ", local.len());
        // The scene moved: the free rope end swung down, the cloths sagged.
        assert!(local.last().unwrap().y < 1.0, "{case}: {}", local.last().unwrap());
    }
}

/// A body whose colours hold more constraints than a workgroup has threads (a 48² cloth:
/// 1 128 horizontal structural constraints a colour, at most 1 024 threads) and more tethers
/// than twice that: a thread reads its first two constraints of a colour, and its first two
/// tethers, before it projects either, and loops over the rest of its tethers (a colour past
/// twice the threads does not fit a workgroup's memory at 1 024 threads, so the distance
/// colours' own loop runs only on devices of fewer threads). The colour sweep's positions bit
/// for bit all the same.
#[test]
fn local_sweeps_with_several_constraints_per_thread_give_the_colour_sweeps_bit_for_bit() {
    let ctx = gpu_or_skip!();
    let n = 48;
    let mut b = ModelBuilder::new();
    let mut g = ClothGrid::new("cloth", n, n, 0.02);
    g.material.stretch_stiffness = 2000.0;
    b.add_cloth_grid(&g).unwrap();
    b.add_collider(Collider::new("ball", Shape::Sphere { center: Vec3::new(0.0, -0.5, 0.0), radius: 0.2 })).unwrap();
    let model = Arc::new(b.finalize().unwrap());
    let largest = model.distance().colour_ranges().iter().map(|r| r.len()).max().unwrap();
    assert!(largest > 1024, "the largest colour holds {largest} constraints");
    let mut control = Control::new();
    // The corners of the last row: the tethers of the particles near them, the last of the
    // tether records, pull.
    control.pin((n * (n - 1)) as u32);
    control.pin((n * n) as u32 - 1);
    let xpbd = XpbdSettings { substeps: 8, iterations: 2, ..XpbdSettings::default() };
    let run = |local: LocalSweepMode| {
        let mut s =
            GpuXpbdSolver::new(ctx.clone(), model.clone(), GpuSettings { xpbd, local, ..Default::default() }).unwrap();
        for _ in 0..20 {
            s.step(&control, 1.0 / 60.0).unwrap();
        }
        assert_eq!(s.uses_local_sweep(), local == LocalSweepMode::Always);
        state_of(&mut s).particle_position
    };
    let (colours, local) = (run(LocalSweepMode::Never), run(LocalSweepMode::Always));
    let differ = differing(&colours, &local);
    assert_eq!(differ, 0, "{differ} of {} particles differ", local.len());
    // The cloth fell: its middle is below where it started.
    assert!(local[n * n / 2 + n / 2].y < model.particle_position()[n * n / 2 + n / 2].y - 1e-3);
}

/// A material change (`notify_model_changed`) and a rebuild on a torn model (`rebuild`: one
/// constraint broken by `hooke::tearing::tear`) keep the local sweep, and its positions stay
/// the colour sweep's bit for bit through both (the default leaves it out on lavapipe, so
/// this is where its parameter upload and rebuilt table are checked there).
#[test]
fn local_sweeps_survive_a_material_change_and_a_rebuild() {
    let ctx = gpu_or_skip!();
    let (model, control) = scene(false);
    let xpbd = XpbdSettings {
        substeps: 8,
        iterations: 3,
        rope_solver: hooke::RopeSolver::GaussSeidel,
        ..XpbdSettings::default()
    };
    let hooke::BodyMaterial::Cloth(m) = model.bodies()[1].material else { unreachable!("body 1 is a cloth") };
    let stiffer = Arc::new(
        model.with_cloth_material(1, ClothMaterial { stretch_stiffness: 4.0 * m.stretch_stiffness, ..m }).unwrap(),
    );
    let run = |local: LocalSweepMode| {
        let mut s =
            GpuXpbdSolver::new(ctx.clone(), model.clone(), GpuSettings { xpbd, local, ..Default::default() }).unwrap();
        let frames = |s: &mut GpuXpbdSolver| {
            for _ in 0..10 {
                s.step(&control, 1.0 / 60.0).unwrap();
            }
        };
        frames(&mut s);
        s.notify_model_changed(stiffer.clone()).unwrap();
        frames(&mut s);
        let mut state = State::from_model(&model);
        s.read_state(&mut state);
        // A structural constraint inside the 12² cloth (body 1), away from its edges.
        let set = stiffer.distance();
        let inner = |p: u32| {
            let k = p - stiffer.bodies()[1].particles.start;
            (3..9).contains(&(k / 12)) && (3..9).contains(&(k % 12))
        };
        let k = (0..set.len())
            .find(|&k| {
                let c = set.constraints()[k];
                set.body_of(k) == Some(1)
                    && set.families()[k] == ConstraintFamily::Structural
                    && inner(c.i)
                    && inner(c.j)
            })
            .unwrap() as u32;
        let torn = hooke::tearing::tear(&stiffer, &state.particle_position, &[k]).unwrap().expect("a constraint broke");
        assert!(torn.broken >= 1);
        s.rebuild(Arc::new(torn.model.clone()), &torn.state(&state)).unwrap();
        frames(&mut s);
        assert_eq!(s.uses_local_sweep(), local == LocalSweepMode::Always);
        state_of(&mut s).particle_position
    };
    let (colours, local) = (run(LocalSweepMode::Never), run(LocalSweepMode::Always));
    let differ = differing(&colours, &local);
    assert_eq!(differ, 0, "{differ} of {} particles differ after the change and the rebuild", local.len());
}

#[test]
fn the_solver_sweeps_colour_by_colour_where_the_local_sweep_does_not_apply_or_pay() {
    let ctx = gpu_or_skip!();
    let applies = |model: &Arc<Model>, settings: GpuSettings| {
        GpuXpbdSolver::new(ctx.clone(), model.clone(), settings).unwrap().uses_local_sweep()
    };
    let gs = XpbdSettings { rope_solver: hooke::RopeSolver::GaussSeidel, ..XpbdSettings::default() };
    let always = GpuSettings { xpbd: gs, local: LocalSweepMode::Always, ..GpuSettings::default() };
    let (small, _) = scene(false);
    // The default applies it on a GPU, not on a software adapter (lavapipe), where it does
    // not pay (`local_sweep::pays`, unit-tested for both).
    let gpu = !ctx.is_cpu();
    assert_eq!(applies(&small, GpuSettings { xpbd: gs, ..GpuSettings::default() }), gpu, "the default");
    // The Jacobi solve, and ropes under the direct solver, have passes of their own.
    assert!(!applies(&small, GpuSettings { solve: GpuSolve::jacobi(), ..always }));
    assert!(!applies(&small, GpuSettings { xpbd: XpbdSettings::default(), ..always }), "the direct rope solver");
    // Rope joints are swept between the hinges and the tethers.
    let mut b = ModelBuilder::new();
    let mut rope = Rope::straight("rope", Vec3::ZERO, Vec3::X, 10);
    rope.bending = hooke::Bending::Angle;
    b.add_rope(&rope).unwrap();
    let joints = Arc::new(b.finalize().unwrap());
    assert!(!applies(&joints, always));
    // A body larger than devices' workgroup memory holds (100² particles: 117 KiB; 32 KiB on
    // lavapipe, 48 on NVIDIA, 64 on AMD).
    let grid = |n: usize, copies: usize| {
        let mut b = ModelBuilder::new();
        for k in 0..copies {
            b.add_cloth_grid(&ClothGrid::new(format!("cloth{k}"), n, n, 0.01)).unwrap();
        }
        Arc::new(b.finalize().unwrap())
    };
    assert!(!applies(&grid(100, 1), always));
    // A body that fits (50² = 2 500 particles; lavapipe's 32 KiB hold 2 730) but is larger than
    // the automatic choice's 2 304: swept locally only when asked, or among many bodies on a
    // GPU.
    assert!(applies(&grid(50, 1), always));
    assert!(!applies(&grid(50, 1), GpuSettings { local: LocalSweepMode::Auto, ..always }));
    let many = grid(50, hooke_gpu::LOCAL_MANY_BODIES);
    assert_eq!(applies(&many, GpuSettings { local: LocalSweepMode::Auto, ..always }), gpu);
    assert!(applies(&many, always));
    // Small bodies do not count toward the many: one large body among them stays colour by
    // colour.
    let mut b = ModelBuilder::new();
    b.add_cloth_grid(&ClothGrid::new("large", 50, 50, 0.01)).unwrap();
    for k in 1..hooke_gpu::LOCAL_MANY_BODIES {
        b.add_cloth_grid(&ClothGrid::new(format!("small{k}"), 5, 5, 0.01)).unwrap();
    }
    let mixed = Arc::new(b.finalize().unwrap());
    assert!(!applies(&mixed, GpuSettings { local: LocalSweepMode::Auto, ..always }));
    assert!(applies(&mixed, always));
}
