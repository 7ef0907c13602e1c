//! `hooke sdf MESH`: build a mesh collider's signed distance grid and cache it beside the
//! mesh, reporting the build time and what was repaired — what a scene's `shape = "mesh"`
//! collider does at load, done ahead of time (and the SDF benchmark of docs/BENCHMARKS.md).

use anyhow::{Result, bail};
use hooke::collision::{GridResolution, SignMethod};
use hooke_io::mesh_collider::{MeshColliderSpec, load_mesh_collider};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct SdfArgs {
    /// The mesh (OBJ).
    mesh: PathBuf,
    /// Cells along the mesh's longest side (with --bounds, along the box's; default 64).
    #[arg(long, conflicts_with = "cell_size", allow_negative_numbers = true)]
    resolution: Option<u32>,
    /// Cell size (m), instead of --resolution.
    #[arg(long, allow_negative_numbers = true)]
    cell_size: Option<f32>,
    /// Free space around the mesh (m; default 3 cells).
    #[arg(long, allow_negative_numbers = true)]
    margin: Option<f32>,
    /// The box the grid covers instead of the mesh's bounds plus the margin: its lower and
    /// upper corners, x0,y0,z0,x1,y1,z1 (m, in the scaled mesh's frame).
    #[arg(long, allow_hyphen_values = true, conflicts_with = "margin")]
    bounds: Option<String>,
    /// Uniform scale from file units to metres.
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    scale: f32,
    /// How inside is told from outside: pseudo-normals (closed meshes) or winding-number.
    #[arg(long, default_value = "pseudo-normals")]
    sign: String,
    /// Build even if a cache exists (and replace it).
    #[arg(long)]
    rebuild: bool,
    /// Worker threads (default: all cores).
    #[arg(long, allow_negative_numbers = true)]
    threads: Option<usize>,
}

pub fn sdf(args: SdfArgs) -> Result<()> {
    let threads = crate::set_threads(args.threads)?;
    let sign = match args.sign.as_str() {
        "pseudo-normals" => SignMethod::PseudoNormals,
        "winding-number" => SignMethod::WindingNumber,
        other => bail!("--sign: unknown method {other:?} (expected pseudo-normals or winding-number)"),
    };
    let spec = MeshColliderSpec {
        path: args.mesh.clone(),
        scale: args.scale,
        rotation: hooke::glam::Quat::IDENTITY,
        translation: hooke::glam::Vec3::ZERO,
        resolution: match args.cell_size {
            Some(h) => GridResolution::CellSize(h),
            None => GridResolution::Cells(args.resolution.unwrap_or(64)),
        },
        margin: args.margin,
        bounds: match &args.bounds {
            None => None,
            Some(text) => {
                let v: Vec<f32> =
                    text.split(',').map(|x| x.trim().parse::<f32>()).collect::<Result<_, _>>().map_err(|e| {
                        anyhow::anyhow!("--bounds {text:?}: {e} (expected x0,y0,z0,x1,y1,z1 in metres)")
                    })?;
                let [x0, y0, z0, x1, y1, z1] = v[..] else {
                    bail!("--bounds {text:?}: {} numbers, expected six: x0,y0,z0,x1,y1,z1 (m)", v.len());
                };
                Some([hooke::glam::Vec3::new(x0, y0, z0), hooke::glam::Vec3::new(x1, y1, z1)])
            }
        },
        sign,
    };
    if args.rebuild {
        let key_path = hooke_io::mesh_collider::cache_path_for(&spec).map_err(anyhow::Error::msg)?;
        if key_path.exists() {
            std::fs::remove_file(&key_path)?;
        }
    }
    let loaded = load_mesh_collider(&spec).map_err(anyhow::Error::msg)?;
    for w in &loaded.warnings {
        eprintln!("warning: {w}");
    }
    let g = &loaded.grid;
    let [nx, ny, nz] = g.dims();
    let how = if loaded.cached {
        "read from the cache".to_string()
    } else {
        format!("built in {:.3} s on {threads} threads", loaded.build_seconds)
    };
    println!(
        "{}: {nx} × {ny} × {nz} nodes ({} values), cell {:.4e} m, {how}",
        args.mesh.display(),
        g.values().len(),
        g.cell()
    );
    match &loaded.cache {
        Some(c) => println!("cache: {}", c.display()),
        None => println!("cache: none (see the warning)"),
    }
    Ok(())
}
