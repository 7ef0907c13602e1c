//! Built-in scenes for `hooke run` and `hooke bench`.

use anyhow::{Context, Result, bail};
use glam::Vec3;
use hooke::solver::force_based::{ForceSettings, Integrator};
use hooke::{ClothGrid, ClothMaterial, ModelBuilder, Pin, XpbdSettings};
use hooke_io::scene::{self, Scene, ScheduledPin, SolverChoice};
use std::path::Path;
use std::sync::Arc;

/// A preset scene: 300 frames at 60 fps, no wind, output settings left to the command line.
pub fn preset(
    name: String,
    model: Arc<hooke::Model>,
    solver: SolverChoice,
    pinned: impl IntoIterator<Item = u32>,
) -> Scene {
    let pins = pinned
        .into_iter()
        .map(|p| ScheduledPin { pin: Pin { particle: p, target: None }, release_at: None, motion: None })
        .collect();
    // The blow-up speed limit scales with the scene, as a scene file's does by default.
    let mut solver = solver;
    solver.set_max_speed(scene::derived_max_speed(&model, Vec3::ZERO, None, &[]));
    Scene {
        name,
        model,
        solver,
        fps: 60.0,
        frames: 300,
        wind: Vec3::ZERO,
        gust: None,
        world_wind: Vec::new(),
        pins,
        cuts: Vec::new(),
        collider_motion: Vec::new(),
        output: Default::default(),
        vertex_maps: Vec::new(),
        warnings: Vec::new(),
        residual_tolerance: scene::DEFAULT_RESIDUAL_TOLERANCE,
        tear_overlap: false,
    }
}

/// The built-in default scene (`scenes/cloth_on_sphere.toml`).
pub fn default_scene() -> Result<Scene> {
    Ok(scene::parse(scene::DEFAULT_SCENE, "<built-in default scene>", "cloth_on_sphere", None, crate::memory_limit())?)
}

/// `demo:N`: the built-in default scene (the article's cloth over a sphere, §5.5) with its
/// cloth made N×N particles over the same 1.46 m × 1.46 m — the viewer's `cloth` demo at any
/// resolution, for measuring it with drawing (`hooke bench demo:512 --backend gpu --draw`).
pub fn demo(n: usize) -> Result<Scene> {
    if !(2..=8192).contains(&n) {
        bail!("demo:{n}: N must be 2 to 8192 particles a side");
    }
    resized(scene::DEFAULT_SCENE, ("demo", n), (40, "0.0375", 1.4625), "cloth_on_sphere")
}

/// Scene `text`, whose one cloth has `rows = K`, `columns = K` and `spacing = S` (`grid` =
/// (K, S as written, its side K−1 times S in m)) and whose name is `name`, with that cloth made
/// `n`×`n` particles over the same side — the preset `preset:n`, named `<preset><n>`.
fn resized(text: &str, (preset, n): (&str, usize), grid: (usize, &str, f64), name: &str) -> Result<Scene> {
    let (k, spacing, side) = grid;
    let text = text
        .replace(&format!("rows = {k}"), &format!("rows = {n}"))
        .replace(&format!("columns = {k}"), &format!("columns = {n}"))
        .replace(&format!("spacing = {spacing}"), &format!("spacing = {}", side / (n - 1) as f64))
        .replace(&format!("name = \"{name}\""), &format!("name = \"{preset}{n}\""));
    let label = format!("<preset {preset}:{n}>");
    Ok(scene::parse(&text, &label, &format!("{preset}{n}"), None, crate::memory_limit())?)
}

/// `tear:N`: `scenes/tear_sheet.toml` (a ball pushed through a sheet held by two edges, which
/// tears) with the sheet made N×N particles over the same 0.775 m, at a fixed 20 substeps × 8
/// iterations (the example iterates to a tolerance, the CPU deciding per substep and the GPU
/// per frame: the benchmark compares both backends at one budget); `hooke bench --tearing` tears it (without the flag
/// its tear strain is ignored).
pub fn tear(n: usize) -> Result<Scene> {
    if !(2..=8192).contains(&n) {
        bail!("tear:{n}: N must be 2 to 8192 particles a side");
    }
    let mut scene =
        resized(include_str!("../../../scenes/tear_sheet.toml"), ("tear", n), (32, "0.025", 0.775), "tear_sheet")?;
    scene.solver.set_substeps(20);
    scene.solver.set_iterations(8);
    Ok(scene)
}

/// `cut:N`: `scenes/cut_cloth.toml` (a hanging cloth cut straight across by a scripted blade)
/// with the cloth made N×N particles over the same 0.575 m and the cut at the end of the second
/// frame instead of at 1 s, at a fixed 20 substeps × 8 iterations: one blade event through a
/// cloth near rest, for timing a cut's rebuild (`hooke bench cut:512 --tearing --frames 3
/// --warmup 0`; without `--tearing` the cut is not made).
pub fn cut(n: usize) -> Result<Scene> {
    if !(2..=8192).contains(&n) {
        bail!("cut:{n}: N must be 2 to 8192 particles a side");
    }
    let text = include_str!("../../../scenes/cut_cloth.toml");
    let at = "time = 1.0  ";
    if !text.contains(at) {
        bail!("cut:{n}: scenes/cut_cloth.toml no longer cuts at 1 s");
    }
    let text = text.replace(at, "time = 0.0333");
    let mut scene = resized(&text, ("cut", n), (24, "0.025", 0.575), "cut_cloth")?;
    scene.solver.set_substeps(20);
    scene.solver.set_iterations(8);
    Ok(scene)
}

/// `grid:N`: an N×N cloth of 1 m × 1 m, default material, lying in the x–z plane at y = 1 m and
/// pinned along its first row (z = −0.5 m), so it falls and hangs from that edge. No colliders,
/// no aerodynamics.
pub fn grid(n: usize) -> Result<Scene> {
    if n < 2 {
        bail!("grid:{n}: needs at least 2×2 particles");
    }
    let mut b = ModelBuilder::new();
    b.set_memory_limit(crate::memory_limit());
    let mut g = ClothGrid::new("cloth", n, n, 1.0 / (n - 1) as f32);
    g.center = Vec3::new(0.0, 1.0, 0.0);
    let id = b.add_cloth_grid(&g)?;
    let model = Arc::new(b.finalize()?);
    let body = &model.bodies()[id.0];
    let pins: Vec<u32> = (0..n).map(|c| body.grid_index(0, c).unwrap()).collect();
    Ok(preset(format!("grid{n}"), model, SolverChoice::Position(XpbdSettings::default()), pins))
}

/// `sheet:N`: issue #9's stiff sheet — an N×N cloth of 1 m × 1 m, K = 1e4 N/m (stretch and
/// compression), 0.15 kg/m², otherwise the default material, hanging vertically (x–y plane,
/// top row at y = 1.5 m) from its whole top row. XPBD at the defaults; no colliders, no air.
pub fn sheet(n: usize) -> Result<Scene> {
    if n < 2 {
        bail!("sheet:{n}: needs at least 2×2 particles");
    }
    let mut b = ModelBuilder::new();
    b.set_memory_limit(crate::memory_limit());
    let mut g = ClothGrid::new("sheet", n, n, 1.0 / (n - 1) as f32);
    g.rotation = glam::Quat::from_rotation_x(std::f32::consts::FRAC_PI_2);
    g.center = Vec3::new(0.0, 1.0, 0.0);
    g.material = ClothMaterial {
        areal_density: 0.15,
        stretch_stiffness: 1e4,
        compression_stiffness: 1e4,
        ..ClothMaterial::default()
    };
    let id = b.add_cloth_grid(&g)?;
    let model = Arc::new(b.finalize()?);
    let body = &model.bodies()[id.0];
    let pins: Vec<u32> = (0..n).map(|c| body.grid_index(0, c).unwrap()).collect();
    Ok(preset(format!("sheet{n}"), model, SolverChoice::Position(XpbdSettings::default()), pins))
}

/// `warp-cloth:N`: NVIDIA Warp's cloth benchmark (`warp/examples/benchmarks/benchmark_cloth.py`):
/// an N×N grid in the x–z plane, 0.1 m spacing, 0.1 kg per particle, the two corners of the
/// first row pinned, structural + shear + bending (distance 2) springs of k = 1000 N/m with
/// k_d = 10 N·s/m (τ = k_d/k = 0.01 s), gravity 9.81 m/s², symplectic Euler, 16 substeps per
/// 1/60 s frame. No colliders, no aerodynamics, no air damping.
pub fn warp_cloth(n: usize) -> Result<Scene> {
    if n < 3 {
        bail!("warp-cloth:{n}: needs at least 3×3 particles");
    }
    let mut b = ModelBuilder::new();
    b.set_memory_limit(crate::memory_limit());
    let mut g = ClothGrid::new("cloth", n, n, 0.1);
    g.particle_mass = Some(0.1);
    g.spring_stiffness = Some(1000.0);
    g.bending = hooke::Bending::Springs;
    g.material = ClothMaterial { damping: 10.0 / 1000.0, thickness: 0.0, ..ClothMaterial::default() };
    let id = b.add_cloth_grid(&g)?;
    let model = Arc::new(b.finalize()?);
    let body = &model.bodies()[id.0];
    let pins = [body.grid_index(0, 0).unwrap(), body.grid_index(0, n - 1).unwrap()];
    let solver = SolverChoice::Force(ForceSettings {
        integrator: Integrator::SymplecticEuler,
        substeps: 16,
        air_damping: 0.0,
        ..ForceSettings::default()
    });
    Ok(preset(format!("warp_cloth{n}"), model, solver, pins))
}

/// `newton-hanging:WxH`: Newton's `cloth_hanging` example as closely as a distance-spring
/// model allows — W×H cells of 0.1 m (W+1 by H+1 particles) lying flat 3 m up, 0.1 kg per
/// particle, one short edge pinned; distance springs on the grid edges and both diagonals
/// (k = 1000 N/m, light damping τ = 10⁻⁴ s) and distance-2 bending springs of k = 10 N/m
/// (Newton bends with dihedral angles, stiffness 10: the closest distance-spring analogue);
/// particle radius 0.05 m; a ground plane with friction 0.5; XPBD 10 substeps × 10 iterations
/// at 60 Hz.
pub fn newton_hanging(w: usize, h: usize) -> Result<Scene> {
    if w < 2 || h < 2 {
        bail!("newton-hanging:{w}x{h}: needs at least 2×2 cells");
    }
    let mut b = ModelBuilder::new();
    b.set_memory_limit(crate::memory_limit());
    let (rows, columns) = (w.min(h) + 1, w.max(h) + 1);
    let mut g = ClothGrid::new("cloth", rows, columns, 0.1);
    g.center = Vec3::new(0.0, 3.0, 0.0);
    g.particle_mass = Some(0.1);
    g.material = ClothMaterial {
        stretch_stiffness: 1000.0,
        compression_stiffness: 1000.0,
        shear_stiffness: 1000.0,
        bend_stiffness: 10.0,
        damping: 1e-4,
        thickness: 0.1,
        ..ClothMaterial::default()
    };
    g.spring_stiffness = None;
    g.bending = hooke::Bending::Springs;
    let id = b.add_cloth_grid(&g)?;
    b.add_collider(
        hooke::collision::Collider::new(
            "ground",
            hooke::collision::Shape::Plane { point: Vec3::ZERO, normal: Vec3::Y },
        )
        .with_friction(0.5, 0.5),
    )?;
    let model = Arc::new(b.finalize()?);
    let body = &model.bodies()[id.0];
    // The short edge: the first column (rows ≤ columns).
    let pins: Vec<u32> = (0..rows).map(|r| body.grid_index(r, 0).unwrap()).collect();
    let solver = SolverChoice::Position(XpbdSettings {
        substeps: 10,
        iterations: 10,
        air_damping: 0.0,
        ..XpbdSettings::default()
    });
    Ok(preset(format!("newton_hanging_{w}x{h}"), model, solver, pins))
}

/// `pile:N`: a cloth dropped in a heap — an N×N cloth of 1 m × 1 m, default material with a
/// thickness of 1.5 spacings and self-collision on, hanging vertically (x–y plane) with its
/// lower edge 0.2 m above a ground plane (plus its collision radius) (μₛ = 0.6, μₖ = 0.5), unpinned, so it falls and
/// folds onto itself on the ground (from N ≈ 100; coarser cloths are stiffer and fall over flat).
/// XPBD at the defaults.
pub fn pile(n: usize) -> Result<Scene> {
    if n < 2 {
        bail!("pile:{n}: needs at least 2×2 particles");
    }
    let mut b = ModelBuilder::new();
    b.set_memory_limit(crate::memory_limit());
    let spacing = 1.0 / (n - 1) as f32;
    let mut g = ClothGrid::new("cloth", n, n, spacing);
    g.rotation = glam::Quat::from_rotation_x(std::f32::consts::FRAC_PI_2);
    let thickness = 1.5 * spacing;
    g.center = Vec3::new(0.0, 0.7 + 0.5 * thickness, 0.0);
    g.material = ClothMaterial { thickness, self_collision: true, ..ClothMaterial::default() };
    b.add_cloth_grid(&g)?;
    let ground = hooke::collision::Shape::Plane { point: Vec3::ZERO, normal: Vec3::Y };
    b.add_collider(hooke::collision::Collider::new("ground", ground).with_friction(0.6, 0.5))?;
    let model = Arc::new(b.finalize()?);
    Ok(preset(format!("pile{n}"), model, SolverChoice::Position(XpbdSettings::default()), []))
}

/// `stack:N`: four N×N cloths of 1 m × 1 m lying flat one above the other (1.5 thicknesses
/// apart, the lowest 5 cm above a ground plane), default material with a thickness of 1.5
/// spacings and self-collision on, unpinned: they fall, land and rest on each other, so every
/// particle has contacts with the layers next to it — the even load of a folded garment,
/// without the heap's crumpling. 4N² particles. XPBD at the defaults.
pub fn stack(n: usize) -> Result<Scene> {
    if n < 2 {
        bail!("stack:{n}: needs at least 2×2 particles");
    }
    let mut b = ModelBuilder::new();
    b.set_memory_limit(crate::memory_limit());
    let spacing = 1.0 / (n - 1) as f32;
    let thickness = 1.5 * spacing;
    for layer in 0..4 {
        let mut g = ClothGrid::new(format!("layer{layer}"), n, n, spacing);
        g.center = Vec3::new(0.0, 0.05 + 0.5 * thickness + 1.5 * thickness * layer as f32, 0.0);
        g.material = ClothMaterial { thickness, self_collision: true, ..ClothMaterial::default() };
        b.add_cloth_grid(&g)?;
    }
    let ground = hooke::collision::Shape::Plane { point: Vec3::ZERO, normal: Vec3::Y };
    b.add_collider(hooke::collision::Collider::new("ground", ground).with_friction(0.6, 0.5))?;
    let model = Arc::new(b.finalize()?);
    Ok(preset(format!("stack{n}"), model, SolverChoice::Position(XpbdSettings::default()), []))
}

/// `capsules:N`: an N×N cloth of 2 m × 2 m, 0.6 m up, falling onto 100 capsules (10 × 10
/// across 1.8 m, alternately along x and z, radius 3 cm, 16 cm long, 0.3 m up) above a ground
/// plane: many colliders, each near few particles — the broad phase's case. N² particles, 101
/// colliders. XPBD at the defaults.
pub fn capsules(n: usize) -> Result<Scene> {
    if n < 2 {
        bail!("capsules:{n}: needs at least 2×2 particles");
    }
    let mut b = ModelBuilder::new();
    b.set_memory_limit(crate::memory_limit());
    let mut g = ClothGrid::new("cloth", n, n, 2.0 / (n - 1) as f32);
    g.center = Vec3::new(0.0, 0.6, 0.0);
    g.material = ClothMaterial { thickness: 0.01, ..ClothMaterial::default() };
    b.add_cloth_grid(&g)?;
    use hooke::collision::{Collider, Shape};
    for i in 0..10 {
        for j in 0..10 {
            let c = Vec3::new(-0.9 + 0.2 * i as f32, 0.3, -0.9 + 0.2 * j as f32);
            let axis = if (i + j) % 2 == 0 { Vec3::X } else { Vec3::Z } * 0.08;
            let shape = Shape::Capsule { a: c - axis, b: c + axis, radius: 0.03 };
            b.add_collider(Collider::new(format!("capsule{i}_{j}"), shape).with_friction(0.5, 0.4))?;
        }
    }
    let ground = Shape::Plane { point: Vec3::ZERO, normal: Vec3::Y };
    b.add_collider(Collider::new("ground", ground).with_friction(0.6, 0.5))?;
    let model = Arc::new(b.finalize()?);
    Ok(preset(format!("capsules{n}"), model, SolverChoice::Position(XpbdSettings::default()), []))
}

/// A scene file, `default`, or a preset `demo:N`, `tear:N`, `cut:N`, `grid:N`, `sheet:N`, `warp-cloth:N`, `newton-hanging:WxH`,
/// `pile:N`, `stack:N`, `capsules:N`.
pub fn resolve(spec: &str) -> Result<Scene> {
    if spec == "default" {
        return default_scene();
    }
    if let Some(n) = spec.strip_prefix("tear:") {
        let n: usize = n.parse().with_context(|| format!("preset {spec:?}: N must be a whole number"))?;
        return tear(n);
    }
    if let Some(n) = spec.strip_prefix("cut:") {
        let n: usize = n.parse().with_context(|| format!("preset {spec:?}: N must be a whole number"))?;
        return cut(n);
    }
    if let Some(n) = spec.strip_prefix("demo:") {
        let n: usize = n.parse().with_context(|| format!("preset {spec:?}: N must be a whole number"))?;
        return demo(n);
    }
    if let Some(n) = spec.strip_prefix("grid:") {
        let n: usize = n.parse().with_context(|| format!("preset {spec:?}: N must be a whole number"))?;
        return grid(n);
    }
    if let Some(n) = spec.strip_prefix("sheet:") {
        let n: usize = n.parse().with_context(|| format!("preset {spec:?}: N must be a whole number"))?;
        return sheet(n);
    }
    if let Some(n) = spec.strip_prefix("warp-cloth:") {
        let n: usize = n.parse().with_context(|| format!("preset {spec:?}: N must be a whole number"))?;
        return warp_cloth(n);
    }
    if let Some(n) = spec.strip_prefix("stack:") {
        let n: usize = n.parse().with_context(|| format!("preset {spec:?}: N must be a whole number"))?;
        return stack(n);
    }
    if let Some(n) = spec.strip_prefix("capsules:") {
        let n: usize = n.parse().with_context(|| format!("preset {spec:?}: N must be a whole number"))?;
        return capsules(n);
    }
    if let Some(n) = spec.strip_prefix("pile:") {
        let n: usize = n.parse().with_context(|| format!("preset {spec:?}: N must be a whole number"))?;
        return pile(n);
    }
    if let Some(wh) = spec.strip_prefix("newton-hanging:") {
        let parse =
            |v: &str| v.parse::<usize>().with_context(|| format!("preset {spec:?}: expected newton-hanging:WxH"));
        let (w, h) = wh.split_once('x').with_context(|| format!("preset {spec:?}: expected newton-hanging:WxH"))?;
        return newton_hanging(parse(w)?, parse(h)?);
    }
    const PRESETS: &str = "default, demo:N, tear:N, cut:N, grid:N, sheet:N, warp-cloth:N, newton-hanging:WxH, pile:N, stack:N, capsules:N";
    if spec.contains(':') && !Path::new(spec).exists() {
        bail!("unknown preset {spec:?} (presets: {PRESETS})");
    }
    if std::fs::metadata(spec).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound) {
        bail!("{spec}: no such scene file, and not a preset (presets: {PRESETS})");
    }
    Ok(scene::load(Path::new(spec), crate::memory_limit())?)
}

#[cfg(test)]
mod tests {
    use hooke_io::scene::SolverChoice;

    /// `tear:N` runs the tables' fixed budget whatever the example iterates to, and its sheet
    /// at the size asked.
    #[test]
    fn the_tear_preset_keeps_a_fixed_budget() {
        let scene = super::tear(16).unwrap();
        let SolverChoice::Position(s) = scene.solver else { panic!("not XPBD") };
        assert_eq!((s.substeps, s.iterations, s.auto_iterations), (20, 8, None));
        assert_eq!(scene.model.particle_count(), 16 * 16);
    }

    /// `cut:N` cuts its N×N cloth after the second frame, at the fixed budget.
    #[test]
    fn the_cut_preset_cuts_after_the_second_frame() {
        let scene = super::cut(32).unwrap();
        let SolverChoice::Position(s) = scene.solver else { panic!("not XPBD") };
        assert_eq!((s.substeps, s.iterations, s.auto_iterations), (20, 8, None));
        assert_eq!(scene.model.particle_count(), 32 * 32);
        let times: Vec<f64> = scene.cuts.iter().map(|(t, _)| *t).collect();
        assert!(times.len() == 1 && times[0] > 1.0 / 60.0 && times[0] <= 2.0 / 60.0, "{times:?}");
    }
}
