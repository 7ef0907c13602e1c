//! Cost of a tear and of the tethers' search after it on an n×n sheet (1 m wide) pinned along
//! two opposite edges, cut by four short blades one after another (each across 20 % of the
//! sheet, where the particles stand stretched by 5 % about the blade's middle).
//!
//! For each cut: the tear (`tearing::tear`, best of three), the search that follows every old
//! path back (`TetherSearch::after_tear`), and the one the solvers make beside their rebuild,
//! told what the tear copied (`TetherCache::prepare`, search and tethers, in the memory of the
//! search the last update replaced). Both give the same tethers (asserted). Wall-clock times on
//! whatever machine runs it; nothing else is asserted.
//!
//! ```text
//! cargo run --release -p hooke --example after_tear [n]
//! ```

use glam::Vec3;
use hooke::model::{ClothGrid, Model, ModelBuilder};
use hooke::tearing::{self, Cut, Torn};
use hooke::tethers::{TetherCache, TornFrom};
use std::time::Instant;

/// A blade across the sheet at `at` of its extent along each axis; the torn model and the
/// best of three tears' times (ms).
fn blade(model: &Model, at: f32) -> (Torn, f64) {
    let x = model.particle_position();
    let lo = x.iter().fold(Vec3::MAX, |a, b| a.min(*b));
    let hi = x.iter().fold(Vec3::MIN, |a, b| a.max(*b));
    let (c, d) = (lo + (hi - lo) * at, hi - lo);
    // The sheet's plane: the two axes it spans.
    let (u, w, normal) = if d.z.abs() < 1e-6 { (Vec3::X, Vec3::Y, Vec3::Z) } else { (Vec3::X, Vec3::Z, Vec3::Y) };
    let (du, dw) = (d.dot(u), d.dot(w));
    let points = vec![c - u * 0.1 * du - w * 0.02 * dw, c + u * 0.1 * du + w * 0.01 * dw];
    let cut = tearing::cut(model, x, &Cut { points, direction: normal });
    let now: Vec<Vec3> = x.iter().map(|p| (*p - c) * 1.05 + c).collect();
    let mut best = f64::MAX;
    for _ in 0..3 {
        let t = Instant::now();
        let torn = tearing::tear(model, &now, &cut).unwrap().unwrap();
        best = best.min(t.elapsed().as_secs_f64() * 1e3);
        drop(torn);
    }
    (tearing::tear(model, &now, &cut).unwrap().unwrap(), best)
}

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(512);
    let mut b = ModelBuilder::new();
    b.add_cloth_grid(&ClothGrid::new("sheet", n, n, 1.0 / (n - 1) as f32)).unwrap();
    let mut model = b.finalize().unwrap();
    let pins: Vec<u32> = (0..n as u32).chain((n * (n - 1)) as u32..(n * n) as u32).collect();
    let mut cache = TetherCache::default();
    cache.update(&model, &pins).unwrap();
    println!("{n}×{n} sheet, {} particles, pinned along two edges", model.particle_count());
    for k in 0..4 {
        let (torn, tear_ms) = blade(&model, 0.3 + 0.1 * k as f32);
        let m = &torn.model;
        let old = cache.search().unwrap().clone();
        let pinned: Vec<u32> =
            (0..m.particle_count() as u32).filter(|&p| old.pins().contains(&torn.parent[p as usize])).collect();
        let t = Instant::now();
        let followed = old.after_tear(m, &torn.parent, &pinned);
        let follow_ms = t.elapsed().as_secs_f64() * 1e3;
        let t = Instant::now();
        let prepared = cache.prepare(m, &torn.parent, Some(TornFrom { old: &model, copied: &torn.copied.distance }));
        let prepare_ms = t.elapsed().as_secs_f64() * 1e3;
        cache.torn_prepared(&torn.parent, prepared);
        let tethers = cache.update(m, &pinned).unwrap();
        assert_eq!(tethers, followed.tethers(m).unwrap(), "the same tethers");
        println!(
            "cut {k}: {} constraints broken, {} particles split; tear {tear_ms:.1} ms; search following every path {follow_ms:.1} ms; \
             search where the tear changed something, with its tethers, {prepare_ms:.1} ms ({} particles searched again)",
            torn.broken,
            torn.split,
            followed.searched()
        );
        model = torn.model;
    }
}
