use glam::Vec3;
use hooke::model::{ClothGrid, ModelBuilder};
use hooke::tearing::{self, Cut};
use std::time::Instant;
fn main() {
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(512);
    let reps: usize = std::env::args().nth(2).and_then(|a| a.parse().ok()).unwrap_or(20);
    let mut b = ModelBuilder::new();
    b.add_cloth_grid(&ClothGrid::new("sheet", n, n, 1.0 / (n - 1) as f32)).unwrap();
    let model = b.finalize().unwrap();
    let x = model.particle_position();
    let lo = x.iter().fold(Vec3::MAX, |a, b| a.min(*b));
    let hi = x.iter().fold(Vec3::MIN, |a, b| a.max(*b));
    let (c, d) = (lo + (hi - lo) * 0.4, hi - lo);
    let (u, w, normal) = if d.z.abs() < 1e-6 { (Vec3::X, Vec3::Y, Vec3::Z) } else { (Vec3::X, Vec3::Z, Vec3::Y) };
    let (du, dw) = (d.dot(u), d.dot(w));
    let points = vec![c - u * 0.1 * du - w * 0.02 * dw, c + u * 0.1 * du + w * 0.01 * dw];
    let cut = tearing::cut(&model, x, &Cut { points, direction: normal });
    let now: Vec<Vec3> = x.iter().map(|p| (*p - c) * 1.05 + c).collect();
    let mut times = vec![];
    for _ in 0..reps {
        let t = Instant::now();
        let torn = tearing::tear(&model, &now, &cut).unwrap().unwrap();
        times.push(t.elapsed().as_secs_f64() * 1e3);
        drop(torn);
    }
    times.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!("tear: min {:.1} median {:.1} ms", times[0], times[times.len() / 2]);
}
