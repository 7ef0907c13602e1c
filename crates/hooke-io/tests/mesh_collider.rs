//! Mesh colliders from real files (issue #10): the bunny of PositionBasedDynamics, where it is
//! present (`HOOKE_MESHES`, else `../shared/data/meshes` beside the workspace); each test
//! prints why it skips where it is not.

use hooke::collision::{Collider, Shape};
use hooke::collision::{ColliderMesh, GridResolution, SdfGrid, SignMethod};
use hooke::glam::Vec3;
use hooke::{ClothGrid, Control, Model, ModelBuilder, Solver, XpbdSettings, XpbdSolver};
use std::path::PathBuf;
use std::sync::Arc;

#[path = "../../hooke-gpu/tests/common/mod.rs"]
mod gpu_common;

/// The folder of sample meshes, if present.
fn meshes() -> Option<PathBuf> {
    let dir = std::env::var_os("HOOKE_MESHES")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/meshes"));
    dir.join("bunny_10k.obj").is_file().then_some(dir)
}

fn bunny() -> Option<(Vec<Vec3>, Vec<[u32; 3]>)> {
    let Some(dir) = meshes() else {
        println!("skipped: bunny_10k.obj not found (set HOOKE_MESHES to the folder that holds it)");
        return None;
    };
    let obj = hooke_io::mesh::load_obj(&dir.join("bunny_10k.obj")).unwrap();
    let tol = hooke_io::mesh::default_weld_tolerance(&obj.positions);
    Some(hooke_io::mesh::weld_positions(&obj.positions, &obj.triangles, tol))
}

/// On the bunny, the pseudo-normals' sign agrees with the winding number's at every node of
/// a 64³ grid (two independent methods).
#[test]
fn bunny_pseudo_normals_agree_with_the_winding_number() {
    let Some((p, t)) = bunny() else { return };
    let (mesh, warnings) = ColliderMesh::new(&p, &t, SignMethod::PseudoNormals).unwrap();
    println!("warnings: {warnings:?}, volume {:.4} m³", mesh.volume());
    let start = std::time::Instant::now();
    let grid = SdfGrid::build(&mesh, GridResolution::Cells(64), None).unwrap();
    println!("64³ build {:.3} s, dims {:?}", start.elapsed().as_secs_f64(), grid.dims());
    let [nx, ny, nz] = grid.dims();
    let mut disagree = 0;
    for k in 0..nz {
        for j in 0..ny {
            for i in 0..nx {
                let x = grid.origin() + grid.cell() * Vec3::new(i as f32, j as f32, k as f32);
                let v = grid.values()[(i + nx * (j + ny * k)) as usize];
                let w = mesh.winding_number(x.as_dvec3());
                if v.abs() > 1e-4 && (v < 0.0) != (w > 0.5) {
                    disagree += 1;
                    if disagree < 5 {
                        println!("node ({i},{j},{k}) {x}: φ {v}, w {w}");
                    }
                }
            }
        }
    }
    assert_eq!(disagree, 0);
}

/// A 50² cloth of 2 cm thickness dropped onto the bunny (a 128³ grid) by the solver `make`
/// makes, for 2 s at 20 substeps × 2 iterations; `None` where the bunny is absent. Returns
/// the particles touching it and the deepest a particle lies inside it, beyond its radius (m),
/// measured by the exact distance to the mesh, not by the grid.
fn bunny_drop(make: Make) -> Option<(usize, f64)> {
    let (p, t) = bunny()?;
    let (mesh, _) = ColliderMesh::new(&p, &t, SignMethod::PseudoNormals).unwrap();
    let grid = Arc::new(SdfGrid::build(&mesh, GridResolution::Cells(128), None).unwrap());
    // 1.47 m across, over the bunny's middle (it slides off a smaller one).
    let mut g = ClothGrid::new("cloth", 50, 50, 0.03);
    g.center = Vec3::new(-0.07, 1.15, 0.0);
    g.material.thickness = THICKNESS;
    let mut b = ModelBuilder::new();
    b.add_cloth_grid(&g).unwrap();
    b.add_collider(Collider::new("bunny", Shape::Sdf(grid)).with_friction(0.5, 0.4)).unwrap();
    b.add_collider(Collider::new("ground", Shape::Plane { point: Vec3::ZERO, normal: Vec3::Y })).unwrap();
    let model = Arc::new(b.finalize().unwrap());
    let mut s = make(&model, XpbdSettings { substeps: 20, iterations: 2, ..XpbdSettings::default() });
    for _ in 0..120 {
        s.step(&Control::new(), 1.0 / 60.0).unwrap();
    }
    let mut x = Vec::new();
    s.read_positions(&mut x);
    let r = 0.5 * THICKNESS;
    let (mut deepest, mut touching) = (0.0f64, 0);
    for p in &x {
        let (phi, _) = mesh.signed_distance(p.as_dvec3(), None);
        deepest = deepest.max(r as f64 - phi);
        touching += (phi < 1.5 * r as f64) as usize;
    }
    let grid_depth = hooke::diagnostics::max_penetration(&model, &x, &[]);
    println!("bunny: {touching} particles touching, deepest {deepest:.2e} m exact, {grid_depth:.2e} m by the grid");
    Some((touching, deepest))
}

const THICKNESS: f32 = 0.02;

/// Makes the solver of a scene from its model and XPBD settings.
type Make<'a> = &'a dyn Fn(&Arc<Model>, XpbdSettings) -> Box<dyn Solver>;

/// A 50² cloth dropped onto the bunny ([`bunny_drop`]) settles with no particle deeper than
/// 10 % of its thickness, on the CPU.
#[test]
fn a_cloth_dropped_on_the_bunny_does_not_sink_into_it() {
    let Some((touching, deepest)) = bunny_drop(&|model, s| Box::new(XpbdSolver::new(model.clone(), s).unwrap())) else {
        return;
    };
    assert!(touching > 100, "the cloth missed the bunny ({touching} touching)");
    assert!(deepest < 0.1 * THICKNESS as f64, "{deepest} m deep");
}

/// The same on the GPU (skipped without an adapter unless `HOOKE_REQUIRE_GPU=1`).
#[test]
fn a_cloth_dropped_on_the_bunny_does_not_sink_into_it_on_the_gpu() {
    if meshes().is_none() {
        println!("skipped: bunny_10k.obj not found (set HOOKE_MESHES to the folder that holds it)");
        return;
    }
    let Some(ctx) = gpu_common::gpu() else { return };
    let make = |model: &Arc<Model>, s| -> Box<dyn Solver> {
        Box::new(hooke_gpu::GpuXpbdSolver::new(ctx.clone(), model.clone(), s).unwrap())
    };
    let Some((touching, deepest)) = bunny_drop(&make) else { return };
    assert!(touching > 100, "the cloth missed the bunny ({touching} touching)");
    assert!(deepest < 0.1 * THICKNESS as f64, "{deepest} m deep");
}
