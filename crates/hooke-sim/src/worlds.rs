//! Packing scenes into worlds (issue #13, item 1): several independent scenes — a batch's
//! samples, say — made into one scene of several worlds ([`hooke::World`]) and solved by the
//! same sweeps, each with its own bodies, colliders, pins, gravity and wind, none touching
//! another. Each world's positions are bit for bit those of its scene run alone — except, on
//! the CPU, a rope whose tension makes the tension limit raise the substeps of its scene run
//! alone (`hooke::solver::xpbd::stability`): a pack keeps the fixed count, and the run notes
//! such ropes (from their weight).
//!
//! The packing works on the scene files' keys: world k takes scene k's `gravity`, `wind` and
//! `gust` (`[[world]]` sections for k ≥ 1), and its cloths, ropes and colliders with
//! `world = k`, their names and materials prefixed `w<k>_` so that they stay apart. What the
//! worlds share must agree: the `[solver]` section (substeps, iterations, frames, fps, …) and
//! the `[air]`. Scenes that tear cannot be packed (a tear renumbers the particles), and
//! `iterations = "auto"` neither (its residual would be measured over every world).

use crate::batch::scene_table;
use hooke_io::scene::Scene;
use std::ops::Range;
use std::path::Path;

/// A packed scene and where each of its scenes is in it.
pub struct Packed {
    /// The scene of every world.
    pub scene: Scene,
    /// Per packed scene, in order: its particles in the packed model.
    pub particles: Vec<Range<usize>>,
    /// Per packed scene: its bodies in the packed model.
    pub bodies: Vec<Range<usize>>,
    /// Per packed scene: its colliders in the packed model.
    pub colliders: Vec<Range<usize>>,
}

/// The sections that the worlds of a pack share, `[solver]` and `[air]` (empty tables where a
/// scene has none), of the scene table `t` (named `who` in messages).
///
/// # Errors
/// A message naming the scene when it cannot be packed: it has `[[cut]]` or `[[world]]`, a
/// material that tears, the global cloth solve, or `iterations = "auto"`.
fn shared_sections(t: &toml::Table, who: &str) -> Result<(toml::Value, toml::Value), String> {
    for key in ["cut", "world"] {
        if t.contains_key(key) {
            return Err(format!("{who}: a scene with [[{key}]] cannot be packed into worlds"));
        }
    }
    if let Some(toml::Value::Table(m)) = t.get("materials") {
        for (name, material) in m {
            for key in ["tear_strain", "tear_energy"] {
                if material.get(key).is_some() {
                    return Err(format!("{who}: materials.{name} tears ({key}): it cannot be packed into worlds"));
                }
            }
        }
    }
    let shared = (
        t.get("solver").cloned().unwrap_or(toml::Value::Table(Default::default())),
        t.get("air").cloned().unwrap_or(toml::Value::Table(Default::default())),
    );
    if let Some(solver) = shared.0.get("cloth_solver").and_then(|v| v.as_str())
        && solver.starts_with("global")
    {
        return Err(format!(
            "{who}: cloth_solver = \"{solver}\" needs the tension limit on the substeps, which a model of several worlds \
             does not apply; it cannot be packed into worlds"
        ));
    }
    if let Some(iterations) = shared.0.get("iterations")
        && iterations.as_str() == Some("auto")
    {
        return Err(format!(
            "{who}: iterations = \"auto\" measures the residual over the whole model; set a fixed count to pack scenes \
             into worlds"
        ));
    }
    Ok(shared)
}

/// Which scenes the scene file `path` with the dotted keys `set` changed may be packed with:
/// `Some(key)`, equal for scenes whose `[solver]` and `[air]` are equal (compared key by key
/// as written); `None` when it cannot be packed at all (see [`pack`]).
///
/// # Errors
/// The file cannot be read or parsed, or a key cannot be set.
pub fn pack_key(path: &Path, set: &toml::Table) -> Result<Option<String>, String> {
    let (_, t) = scene_table(path, set)?;
    Ok(shared_sections(&t, &path.display().to_string()).ok().map(|(solver, air)| format!("{solver}\n{air}")))
}

/// Packs the scene files `scenes` (each with the dotted keys of its table changed, as a batch
/// sample does) into one scene of as many worlds.
///
/// # Errors
/// The index of the scene at fault and a message naming it and the key: a `[solver]` or
/// `[air]` that differs from the first scene's (compared key by key as written: a key left to
/// its default differs from one written with the default's value), a scene that tears or has
/// worlds of its own, the global cloth solve, `iterations = "auto"`, or the packed scene's own
/// error (index 0).
pub fn pack(scenes: &[(&Path, &toml::Table)], memory_limit: u64) -> Result<Packed, (usize, String)> {
    if scenes.is_empty() {
        return Err((0, "no scenes to pack".into()));
    }
    let mut packed = toml::Table::new();
    let mut worlds = Vec::new();
    let mut materials = toml::Table::new();
    let (mut cloths, mut ropes, mut colliders) = (Vec::new(), Vec::new(), Vec::new());
    let mut reference: Option<(toml::Value, toml::Value)> = None;
    for (k, (path, set)) in scenes.iter().enumerate() {
        let who = format!("{} (world {k})", path.display());
        let at = |message: String| (k, message);
        let (_, t) = scene_table(path, set).map_err(at)?;
        let shared = shared_sections(&t, &who).map_err(at)?;
        match &reference {
            None => reference = Some(shared.clone()),
            Some((solver, air)) => {
                if *solver != shared.0 {
                    return Err(at(format!(
                        "{who}: its [solver] differs from the first scene's ({} against {}): worlds share one solver",
                        shared.0, solver
                    )));
                }
                if *air != shared.1 {
                    return Err(at(format!("{who}: its [air] differs from the first scene's: worlds share the air")));
                }
            }
        }
        let base = path.parent().unwrap_or(Path::new("."));
        let prefix = |name: &str| format!("w{k}_{name}");
        if let Some(toml::Value::Table(m)) = t.get("materials") {
            for (name, material) in m {
                materials.insert(prefix(name), material.clone());
            }
        }
        let entries = |key: &str, default: &dyn Fn(usize, &toml::Table) -> String| -> Vec<toml::Value> {
            let list = match t.get(key) {
                Some(toml::Value::Array(a)) => a.clone(),
                _ => Vec::new(),
            };
            list.into_iter()
                .enumerate()
                .map(|(i, e)| {
                    let toml::Value::Table(mut e) = e else { return e };
                    let name =
                        e.get("name").and_then(|n| n.as_str()).map(str::to_string).unwrap_or_else(|| default(i, &e));
                    e.insert("name".into(), prefix(&name).into());
                    if let Some(m) = e.get("material").and_then(|m| m.as_str()).map(str::to_string) {
                        e.insert("material".into(), prefix(&m).into());
                    }
                    // Files (a cloth's mesh, a collider's) from the scene's own folder.
                    for file in ["mesh", "path"] {
                        if let Some(f) = e.get(file).and_then(|f| f.as_str()).map(str::to_string) {
                            e.insert(file.into(), base.join(f).display().to_string().into());
                        }
                    }
                    e.insert("world".into(), (k as i64).into());
                    toml::Value::Table(e)
                })
                .collect()
        };
        cloths.extend(entries("cloth", &|i, _| format!("cloth{i}")));
        ropes.extend(entries("rope", &|i, _| format!("rope{i}")));
        colliders.extend(entries("collider", &|i, e| {
            format!("{}{i}", e.get("shape").and_then(|s| s.as_str()).unwrap_or("collider"))
        }));
        let mut world = toml::Table::new();
        for key in ["gravity", "wind", "gust"] {
            if let Some(v) = t.get(key) {
                world.insert(key.into(), v.clone());
            }
        }
        if k == 0 {
            packed.extend(world);
        } else {
            worlds.push(toml::Value::Table(world));
        }
    }
    let (solver, air) = reference.expect("at least one scene");
    packed.insert("name".into(), "worlds".into());
    packed.insert("solver".into(), solver);
    if air.as_table().is_some_and(|a| !a.is_empty()) {
        packed.insert("air".into(), air);
    }
    packed.insert("materials".into(), toml::Value::Table(materials));
    packed.insert("cloth".into(), toml::Value::Array(cloths));
    packed.insert("rope".into(), toml::Value::Array(ropes));
    packed.insert("collider".into(), toml::Value::Array(colliders));
    packed.insert("world".into(), toml::Value::Array(worlds));
    let meshes = hooke_io::scene::Meshes::new();
    let scene = hooke_io::scene::from_table(packed, "packed worlds", "worlds", None, memory_limit, &meshes)
        .map_err(|e| (0, e.to_string()))?;
    let w = scene.model.worlds();
    let range = |r: &Range<u32>| r.start as usize..r.end as usize;
    Ok(Packed {
        particles: w.iter().map(|w| range(&w.particles)).collect(),
        bodies: w.iter().map(|w| range(&w.bodies)).collect(),
        colliders: w.iter().map(|w| range(&w.colliders)).collect(),
        scene,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scene under the global cloth solve is not packed (its tension limit needs a model of
    /// one world): `pack_key` gives it none, so a batch runs it alone; the same scene under
    /// Gauss–Seidel gets one.
    #[test]
    fn a_scene_under_the_global_cloth_solve_is_not_packed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("strip.toml");
        let scene = "[solver]\ncloth_solver = \"global\"\n[[cloth]]\nrows = 8\ncolumns = 3\nspacing = 0.05\n";
        std::fs::write(&path, scene).unwrap();
        assert_eq!(pack_key(&path, &toml::Table::new()).unwrap(), None);
        let mut set = toml::Table::new();
        set.insert("solver.cloth_solver".into(), "gauss-seidel".into());
        assert!(pack_key(&path, &set).unwrap().is_some());
    }
}
