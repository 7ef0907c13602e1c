//! Mesh colliders through signed distance grids (issue #10, item 3): the exact distance and
//! its sign from pseudo-normals or the winding number, the sampled grid's accuracy, and the
//! load-time repairs.

mod common;

use common::{cube_mesh as cube, icosphere};
use hooke::collision::{ColliderMesh, GridResolution, MeshColliderError, SdfGrid, SignMethod};
use hooke::glam::{DVec3, Vec3};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f32 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 40) as f32 / (1u64 << 24) as f32
    }
    fn in_box(&mut self, lo: Vec3, hi: Vec3) -> Vec3 {
        lo + (hi - lo) * Vec3::new(self.next(), self.next(), self.next())
    }
}

/// Checks every node of `grid` against the sphere of radius `r` about `c`: the sign right (away
/// from 1 mm of the surface) and, with `bounds`, |φ| between the distance and the distance over
/// 1 + FAR_SLACK (within 10⁻⁴ m for the chords' sag and f32 rounding). Returns the largest
/// error of the nodes within two cells of the surface (m).
fn check_sphere_nodes(grid: &SdfGrid, c: Vec3, r: f32, bounds: bool) -> f32 {
    let h = grid.cell();
    let [nx, ny, nz] = grid.dims();
    let mut worst = 0.0f32;
    for k in 0..nz {
        for j in 0..ny {
            for i in 0..nx {
                let x = grid.origin() + h * Vec3::new(i as f32, j as f32, k as f32);
                let exact = (x - c).length() - r;
                let v = grid.values()[(i + nx * (j + ny * k)) as usize];
                if exact.abs() > 1e-3 {
                    assert_eq!(v < 0.0, exact < 0.0, "wrong sign at node ({i}, {j}, {k}): {v} vs {exact}");
                }
                if exact.abs() < 2.0 * h {
                    worst = worst.max((v - exact).abs());
                }
                if bounds {
                    // Beyond the exact band only a lower bound within the slack is kept.
                    assert!(v.abs() <= exact.abs() + 1e-4, "node ({i}, {j}, {k}): |{v}| above the distance {exact}");
                    let slack = hooke::collision::sdf::FAR_SLACK as f32;
                    assert!(
                        v.abs() >= exact.abs() / (1.0 + slack) - 1e-4,
                        "node ({i}, {j}, {k}): |{v}| far below {exact}"
                    );
                }
            }
        }
    }
    worst
}

/// The sampled grid of a fine triangulated sphere is within 1 % of a cell of the analytic
/// distance near the surface, and its sign is right at every node.
#[test]
fn sphere_grid_is_within_one_percent_of_a_cell_and_signed_right_everywhere() {
    let (r, c) = (0.5f32, Vec3::new(0.1, 0.7, -0.2));
    // 81 920 triangles: the chords sag ≤ 4·10⁻⁵ m below the sphere.
    let (p, t) = icosphere(r, c, 6);
    let (mesh, warnings) = ColliderMesh::new(&p, &t, SignMethod::PseudoNormals).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    let grid = SdfGrid::build(&mesh, GridResolution::Cells(64), None).unwrap();
    let h = grid.cell();
    let worst_node = check_sphere_nodes(&grid, c, r, true);
    // Trilinear samples anywhere in the band |φ| < 2 cells.
    let mut rng = Rng(3);
    let mut worst = 0.0f32;
    let mut normal = 0.0f32;
    let mut tested = 0;
    while tested < 20_000 {
        let x = rng.in_box(c - Vec3::splat(r + 2.0 * h), c + Vec3::splat(r + 2.0 * h));
        let exact = (x - c).length() - r;
        if exact.abs() >= 2.0 * h {
            continue;
        }
        tested += 1;
        let (phi, n) = grid.sample(x);
        worst = worst.max((phi - exact).abs());
        normal = normal.max((n - (x - c).normalize()).length());
    }
    println!("cell {h} m: node error {worst_node:.2e} m, sample error {worst:.2e} m, normal error {normal:.2e}");
    assert!(worst_node < 0.01 * h, "node error {worst_node} ≥ 1 % of the cell {h}");
    // Between nodes trilinear interpolation adds at most (h²/8)·Σ|∂²φ/∂xᵢ²| = h²/(4R) for a
    // sphere's distance |x − c| − R (nearest-node sampling would err by up to h/2).
    let bound = worst_node + h * h / (4.0 * r);
    assert!(worst < bound, "sample error {worst} above the trilinear bound {bound}");
    // The normal, the gradient of the interpolant, is right to first order in h/R.
    assert!(normal < h / r, "normal off by {normal}");
}

/// A tetrahedron: the exact signed distance has the right sign at 10⁴ random points (inside
/// by its four half-spaces), and so has every node of its grid. (Between nodes a grid cannot
/// hold a wedge thinner than a cell, such as the sharp tips.)
#[test]
fn tetrahedron_sign_is_right_at_ten_thousand_points() {
    let corners =
        [Vec3::new(0.0, 0.0, 0.0), Vec3::new(1.0, 0.1, 0.0), Vec3::new(0.2, 0.9, 0.1), Vec3::new(0.3, 0.2, 0.8)];
    let t = vec![[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]];
    let (mesh, _) = ColliderMesh::new(&corners, &t, SignMethod::PseudoNormals).unwrap();
    let grid = SdfGrid::build(&mesh, GridResolution::Cells(40), None).unwrap();
    let planes: Vec<(Vec3, Vec3)> = t
        .iter()
        .map(|f| {
            let [a, b, c] = f.map(|v| corners[v as usize]);
            (a, (b - a).cross(c - a).normalize())
        })
        .collect();
    let inside = |x: Vec3| planes.iter().all(|&(a, n)| (x - a).dot(n) < 0.0);
    let mut rng = Rng(11);
    let mut n_in = 0;
    for _ in 0..10_000 {
        let x = rng.in_box(Vec3::splat(-0.1), Vec3::splat(1.1));
        let (phi, _) = mesh.signed_distance(x.as_dvec3(), None);
        assert_eq!(phi < 0.0, inside(x), "exact sign wrong at {x}: {phi}");
        n_in += inside(x) as usize;
    }
    assert!(n_in > 500, "only {n_in} points inside");
    // And at every node of the grid.
    let [nx, ny, nz] = grid.dims();
    for k in 0..nz {
        for j in 0..ny {
            for i in 0..nx {
                let x = grid.origin() + grid.cell() * Vec3::new(i as f32, j as f32, k as f32);
                let v = grid.values()[(i + nx * (j + ny * k)) as usize];
                if v.abs() > 1e-6 {
                    assert_eq!(v < 0.0, inside(x), "node ({i}, {j}, {k}) at {x}: {v}");
                }
            }
        }
    }
}

/// Near a cube's edges and corners — where a face normal alone gets the sign wrong — the
/// pseudo-normals get it right, just inside and just outside.
#[test]
fn cube_edges_and_corners_are_signed_right() {
    let (p, t) = cube(Vec3::ZERO, Vec3::ONE);
    let (mesh, _) = ColliderMesh::new(&p, &t, SignMethod::PseudoNormals).unwrap();
    let mut checked = 0;
    for e in [1e-4f32, 1e-2] {
        // Every corner and the midpoint of every edge, pushed inwards and outwards along the
        // directions that make the nearest point that vertex or edge.
        for i in 0..3 {
            for j in 0..3 {
                for k in 0..3 {
                    let f = Vec3::new(i as f32, j as f32, k as f32) * 0.5;
                    let on_edge = [i, j, k].iter().filter(|&&v| v != 1).count() >= 2;
                    if !on_edge {
                        continue;
                    }
                    let outward = Vec3::new(
                        [-1.0, 0.0, 1.0][i as usize],
                        [-1.0, 0.0, 1.0][j as usize],
                        [-1.0, 0.0, 1.0][k as usize],
                    );
                    let (out, inn) = (f + outward * e, f - outward * e);
                    let (phi_out, _) = mesh.signed_distance(out.as_dvec3(), None);
                    let (phi_in, _) = mesh.signed_distance(inn.as_dvec3(), None);
                    assert!(phi_out > 0.0, "{out} reads inside: {phi_out}");
                    assert!(phi_in < 0.0, "{inn} reads outside: {phi_in}");
                    // Outside, the distance is to the edge or corner itself.
                    assert!((phi_out - (out - f).length() as f64).abs() < 1e-6);
                    checked += 1;
                }
            }
        }
    }
    assert_eq!(checked, 2 * 20);
    // The grid's samples a tenth of a cell off the corners.
    let grid = SdfGrid::build(&mesh, GridResolution::Cells(20), None).unwrap();
    let d = 0.1 * grid.cell();
    for corner in [Vec3::ZERO, Vec3::ONE, Vec3::new(1.0, 0.0, 1.0)] {
        let outward = (corner - Vec3::splat(0.5)).signum();
        assert!(grid.sample(corner + outward * d).0 > 0.0);
        assert!(grid.sample(corner - outward * d).0 < 0.0);
    }
}

/// A sphere wound inwards is detected and turned (with a warning), then signed like the
/// right one; a mesh with some triangles wound against their neighbours is repaired too.
#[test]
fn inverted_and_mixed_winding_is_detected_and_repaired() {
    let (p, t) = icosphere(1.0, Vec3::ZERO, 2);
    let inverted: Vec<[u32; 3]> = t.iter().map(|f| [f[0], f[2], f[1]]).collect();
    let (mesh, warnings) = ColliderMesh::new(&p, &inverted, SignMethod::PseudoNormals).unwrap();
    assert!(warnings.iter().any(|w| w.contains("wound inwards")), "{warnings:?}");
    assert!(mesh.volume() > 3.9 && mesh.volume() < 4.19, "volume {}", mesh.volume());
    assert!(mesh.signed_distance(DVec3::ZERO, None).0 < -0.9);
    assert!(mesh.signed_distance(DVec3::new(0.0, 2.0, 0.0), None).0 > 0.9);
    let mixed: Vec<[u32; 3]> =
        t.iter().enumerate().map(|(k, f)| if k % 3 == 0 { [f[0], f[2], f[1]] } else { *f }).collect();
    let (mesh, warnings) = ColliderMesh::new(&p, &mixed, SignMethod::PseudoNormals).unwrap();
    assert!(warnings.iter().any(|w| w.contains("against their neighbours")), "{warnings:?}");
    let mut rng = Rng(5);
    for _ in 0..2000 {
        let x = rng.in_box(Vec3::splat(-1.5), Vec3::splat(1.5));
        let (phi, _) = mesh.signed_distance(x.as_dvec3(), None);
        // The icosphere lies between radius 0.95 and 1.
        if x.length() < 0.94 || x.length() > 1.01 {
            assert_eq!(phi < 0.0, x.length() < 0.94, "{x}: {phi}");
        }
    }
}

/// An open mesh: refused with pseudo-normals, signed by the winding number on request (a
/// sphere with a hole is still a sphere away from the hole).
#[test]
fn open_meshes_need_the_winding_number() {
    let (p, mut t) = icosphere(1.0, Vec3::ZERO, 3);
    t.retain(|f| f.iter().all(|&v| p[v as usize].y < 0.97));
    match ColliderMesh::new(&p, &t, SignMethod::PseudoNormals) {
        Err(MeshColliderError::Open { open, .. }) => assert!(open > 0),
        other => panic!("expected an open-mesh error, got {other:?}"),
    }
    let (mesh, _) = ColliderMesh::new(&p, &t, SignMethod::WindingNumber).unwrap();
    let mut rng = Rng(9);
    for _ in 0..2000 {
        let x = rng.in_box(Vec3::splat(-1.5), Vec3::splat(1.5));
        if x.y > 0.8 || (x.length() - 1.0).abs() < 0.03 {
            continue;
        }
        let (phi, _) = mesh.signed_distance(x.as_dvec3(), None);
        assert_eq!(phi < 0.0, x.length() < 1.0, "{x}: {phi}");
    }
}

/// Bad meshes are refused with a reason: no volume, not finite, indices out of range.
#[test]
fn degenerate_meshes_are_refused() {
    let flat = [Vec3::ZERO, Vec3::X, Vec3::Y, Vec3::new(0.3, 0.3, 0.0)];
    let t = [[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]];
    assert!(matches!(
        ColliderMesh::new(&flat, &t, SignMethod::PseudoNormals),
        Err(MeshColliderError::ZeroVolume { .. })
    ));
    let nan = [Vec3::ZERO, Vec3::X, Vec3::Y, Vec3::new(0.0, 0.0, f32::NAN)];
    assert!(matches!(ColliderMesh::new(&nan, &t, SignMethod::PseudoNormals), Err(MeshColliderError::NonFinite(3))));
    assert!(matches!(
        ColliderMesh::new(&flat[..3], &t, SignMethod::PseudoNormals),
        Err(MeshColliderError::IndexOutOfRange { vertex: 3, .. })
    ));
    assert!(matches!(ColliderMesh::new(&flat, &[], SignMethod::PseudoNormals), Err(MeshColliderError::Empty(_))));
}

/// A grid over a box of the user's (`SdfGrid::build_within`) instead of the mesh's bounds: over
/// the upper half of a sphere it starts at the box's lower corner, spans the box with 32 cells
/// along its longest side, holds the exact distance near the surface (within 1 % of a cell at
/// the nodes) and the right sign at every node; the box cuts the sphere, which its boundary's
/// deepest node says (and a point just below the box, inside the sphere, still samples
/// inside). A box that misses the mesh, one within it, inverted corners, NaN and a box whose
/// cells are larger than the mesh are refused.
#[test]
fn a_grid_over_the_users_box_samples_the_mesh_within_it() {
    let (r, c) = (0.5f32, Vec3::new(0.1, 0.7, -0.2));
    let (p, t) = icosphere(r, c, 6);
    let (mesh, _) = ColliderMesh::new(&p, &t, SignMethod::PseudoNormals).unwrap();
    let (lo, hi) = (c + Vec3::new(-0.6, 0.1, -0.6), c + Vec3::new(0.6, 0.6, 0.6));
    let grid = SdfGrid::build_within(&mesh, GridResolution::Cells(32), lo, hi).unwrap();
    let h = grid.cell();
    assert_eq!(grid.origin(), lo);
    assert!((h - 1.2 / 32.0).abs() < 1e-6, "cell {h}");
    let [nx, ny, nz] = grid.dims();
    let far = grid.origin() + h * Vec3::new(nx as f32 - 1.0, ny as f32 - 1.0, nz as f32 - 1.0);
    assert!(far.cmpge(hi - Vec3::splat(1e-5)).all() && far.cmple(hi + Vec3::splat(h)).all(), "{far} for {hi}");
    let full = SdfGrid::build(&mesh, GridResolution::Cells(32), None).unwrap();
    assert!(ny < full.dims()[1], "the box covers less than the whole sphere: {ny} rows against {}", full.dims()[1]);
    let worst = check_sphere_nodes(&grid, c, r, false);
    println!("grid over the upper half: dims {:?}, cell {h:.4} m, worst node error {worst:.2e} m", grid.dims());
    assert!(worst < 0.01 * h, "{worst} m against 1 % of a cell, {} m", 0.01 * h);
    // Below the cut, inside the sphere: φ < 0 still.
    let (phi, _) = grid.sample(c + Vec3::new(0.0, 0.05, 0.0));
    assert!(phi < 0.0, "{phi}");
    assert!(grid.deepest_boundary_node() < -0.3, "{}", grid.deepest_boundary_node());
    assert!(full.deepest_boundary_node() > 0.0, "{}", full.deepest_boundary_node());
    let within = (c - Vec3::splat(0.2), c + Vec3::splat(0.2));
    for (a, b) in [(hi, lo), (lo, Vec3::new(f32::NAN, 1.0, 1.0)), (c + Vec3::splat(2.0), c + Vec3::splat(3.0)), within]
    {
        let e = SdfGrid::build_within(&mesh, GridResolution::Cells(8), a, b).unwrap_err();
        println!("{e}");
        assert!(matches!(e, MeshColliderError::Settings(_)), "{e}");
    }
    // So is a box whose cells are larger than the mesh (it was sampled, with a wrong sign at
    // its far boundary).
    let e = SdfGrid::build_within(&mesh, GridResolution::Cells(64), Vec3::splat(-1e30), Vec3::splat(1e30)).unwrap_err();
    assert!(e.to_string().contains("larger than the mesh"), "{e}");
    // And a cell size of more than half the mesh (a helper's `cell_size = 1e9` over a 0.6 m
    // sphere was sampled, its one inner node put at the centre by rounding, and the cloth was
    // thrown off the sphere); half of it is the coarsest taken, as `Cells(2)` is.
    let longest = (mesh.bounds().1 - mesh.bounds().0).max_element();
    for h in [1e9, 0.6 * longest as f32] {
        let e = SdfGrid::build(&mesh, GridResolution::CellSize(h), None).unwrap_err();
        assert!(e.to_string().contains("more than half the mesh's longest side"), "{h}: {e}");
    }
    SdfGrid::build(&mesh, GridResolution::CellSize(0.49 * longest as f32), None).unwrap();
}
