//! Built-in scenes for `hooke run` and `hooke bench`.

use anyhow::{Context, Result, bail};
use glam::Vec3;
use hooke::{ClothGrid, ModelBuilder, Pin, XpbdSettings};
use hooke_io::scene::{self, Scene, ScheduledPin};
use std::path::Path;
use std::sync::Arc;

/// The built-in default scene (`scenes/cloth_on_sphere.toml`).
pub fn default_scene() -> Result<Scene> {
    Ok(scene::parse(scene::DEFAULT_SCENE, "<built-in default scene>", "cloth_on_sphere", None, crate::memory_limit())?)
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
    let pins = (0..n)
        .map(|c| ScheduledPin { pin: Pin { particle: body.grid_index(0, c).unwrap(), target: None }, release_at: None })
        .collect();
    Ok(Scene {
        name: format!("grid{n}"),
        model,
        settings: XpbdSettings::default(),
        fps: 60.0,
        frames: 240,
        wind: Vec3::ZERO,
        pins,
        output: Default::default(),
    })
}

/// A scene file, `default`, or a preset `grid:N`.
pub fn resolve(spec: &str) -> Result<Scene> {
    if spec == "default" {
        return default_scene();
    }
    if let Some(n) = spec.strip_prefix("grid:") {
        let n: usize = n.parse().with_context(|| format!("preset {spec:?}: N must be a whole number"))?;
        return grid(n);
    }
    if spec.contains(':') && !Path::new(spec).exists() {
        bail!("unknown preset {spec:?} (presets: default, grid:N)");
    }
    Ok(scene::load(Path::new(spec), crate::memory_limit())?)
}
