//! Particle contacts on the GPU: the same spatial hash and Jacobi gather as the CPU.

use crate::*;
use hooke::collision::deepest_overlap;

/// A 12 × 12 cloth pinned at its four corners (a trampoline) and a 10 × 10 cloth dropped on it
/// from 3 cm above, both 2 cm thick with self-collision on, at 1.2 cm spacing (thickness above
/// the spacing, so the layers cannot slip between particles). Returns the model and control.
fn trampoline() -> (Arc<Model>, Control) {
    let mut b = ModelBuilder::new();
    let mut ids = Vec::new();
    for (k, (n, y)) in [(12, 0.5f32), (10, 0.53)].into_iter().enumerate() {
        let mut g = ClothGrid::new(format!("layer{k}"), n, n, 0.012);
        g.center = Vec3::new(0.002 * k as f32, y, -0.001 * k as f32);
        g.material.thickness = 0.02;
        g.material.self_collision = true;
        ids.push(b.add_cloth_grid(&g).unwrap());
    }
    let model = Arc::new(b.finalize().unwrap());
    let mut control = Control::new();
    let low = &model.bodies()[ids[0].0];
    for (r, c) in [(0, 0), (0, 11), (11, 0), (11, 11)] {
        control.pin(low.grid_index(r, c).unwrap());
    }
    (model, control)
}

/// A cloth dropped onto a pinned one, both with self-collision, for 40 frames: on lavapipe
/// the GPU's positions and velocities equal the CPU's to the last bit (the hash's table is
/// integer work, the gather the CPU's operations in its order); elsewhere within 1 mm. Both
/// keep the layers at least 90 % of the thickness apart, and the GPU reports the contacts.
#[test]
fn self_collision_matches_the_cpu() {
    let ctx = gpu_or_skip!();
    let (model, control) = trampoline();
    let mut cpu = XpbdSolver::new(model.clone(), settings()).unwrap();
    let mut gpu = GpuXpbdSolver::new(ctx.clone(), model.clone(), settings()).unwrap();
    let (mut cpu_contacts, mut gpu_contacts) = (0, 0);
    for _ in 0..40 {
        cpu_contacts = cpu_contacts.max(cpu.step(&control, 1.0 / 60.0).unwrap().particle_contacts);
        gpu_contacts = gpu_contacts.max(gpu.step(&control, 1.0 / 60.0).unwrap().particle_contacts);
    }
    let (c, g) = (state_of(&mut cpu), state_of(&mut gpu));
    let dx = max_diff(&c.particle_position, &g.particle_position);
    let dv = max_diff(&c.particle_velocity, &g.particle_velocity);
    let all: Vec<u32> = (0..model.particle_count() as u32).collect();
    let closest = |x: &[Vec3]| deepest_overlap(&model, x, &all).map_or(1.0, |o| o.distance / o.contact_distance);
    let (cc, gc) = (closest(&c.particle_position), closest(&g.particle_position));
    eprintln!(
        "self-collision parity after 40 frames: max |Δx| = {dx:.3e} m, |Δv| = {dv:.3e} m/s; closest pair {cc:.4} t (CPU), \
         {gc:.4} t (GPU); particles in contact {cpu_contacts} (CPU), {gpu_contacts} (GPU)"
    );
    if rounding(&ctx).exact() {
        assert_eq!((dx, dv), (0.0, 0.0), "lavapipe rounds like the CPU: the runs must be identical");
        assert_eq!(cpu_contacts, gpu_contacts);
    }
    assert!(dx < 1e-3, "max vertex difference {dx} m");
    assert!(cpu_contacts > 50 && gpu_contacts > 50, "the upper cloth must land on the lower one");
    assert!(cc >= 0.9 && gc >= 0.9, "layers {cc} (CPU) and {gc} (GPU) of the thickness apart");
    // The upper cloth rests on the lower one instead of falling through it.
    let upper = &model.bodies()[1];
    let lower_mean = |s: &State, b: &hooke::Body| {
        b.particles.clone().map(|p| s.particle_position[p as usize].y).sum::<f32>() / b.particles.len() as f32
    };
    assert!(lower_mean(&g, upper) > lower_mean(&g, &model.bodies()[0]) + 0.015, "the upper cloth fell through");
}

/// Switching self-collision on by a material change builds the contact kernels; the GPU then
/// matches the CPU switched the same way (bit for bit on lavapipe), with the hash's cells,
/// with neighbour lists (made with the contacts, at the change) and with all pairs. A state written mid-run (the
/// particles put back where they were 10 frames before) is followed too.
#[test]
fn self_collision_switched_on_by_a_material_change() {
    let ctx = gpu_or_skip!();
    let (on, control) = trampoline();
    let mut off = (*on).clone();
    for body in 0..2 {
        let hooke::BodyMaterial::Cloth(m) = off.bodies()[body].material else { unreachable!() };
        off = off.with_cloth_material(body, ClothMaterial { self_collision: false, ..m }).unwrap();
    }
    let off = Arc::new(off);
    for mode in [ContactSearch::Cells, ContactSearch::Lists, ContactSearch::AllPairs] {
        let mut cpu = XpbdSolver::new(off.clone(), settings()).unwrap();
        let mut gpu = GpuXpbdSolver::new(ctx.clone(), off.clone(), with_lists(settings(), mode)).unwrap();
        let mut saved = None;
        for frame in 0..30 {
            if frame == 5 {
                cpu.notify_model_changed(on.clone()).unwrap();
                gpu.notify_model_changed(on.clone()).unwrap();
            }
            if frame == 10 {
                saved = Some(state_of(&mut cpu));
            }
            if frame == 20 {
                let s = saved.take().unwrap();
                cpu.write_state(&s).unwrap();
                gpu.write_state(&s).unwrap();
            }
            cpu.step(&control, 1.0 / 60.0).unwrap();
            gpu.step(&control, 1.0 / 60.0).unwrap();
        }
        let (c, g) = (state_of(&mut cpu), state_of(&mut gpu));
        let dx = max_diff(&c.particle_position, &g.particle_position);
        eprintln!("self-collision switched on at frame 5 ({mode:?}): max |Δx| = {dx:.3e} m after 30 frames");
        if rounding(&ctx).exact() {
            assert_eq!(dx, 0.0, "{mode:?}");
        }
        assert!(dx < 1e-3, "{dx}");
        let all: Vec<u32> = (0..on.particle_count() as u32).collect();
        let closest = deepest_overlap(&on, &g.particle_position, &all).map_or(1.0, |o| o.distance / o.contact_distance);
        assert!(closest >= 0.9, "layers {closest} of the thickness apart");
    }
}

/// The speed clamp on the GPU: a 1 cm cloth with self-collision and the clamp, falling for
/// 0.5 s, matches the CPU (bit for bit on lavapipe) and never moves faster than
/// 0.2 × thickness / h = 2.4 m/s (it would reach 4.9 m/s).
#[test]
fn speed_clamp_matches_the_cpu() {
    let ctx = gpu_or_skip!();
    let mut g = ClothGrid::new("cloth", 8, 8, 0.01);
    g.center = Vec3::new(0.0, 2.0, 0.0);
    g.material.thickness = 0.01;
    g.material.self_collision = true;
    g.material.self_collision_speed_clamp = true;
    let mut b = ModelBuilder::new();
    b.add_cloth_grid(&g).unwrap();
    let model = Arc::new(b.finalize().unwrap());
    let s = XpbdSettings { air_damping: 0.0, ..settings() };
    let mut cpu = XpbdSolver::new(model.clone(), s).unwrap();
    let mut gpu = GpuXpbdSolver::new(ctx.clone(), model.clone(), s).unwrap();
    let cap = 0.2 * 0.01 * 1200.0;
    let mut fastest = 0.0f32;
    for _ in 0..30 {
        cpu.step(&Control::new(), 1.0 / 60.0).unwrap();
        gpu.step(&Control::new(), 1.0 / 60.0).unwrap();
        let g = state_of(&mut gpu);
        fastest = g.particle_velocity.iter().map(|v| v.length()).fold(fastest, f32::max);
    }
    let dx = max_diff(&state_of(&mut cpu).particle_position, &state_of(&mut gpu).particle_position);
    eprintln!("speed clamp: fastest particle {fastest:.4} m/s (cap {cap} m/s); |Δx| vs CPU {dx:.3e} m");
    if rounding(&ctx).exact() {
        assert_eq!(dx, 0.0);
    }
    assert!(dx < 1e-3, "{dx}");
    assert!(fastest <= cap * (1.0 + 1e-5) && fastest > 0.99 * cap, "{fastest} m/s against {cap} m/s");
}

/// A self-collision thickness apart from the thickness (3 cm against 1 cm): two layers dropped
/// onto the ground rest 3 cm apart on the GPU as on the CPU, bit for bit on lavapipe.
#[test]
fn self_collision_thickness_matches_the_cpu() {
    let ctx = gpu_or_skip!();
    let mut b = ModelBuilder::new();
    for (k, y) in [0.02f32, 0.08].into_iter().enumerate() {
        let mut g = ClothGrid::new(format!("layer{k}"), 8, 8, 0.02);
        g.center = Vec3::new(0.0, y, 0.0);
        g.material.thickness = 0.01;
        g.material.self_collision = true;
        g.material.self_collision_thickness = Some(0.03);
        b.add_cloth_grid(&g).unwrap();
    }
    b.add_collider(
        Collider::new("ground", Shape::Plane { point: Vec3::ZERO, normal: Vec3::Y }).with_friction(0.6, 0.5),
    )
    .unwrap();
    let model = Arc::new(b.finalize().unwrap());
    let s = XpbdSettings { substeps: 10, ..settings() };
    let mut cpu = XpbdSolver::new(model.clone(), s).unwrap();
    let mut gpu = GpuXpbdSolver::new(ctx.clone(), model.clone(), s).unwrap();
    for _ in 0..60 {
        cpu.step(&Control::new(), 1.0 / 60.0).unwrap();
        gpu.step(&Control::new(), 1.0 / 60.0).unwrap();
    }
    let (c, g) = (state_of(&mut cpu), state_of(&mut gpu));
    let dx = max_diff(&c.particle_position, &g.particle_position);
    let mean =
        |r: std::ops::Range<usize>| g.particle_position[r.clone()].iter().map(|p| p.y).sum::<f32>() / r.len() as f32;
    let gap = mean(64..128) - mean(0..64);
    eprintln!("self-collision thickness on the GPU: layers {gap:.4} m apart; |Δx| vs CPU {dx:.3e} m");
    assert!(gap > 0.9 * 0.03 && gap < 0.033, "{gap}");
    if rounding(&ctx).exact() {
        assert_eq!(dx, 0.0);
    }
    assert!(dx < 1e-3, "{dx}");
}

/// GPU settings with the particle contacts' neighbour lists `mode`.
fn with_lists(s: XpbdSettings, mode: ContactSearch) -> GpuSettings {
    GpuSettings { xpbd: s, contact_search: mode, ..GpuSettings::default() }
}

/// Steps `solver` for `frames` frames; returns (list builds, list overflows, substeps) summed.
fn run_counting(solver: &mut dyn Solver, control: &Control, frames: usize) -> (u32, u32, u32) {
    let (mut builds, mut overflows, mut substeps) = (0, 0, 0);
    for _ in 0..frames {
        let r = solver.step(control, 1.0 / 60.0).unwrap();
        builds += r.contact_list_builds;
        overflows += r.contact_list_overflows;
        substeps += r.substeps;
    }
    (builds, overflows, substeps)
}

/// Neighbour lists kept across substeps find the contacts of a hash built every substep: the
/// trampoline's upper cloth lands on the lower one with the CPU's bits on lavapipe (within
/// 1 mm elsewhere), with lists rebuilt in some substeps only, none overflowing; without lists
/// the GPU reports no builds. Breaking the staleness check (lists never rebuilt) lets the
/// upper cloth through.
#[test]
fn neighbour_lists_find_the_contacts_of_the_cells() {
    let ctx = gpu_or_skip!();
    let (model, control) = trampoline();
    let mut cpu = XpbdSolver::new(model.clone(), settings()).unwrap();
    let mut cells =
        GpuXpbdSolver::new(ctx.clone(), model.clone(), with_lists(settings(), ContactSearch::Cells)).unwrap();
    let mut lists =
        GpuXpbdSolver::new(ctx.clone(), model.clone(), with_lists(settings(), ContactSearch::Lists)).unwrap();
    let (cpu_builds, _, _) = run_counting(&mut cpu, &control, 40);
    let (cell_builds, _, _) = run_counting(&mut cells, &control, 40);
    let (builds, overflows, substeps) = run_counting(&mut lists, &control, 40);
    let (c, g, l) = (state_of(&mut cpu), state_of(&mut cells), state_of(&mut lists));
    let dx = max_diff(&c.particle_position, &l.particle_position);
    let dv = max_diff(&c.particle_velocity, &l.particle_velocity);
    let dcells = max_diff(&g.particle_position, &l.particle_position);
    eprintln!(
        "neighbour lists on the GPU: built in {builds} of {substeps} substeps (CPU {cpu_builds}), {overflows} \
         overflows; |Δx| vs CPU {dx:.3e} m, |Δv| {dv:.3e} m/s, vs cells {dcells:.3e} m"
    );
    if rounding(&ctx).exact() {
        assert_eq!((dx, dv, dcells), (0.0, 0.0, 0.0), "lavapipe: the lists must give the CPU's bits");
        assert_eq!(builds, cpu_builds, "the same positions, so the same rebuilds as the CPU");
    }
    assert!(dx < 1e-3 && dcells < 1e-3, "{dx} {dcells}");
    assert_eq!(cell_builds, 0, "without lists the GPU reports no builds");
    assert!(builds > 1 && builds < substeps / 2, "lists kept in most substeps: {builds} builds of {substeps}");
    assert_eq!(overflows, 0);
    let upper = &model.bodies()[1];
    let mean = |b: &hooke::Body| b.particles.clone().map(|p| l.particle_position[p as usize].y).sum::<f32>();
    let (up, low) = (mean(upper) / 100.0, mean(&model.bodies()[0]) / 144.0);
    assert!(up > low + 0.015, "the upper cloth fell through: {up} against {low}");
}

/// Two 16 × 16 layers 5 spacings thick (about 100 candidates for an inner particle), the lower
/// pinned at its corners, the upper 7 cm above it; beside them two thin 12 × 12 layers, the
/// upper 15 cm above the lower, pinned one. Returns the model and control.
fn crowded_layers() -> (Arc<Model>, Control) {
    let mut b = ModelBuilder::new();
    for (k, y) in [0.5f32, 0.57].into_iter().enumerate() {
        let mut g = ClothGrid::new(format!("layer{k}"), 16, 16, 0.01);
        g.center = Vec3::new(0.003 * k as f32, y, 0.0);
        g.material.thickness = 0.05;
        g.material.self_collision = true;
        b.add_cloth_grid(&g).unwrap();
    }
    for (k, y) in [0.5f32, 0.65].into_iter().enumerate() {
        let mut g = ClothGrid::new(format!("thin{k}"), 12, 12, 0.01);
        g.center = Vec3::new(0.5 + 0.002 * k as f32, y, 0.0);
        g.material.thickness = 0.012;
        g.material.self_collision = true;
        b.add_cloth_grid(&g).unwrap();
    }
    let model = Arc::new(b.finalize().unwrap());
    let mut control = Control::new();
    for (r, c) in [(0, 0), (0, 15), (15, 0), (15, 15)] {
        control.pin(model.bodies()[0].grid_index(r, c).unwrap());
    }
    for (r, c) in [(0, 0), (0, 11), (11, 0), (11, 11)] {
        control.pin(model.bodies()[2].grid_index(r, c).unwrap());
    }
    (model, control)
}

/// Where `ContactSearch::Auto` looks for a small model's candidates (the trampoline's 244
/// colliding particles): all pairs on a GPU, the neighbour lists on a software adapter such as
/// lavapipe, where the n² tests are the CPU's own work (a 20 × 20 fold's contact stage costs
/// 281 ms a frame there with all pairs, 19 with lists); the same bits either way (the tests
/// around this one). A named search is taken as it is.
#[test]
fn auto_search_tests_all_pairs_on_a_gpu_and_takes_the_lists_on_a_software_adapter() {
    let ctx = gpu_or_skip!();
    let (model, _) = trampoline();
    let resolved =
        |mode| GpuXpbdSolver::new(ctx.clone(), model.clone(), with_lists(settings(), mode)).unwrap().contact_search();
    let auto = if ctx.is_cpu() { ContactSearch::Lists } else { ContactSearch::AllPairs };
    assert_eq!(resolved(ContactSearch::Auto), Some(auto), "on {}", ctx.describe());
    for mode in [ContactSearch::Cells, ContactSearch::Lists, ContactSearch::AllPairs] {
        assert_eq!(resolved(mode), Some(mode));
    }
}

/// Testing all pairs instead of the hash's candidates finds the same contacts: the
/// trampoline's upper cloth lands on the lower one with the bits of the cells and of the CPU
/// on lavapipe (within 1 mm elsewhere), and so do the two crowded layers of
/// `overflowing_lists_fall_back_to_the_cells` (about 100 candidates a particle). A gather that
/// skips every other candidate of its slice fails (it misses contacts: 6.7 mm from the CPU).
#[test]
fn all_pairs_find_the_contacts_of_the_cells() {
    let ctx = gpu_or_skip!();
    for (name, (model, control)) in [("trampoline", trampoline()), ("crowded layers", crowded_layers())] {
        let s = XpbdSettings { substeps: 10, ..settings() };
        let mut cpu = XpbdSolver::new(model.clone(), s).unwrap();
        let mut cells = GpuXpbdSolver::new(ctx.clone(), model.clone(), with_lists(s, ContactSearch::Cells)).unwrap();
        let mut pairs = GpuXpbdSolver::new(ctx.clone(), model.clone(), with_lists(s, ContactSearch::AllPairs)).unwrap();
        let (mut contacts, mut cpu_contacts) = (0, 0);
        for _ in 0..40 {
            cpu_contacts = cpu_contacts.max(cpu.step(&control, 1.0 / 60.0).unwrap().particle_contacts);
            cells.step(&control, 1.0 / 60.0).unwrap();
            contacts = contacts.max(pairs.step(&control, 1.0 / 60.0).unwrap().particle_contacts);
        }
        let (c, g, p) = (state_of(&mut cpu), state_of(&mut cells), state_of(&mut pairs));
        let dx = max_diff(&c.particle_position, &p.particle_position);
        let dv = max_diff(&c.particle_velocity, &p.particle_velocity);
        let dcells = max_diff(&g.particle_position, &p.particle_position);
        let all: Vec<u32> = (0..model.particle_count() as u32).collect();
        let closest =
            deepest_overlap(&model, &p.particle_position, &all).map_or(1.0, |o| o.distance / o.contact_distance);
        eprintln!(
            "all pairs on the GPU ({name}): |Δx| vs CPU {dx:.3e} m, |Δv| {dv:.3e} m/s, vs cells {dcells:.3e} m; \
             closest pair {closest:.4} t; particles in contact {contacts} (CPU {cpu_contacts})"
        );
        if rounding(&ctx).exact() {
            assert_eq!((dx, dv, dcells), (0.0, 0.0, 0.0), "{name}: lavapipe: all pairs must give the CPU's bits");
            assert_eq!(contacts, cpu_contacts, "{name}");
        }
        assert!(dx < 1e-3 && dcells < 1e-3, "{name}: {dx} {dcells}");
        assert!(contacts > 50, "{name}: the layers must meet");
        assert!(closest >= 0.85, "{name}: layers {closest} of the thickness apart");
    }
}

/// A list that overflows its capacity is not truncated: two 16 × 16 layers 5 spacings thick
/// (about 100 candidates for an inner particle, 48 fit) dropped onto each other, and beside
/// them two thin 12 × 12 layers, the upper falling 15 cm onto the lower, give with lists the
/// bits of the cells and of the CPU on lavapipe; the overflows are reported, and after each
/// overflowing build the contacts come from the cells for a spell of 20 substeps, doubling at
/// each further overflow, before lists are tried again (the thin layers meet in those
/// substeps: lists kept through them would miss it).
#[test]
fn overflowing_lists_fall_back_to_the_cells() {
    let ctx = gpu_or_skip!();
    let (model, control) = crowded_layers();
    let s = XpbdSettings { substeps: 10, ..settings() };
    let mut cpu = XpbdSolver::new(model.clone(), s).unwrap();
    let mut cells = GpuXpbdSolver::new(ctx.clone(), model.clone(), with_lists(s, ContactSearch::Cells)).unwrap();
    let mut lists = GpuXpbdSolver::new(ctx.clone(), model.clone(), with_lists(s, ContactSearch::Lists)).unwrap();
    run_counting(&mut cpu, &control, 20);
    run_counting(&mut cells, &control, 20);
    let (builds, overflows, substeps) = run_counting(&mut lists, &control, 20);
    let (c, g, l) = (state_of(&mut cpu), state_of(&mut cells), state_of(&mut lists));
    let dx = max_diff(&c.particle_position, &l.particle_position);
    let dcells = max_diff(&g.particle_position, &l.particle_position);
    eprintln!(
        "overflowing lists: {overflows} member overflows, built in {builds} of {substeps} substeps; |Δx| vs CPU \
         {dx:.3e} m, vs cells {dcells:.3e} m"
    );
    if rounding(&ctx).exact() {
        assert_eq!((dx, dcells), (0.0, 0.0), "lavapipe: an overflow must not change the contacts");
    }
    assert!(dx < 1e-3 && dcells < 1e-3, "{dx} {dcells}");
    assert!(overflows > 100 * builds, "most inner members overflow at every build: {overflows}");
    // A build, then spells of cells of 20, 40, 80, … substeps, each followed by a build.
    let (mut at, mut spell, mut expected) = (0, 20, 0);
    while at < substeps {
        (at, spell, expected) = (at + 1 + spell, (2 * spell).min(640), expected + 1);
    }
    assert_eq!(builds, expected, "a build after each spell of cells, the spells doubling");
    let all: Vec<u32> = (0..model.particle_count() as u32).collect();
    let closest = deepest_overlap(&model, &l.particle_position, &all).map_or(1.0, |o| o.distance / o.contact_distance);
    assert!(closest >= 0.9, "layers {closest} of the thickness apart");
    let mean = |k: usize| {
        let p = model.bodies()[k].particles.clone();
        p.clone().map(|i| l.particle_position[i as usize].y).sum::<f32>() / p.len() as f32
    };
    assert!(mean(3) > mean(2) + 0.003, "the thin upper layer fell through: {} against {}", mean(3), mean(2));
}

/// Two 10 × 10 layers 1.5 cm apart falling freely together for 20 frames (400 substeps, up
/// to 3 m/s: every particle moves more than the skin per substep) keep their neighbour lists:
/// no particle moves half a skin relative to the reference particle, so after the first build
/// the lists are rebuilt at most once, on the GPU as on the CPU (the same count and the same
/// bits on lavapipe).
#[test]
fn lists_are_kept_through_a_free_fall() {
    let ctx = gpu_or_skip!();
    let mut b = ModelBuilder::new();
    for (k, y) in [1.0f32, 1.015].into_iter().enumerate() {
        let mut g = ClothGrid::new(format!("layer{k}"), 10, 10, 0.01);
        g.center = Vec3::new(0.0, y, 0.0);
        g.material.thickness = 0.012;
        g.material.self_collision = true;
        b.add_cloth_grid(&g).unwrap();
    }
    let model = Arc::new(b.finalize().unwrap());
    let s = XpbdSettings { air_damping: 0.0, ..settings() };
    let mut cpu = XpbdSolver::new(model.clone(), s).unwrap();
    let mut lists = GpuXpbdSolver::new(ctx.clone(), model.clone(), with_lists(s, ContactSearch::Lists)).unwrap();
    let control = Control::new();
    let (cpu_builds, _, _) = run_counting(&mut cpu, &control, 20);
    let (builds, overflows, substeps) = run_counting(&mut lists, &control, 20);
    let (c, l) = (state_of(&mut cpu), state_of(&mut lists));
    let dx = max_diff(&c.particle_position, &l.particle_position);
    let speed = l.particle_velocity.iter().map(|v| v.length()).fold(0.0f32, f32::max);
    eprintln!(
        "free fall at up to {speed:.2} m/s: lists built in {builds} of {substeps} substeps (CPU {cpu_builds}); |Δx| vs CPU {dx:.3e} m"
    );
    if rounding(&ctx).exact() {
        assert_eq!(dx, 0.0);
        assert_eq!(builds, cpu_builds);
    }
    assert!(dx < 1e-3, "{dx}");
    assert!(speed > 3.0, "{speed}");
    assert!(builds <= 2 && cpu_builds <= 2, "lists rebuilt {builds} (GPU), {cpu_builds} (CPU) times in a free fall");
    assert_eq!(overflows, 0);
}

/// A coordinate in [−2, 2] m, half of them snapped to a multiple of `cell` (on a border of
/// the GPU's cells, one contact distance wide).
fn coordinate(cell: f32) -> impl proptest::strategy::Strategy<Value = f32> {
    use proptest::prelude::*;
    prop_oneof![-2.0f32..2.0, (-40i32..=40).prop_map(move |k| k as f32 * cell)]
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]

    /// The GPU's spatial hash finds what a brute-force search finds: random points in
    /// [−2, 2]³ m, half of their coordinates on cell borders, paired into two-particle ropes
    /// of radius r with self-collision and no gravity, step one substep with the hash's cells
    /// and with all pairs tested (no hash): the particles in contact are those a brute-force
    /// search of every pair finds (closer than 2r, not the two ends of one rope closer than 2r
    /// at rest), and on lavapipe the positions are the CPU's bits either way.
    #[test]
    fn the_gpu_hash_finds_what_brute_force_finds(
        r in proptest::prop_oneof![proptest::strategy::Just(0.05f32), proptest::strategy::Just(0.125f32), 0.02f32..0.25],
        points in proptest::collection::vec((coordinate(0.1), coordinate(0.25), coordinate(0.25)), 2..160),
    ) {
        let Some(ctx) = crate::device() else { return Ok(()) };
        // The cells are one contact distance 2r wide: snap a third of the points to them too.
        let points: Vec<Vec3> = points
            .iter()
            .enumerate()
            .map(|(k, &(x, y, z))| {
                let p = Vec3::new(x, y, z);
                if k % 3 == 0 { (p / (2.0 * r)).round() * 2.0 * r } else { p }
            })
            .collect();
        let mut b = ModelBuilder::new();
        b.set_gravity(Vec3::ZERO).unwrap();
        let mut ends = Vec::new();
        for (k, pair) in points.chunks_exact(2).enumerate() {
            // Two distinct ends (a rope needs a length).
            let (a, e) = (pair[0], if pair[1] == pair[0] { pair[1] + Vec3::X * 1e-3 } else { pair[1] });
            let mut rope = Rope::straight(format!("r{k}"), a, e, 2);
            rope.material.radius = r;
            rope.material.self_collision = true;
            b.add_rope(&rope).unwrap();
            ends.push([a, e]);
        }
        proptest::prop_assume!(!ends.is_empty());
        let model = Arc::new(b.finalize().unwrap());
        let x: Vec<Vec3> = model.particle_position().to_vec();
        // Brute force: particles with a contact (closer than 2r, not their rope's other end
        // when that is closer than 2r at rest).
        let t2 = (2.0 * r) * (2.0 * r);
        let touching = (0..x.len())
            .filter(|&i| {
                (0..x.len()).any(|j| {
                    j != i && (x[i] - x[j]).length_squared() < t2 && !(i / 2 == j / 2 && (x[i] - x[j]).length_squared() < t2)
                })
            })
            .count() as u32;
        let s = XpbdSettings { substeps: 1, air_damping: 0.0, ..settings() };
        let mut cpu = XpbdSolver::new(model.clone(), s).unwrap();
        let cpu_report = cpu.step(&Control::new(), 1.0 / 60.0).unwrap();
        let cpu_x = state_of(&mut cpu).particle_position;
        for mode in [ContactSearch::Cells, ContactSearch::AllPairs] {
            let mut gpu = GpuXpbdSolver::new(ctx.clone(), model.clone(), with_lists(s, mode)).unwrap();
            let report = gpu.step(&Control::new(), 1.0 / 60.0).unwrap();
            proptest::prop_assert_eq!(report.particle_contacts, touching, "{:?}: contacts against brute force", mode);
            if rounding(&ctx).exact() {
                let g = state_of(&mut gpu).particle_position;
                proptest::prop_assert_eq!(max_diff(&g, &cpu_x), 0.0, "{:?}: the CPU's bits", mode);
            }
        }
        proptest::prop_assert_eq!(cpu_report.particle_contacts, touching, "CPU contacts against brute force");
    }
}
