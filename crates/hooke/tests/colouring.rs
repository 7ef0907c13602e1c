//! Graph colouring (article §5.2): conflict-free on grids, ropes and an irregular mesh, for
//! every constraint set; 12 distance colours on a grid cloth with bend springs, 8 without, 2
//! on a stretch-only rope, 3 for a rope's joints.

use glam::Vec3;
use hooke::model::colouring;
use hooke::{Bending, ClothGrid, ClothMesh, ConstraintSet, ModelBuilder, ParticleConstraint, Rope};

fn set_conflict_free<T: ParticleConstraint<N>, const N: usize>(n: usize, set: &ConstraintSet<T>) {
    let tuples: Vec<[u32; N]> = set.constraints().iter().map(|c| c.particles()).collect();
    let mut colour = vec![0u32; tuples.len()];
    for (k, r) in set.colour_ranges().iter().enumerate() {
        colour[r.start as usize..r.end as usize].iter_mut().for_each(|c| *c = k as u32);
    }
    colouring::validate(n, &tuples, &colour).unwrap();
}

fn conflict_free(model: &hooke::Model) {
    let n = model.particle_count();
    set_conflict_free(n, model.distance());
    set_conflict_free(n, model.dihedral());
    set_conflict_free(n, model.rope_bending());
}

#[test]
fn grid_cloth_takes_twelve_colours_rope_two() {
    let mut b = ModelBuilder::new();
    let mut grid = ClothGrid::new("cloth", 20, 17, 0.05);
    grid.bending = Bending::Springs;
    b.add_cloth_grid(&grid).unwrap();
    let m = b.finalize().unwrap();
    conflict_free(&m);
    assert_eq!(m.distance().colour_count(), 12);
    assert!(m.dihedral().is_empty());

    // Angle bending: 8 distance colours, and the hinges (every interior edge) coloured apart;
    // an interior particle lies on 12 hinges (6 edges, 6 opposite ones), so 12 is the least.
    let mut b = ModelBuilder::new();
    b.add_cloth_grid(&ClothGrid::new("cloth", 20, 17, 0.05)).unwrap();
    let m = b.finalize().unwrap();
    conflict_free(&m);
    assert_eq!(m.distance().colour_count(), 8);
    let (r, c) = (20, 17);
    assert_eq!(m.dihedral().len(), r * (c - 1) + (r - 1) * c + (r - 1) * (c - 1) - 2 * (r - 1) - 2 * (c - 1));
    assert!((12..=16).contains(&m.dihedral().colour_count()), "{}", m.dihedral().colour_count());

    let mut b = ModelBuilder::new();
    let mut rope = Rope::straight("rope", Vec3::ZERO, Vec3::X, 31);
    rope.bending = Bending::None;
    b.add_rope(&rope).unwrap();
    let m = b.finalize().unwrap();
    conflict_free(&m);
    assert_eq!(m.distance().colour_count(), 2);

    let mut b = ModelBuilder::new();
    let mut rope = Rope::straight("rope", Vec3::ZERO, Vec3::X, 31);
    rope.bending = Bending::Springs;
    b.add_rope(&rope).unwrap();
    let m = b.finalize().unwrap();
    conflict_free(&m);
    assert_eq!(m.distance().colour_count(), 4);

    let mut b = ModelBuilder::new();
    b.add_rope(&Rope::straight("rope", Vec3::ZERO, Vec3::X, 31)).unwrap();
    let m = b.finalize().unwrap();
    conflict_free(&m);
    assert_eq!((m.distance().colour_count(), m.rope_bending().colour_count(), m.rope_bending().len()), (2, 3, 29));
}

/// A jittered grid triangulated with random diagonal directions and holes punched in it.
#[test]
fn irregular_mesh_colouring_is_conflict_free_and_balanced() {
    let mut seed = 7u32;
    let mut rnd = move || {
        seed = seed.wrapping_mul(1664525).wrapping_add(1013904223);
        (seed >> 8) as f32 / (1u32 << 24) as f32
    };
    let n = 30;
    let positions: Vec<Vec3> =
        (0..n * n).map(|k| Vec3::new((k % n) as f32 + 0.3 * rnd(), 0.0, (k / n) as f32 + 0.3 * rnd()) * 0.02).collect();
    let mut triangles = Vec::new();
    for r in 0..n - 1 {
        for c in 0..n - 1 {
            if rnd() < 0.05 {
                continue; // a hole
            }
            let (a, b, cc, d) =
                ((r * n + c) as u32, (r * n + c + 1) as u32, ((r + 1) * n + c) as u32, ((r + 1) * n + c + 1) as u32);
            if rnd() < 0.5 {
                triangles.extend([[a, cc, b], [b, cc, d]]);
            } else {
                triangles.extend([[a, cc, d], [a, d, b]]);
            }
        }
    }
    // Drop vertices no triangle uses (holes at the border can orphan a corner).
    let mut used = vec![false; positions.len()];
    triangles.iter().flatten().for_each(|&v| used[v as usize] = true);
    let mut map = vec![u32::MAX; positions.len()];
    let mut kept = Vec::new();
    for (k, p) in positions.iter().enumerate() {
        if used[k] {
            map[k] = kept.len() as u32;
            kept.push(*p);
        }
    }
    let triangles: Vec<[u32; 3]> = triangles.iter().map(|t| t.map(|v| map[v as usize])).collect();
    let mut b = ModelBuilder::new();
    b.add_cloth_mesh(&ClothMesh::new("mesh", kept, triangles)).unwrap();
    let m = b.finalize().unwrap();
    conflict_free(&m);
    // Greedy first-fit needs at most 2Δ − 1 colours (Δ = largest particle degree).
    let mut degree = vec![0usize; m.particle_count()];
    for c in m.distance().constraints() {
        degree[c.i as usize] += 1;
        degree[c.j as usize] += 1;
    }
    let max_degree = *degree.iter().max().unwrap();
    let colours = m.distance().colour_count();
    println!(
        "irregular mesh: {} constraints, {colours} colours, max degree {max_degree}",
        m.distance().constraints().len()
    );
    assert!(colours >= max_degree && colours < 2 * max_degree);
    // Balanced: no colour more than twice the mean size.
    let mean = m.distance().constraints().len() as f64 / colours as f64;
    let largest = m.distance().colour_ranges().iter().map(|r| r.len()).max().unwrap() as f64;
    assert!(largest < 2.0 * mean, "largest colour {largest} vs mean {mean}");
}
