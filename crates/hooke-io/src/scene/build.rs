//! Building a parsed scene file: the model's bodies and colliders, the pin schedule and the
//! collider motions, one function per section.

use super::schema::*;
use super::solver::{DEFAULT_RESIDUAL_TOLERANCE, SolverChoice, derived_max_speed, solver_choice};
use super::{Scene, ScheduledPin};
use crate::mesh::VertexMap;
use glam::{EulerRot, Quat, Vec3};
use hooke::collision::{Collider, Keyframe, Motion, Shape};
use hooke::{Air, Bending, ClothGrid, ClothMaterial, ClothMesh, ModelBuilder, Pin, Rope, RopeMaterial};
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub(super) fn vec3(v: [f32; 3], key: &str) -> Result<Vec3, String> {
    let v = Vec3::from_array(v);
    if v.is_finite() { Ok(v) } else { Err(format!("{key}: must be finite, got {v}")) }
}

/// A velocity (m/s) at `key`: finite, and small enough that its square (kinetic energy, drag,
/// the blow-up speed limit) is finite in f32.
fn speed(v: [f32; 3], key: &str) -> Result<Vec3, String> {
    squarable(v, key, "m/s is too fast")
}

/// A gravity (m/s²) at `key`: finite, and small enough that its length is finite in f32 (the
/// blow-up speed limit is derived from it; an overflowing length read as no gravity at all).
fn gravity(v: [f32; 3], key: &str) -> Result<Vec3, String> {
    squarable(v, key, "m/s² is too large")
}

/// A finite vector at `key` whose squared length is finite in f32; `too` says what it is
/// otherwise (its unit, then "is too fast" or the like).
fn squarable(v: [f32; 3], key: &str, too: &str) -> Result<Vec3, String> {
    let v = vec3(v, key)?;
    if v.length_squared().is_finite() { Ok(v) } else { Err(format!("{key}: {v} {too} to square within f32")) }
}

/// The speed of sound in air at 20 °C (m/s): the fastest wind a scene takes.
const SPEED_OF_SOUND: f32 = 343.0;

/// A wind (m/s) at `key`: a [`speed`] no faster than sound in air. The drag and lift of
/// [`hooke::Air`] are those of air that does not compress, which holds well below the speed of
/// sound, not beyond it — a wind of 10⁴ m/s stretched a cloth by 600 % and the run ended as if
/// nothing were wrong.
fn wind_speed(v: [f32; 3], key: &str) -> Result<Vec3, String> {
    let w = speed(v, key)?;
    if w.length() > SPEED_OF_SOUND {
        return Err(format!(
            "{key}: {w} m/s ({:.4e} m/s) is faster than sound in air ({SPEED_OF_SOUND} m/s): the drag and lift of \
             [air] are those of air that does not compress, which holds only well below it",
            w.length()
        ));
    }
    Ok(w)
}

/// A wind's gust at `key` (amplitude in m/s, period in s), the wind and gust together no
/// faster than sound (see [`wind_speed`]).
fn gust(wind: Vec3, g: &crate::scene::schema::GustSection, key: &str) -> Result<hooke::Gust, String> {
    let amplitude = wind_speed(g.amplitude, &format!("{key}.amplitude"))?;
    if !(g.period.is_finite() && g.period > 0.0) {
        return Err(format!("{key}.period: must be a time > 0 s, got {}", g.period));
    }
    wind_speed((wind.abs() + amplitude.abs()).to_array(), &format!("{key}.amplitude with the wind"))?;
    Ok(hooke::Gust { amplitude, period: g.period })
}

/// Warnings for the bodies whose particles start inside a collider of their world (signed
/// distance below 0 at their rest positions, the collider placed by its `motion` at t = 0 —
/// indexed like [`hooke::Model::colliders`], `None` at rest): the collider pushes them out in
/// the first substep, which throws the body (a cloth started half inside a sphere went from
/// 0.6 J to 3 700 J in its first frame, stretched by 490 %).
fn starting_inside(model: &hooke::Model, motion: &[Option<Arc<Motion>>]) -> Vec<String> {
    let x = model.particle_position();
    let mut out = Vec::new();
    for w in model.worlds() {
        for c in w.colliders.clone() {
            let collider = &model.colliders()[c as usize];
            let pose = motion
                .get(c as usize)
                .and_then(Option::as_ref)
                .map_or(hooke::collision::Pose::IDENTITY, |m| m.pose_at(0.0));
            for body in &model.bodies()[w.bodies.start as usize..w.bodies.end as usize] {
                let (inside, deepest) = body
                    .particles
                    .clone()
                    .map(|p| collider.signed_distance_at(x[p as usize], &pose).0)
                    .filter(|&phi| phi < 0.0)
                    .fold((0usize, 0.0f32), |(n, d), phi| (n + 1, d.max(-phi)));
                if inside > 0 {
                    out.push(format!(
                        "{} {:?}: {inside} of its {} particles start inside collider {:?} (the deepest {deepest:.4e} m \
                         inside): the collider pushes them out in the first substep, which throws the {}; move one of \
                         them so that they start apart",
                        if body.is_cloth() { "cloth" } else { "rope" },
                        body.name,
                        body.particles.len(),
                        collider.name,
                        if body.is_cloth() { "cloth" } else { "rope" },
                    ));
                }
            }
        }
    }
    out
}

/// The longest scene name (bytes): file systems take names of up to 255 bytes, and a cache's
/// temporary files add a suffix of about 40 to the name.
const MAX_NAME_BYTES: usize = 200;
fn rotation(deg: Option<[f32; 3]>, key: &str) -> Result<Quat, String> {
    let r = vec3(deg.unwrap_or([0.0; 3]), key)?;
    Ok(Quat::from_euler(EulerRot::XYZ, r.x.to_radians(), r.y.to_radians(), r.z.to_radians()))
}

fn count(v: i64, key: &str) -> Result<usize, String> {
    usize::try_from(v).map_err(|_| format!("{key}: must be a positive count, got {v}"))
}

/// Resolves a possibly negative index into `0..len`.
fn index(v: i64, len: usize, key: &str) -> Result<usize, String> {
    let k = if v < 0 { len as i64 + v } else { v };
    if k >= 0 && (k as usize) < len {
        Ok(k as usize)
    } else {
        Err(format!("{key}: index {v} is out of range for {len} elements"))
    }
}

/// Builds the whole scene.
pub(super) fn build(
    f: &SceneFile,
    default_name: &str,
    base_dir: Option<&Path>,
    memory_limit: u64,
    meshes: &super::Meshes,
) -> Result<Scene, String> {
    let s = &f.solver;
    let mut solver = solver_choice(s)?;
    let frames = count(s.frames, "solver.frames")?;
    if frames == 0 {
        return Err("solver.frames: must be ≥ 1, got 0".into());
    }
    let mut b = ModelBuilder::new();
    b.set_memory_limit(memory_limit);
    let (wind, gust) = environment(f, &mut b)?;
    let world_wind = worlds(f)?;
    let mut pins = Vec::new();
    let mut warnings = Vec::new();
    let windy = wind != Vec3::ZERO || gust.is_some() || world_wind.iter().any(|(w, g)| *w != Vec3::ZERO || g.is_some());
    if f.air.is_none() && windy {
        warnings.push(
            "wind: the scene has no [air] section, so its wind acts on nothing: add [air] for the aerodynamic drag \
             and lift (air damping slows particles toward rest, not toward the wind)"
                .to_string(),
        );
    }
    if s.pbd_stiffness == Some(0.0) {
        warnings.push("solver.pbd_stiffness = 0: every constraint's correction is scaled to nothing".to_string());
    }
    if let Some(most) = s.max_substeps
        && most < s.substeps
    {
        warnings.push(format!(
            "solver.max_substeps = {most} is below solver.substeps = {}: the tension limit only raises the substeps, so \
             every frame takes {} substeps (write max_substeps = {} to say so)",
            s.substeps, s.substeps, s.substeps
        ));
    }
    // One entry per body, in the order they are added: world by world, cloths, then ropes,
    // then the world's colliders.
    let mut vertex_maps = Vec::with_capacity(f.cloth.len() + f.rope.len());
    let mut collider_motion = Vec::with_capacity(f.collider.len());
    for w in 0..=f.world.len() {
        if w > 0 {
            let g = f.world[w - 1].gravity.unwrap_or([0.0, -9.81, 0.0]);
            b.add_world(gravity(g, &format!("world[{w}]: gravity"))?).map_err(|e| e.to_string())?;
        }
        for (k, c) in f.cloth.iter().enumerate().filter(|(_, c)| c.world.unwrap_or(0) == w) {
            vertex_maps.push(add_cloth(&mut b, f, k, c, MeshSource { base_dir, meshes }, &mut pins, &mut warnings)?);
        }
        for (k, r) in f.rope.iter().enumerate().filter(|(_, r)| r.world.unwrap_or(0) == w) {
            add_rope(&mut b, f, k, r, &mut pins, &mut warnings)?;
            vertex_maps.push(None);
        }
        for (k, c) in f.collider.iter().enumerate().filter(|(_, c)| c.world.unwrap_or(0) == w) {
            collider_motion.push(add_collider(&mut b, k, c, base_dir, &mut warnings)?);
        }
    }
    // A material no body names changes nothing (a misspelt name, most likely).
    for name in f.materials.keys() {
        let named = |m: &Option<String>| m.as_deref() == Some(name.as_str());
        if !f.cloth.iter().any(|c| named(&c.material)) && !f.rope.iter().any(|r| named(&r.material)) {
            warnings.push(format!("materials.{name}: no cloth or rope names this material; its keys change nothing"));
        }
    }
    // Colliders are named in messages and in the caches, as bodies are: one name, one collider.
    let mut collider_names = std::collections::HashSet::new();
    for (k, c) in f.collider.iter().enumerate() {
        let name = collider_name(k, c);
        if !collider_names.insert(name.clone()) {
            return Err(format!("collider[{k}] {name:?}: two colliders are named {name:?}; names must be unique"));
        }
    }
    let model = Arc::new(b.finalize().map_err(|e| e.to_string())?);
    let kind = |b: &hooke::Body| if b.is_cloth() { "cloth" } else { "rope" };
    let tears = model.bodies().iter().any(|b| matches!(b.material, hooke::BodyMaterial::Cloth(m) if m.tears()));
    if s.tear_overlap == Some(true) && !tears {
        warnings.push(
            "solver.tear_overlap: no cloth of the scene has a tear_strain or tear_energy, so nothing tears by strain \
             and the key changes nothing (scripted cuts are made at once)"
                .to_string(),
        );
    }
    for concern in hooke::collision::self_collision::concerns(&model) {
        use hooke::collision::self_collision::SelfCollisionConcern as C;
        warnings.push(match concern {
            C::ThinnerThanSpacing { body, contact_distance, spacing } => format!(
                "{} {:?}: self-collision with a contact distance of {contact_distance} m (the thickness, or twice a rope's \
                 radius) below its particle spacing of {spacing:.4} m: a particle can pass between two particles of a \
                 layer; give it a thickness of at least the spacing",
                kind(&model.bodies()[body]),
                model.bodies()[body].name
            ),
            C::KineticAboveStatic { body } => format!(
                "{} {:?}: self_kinetic_friction exceeds self_static_friction: contacts then stick up to μₖ and μₛ has no \
                 effect; real materials have μₖ ≤ μₛ (swapped values?)",
                kind(&model.bodies()[body]),
                model.bodies()[body].name
            ),
        });
    }
    warnings.extend(starting_inside(&model, &collider_motion));
    // The blow-up speed limit: the file's, or one that scales with the scene (the windiest
    // world's air).
    let air = |w: &Vec3, g: &Option<hooke::Gust>| w.length() + g.map_or(0.0, |g| g.amplitude.length());
    let (limit_wind, limit_gust) = world_wind
        .iter()
        .map(|(w, g)| (*w, *g))
        .fold((wind, gust), |best, (w, g)| if air(&w, &g) > air(&best.0, &best.1) { (w, g) } else { best });
    solver.set_max_speed(s.max_speed.unwrap_or_else(|| {
        // Moving pins drag their cloth at their own speed, as keyframed colliders push it.
        let mut motion = collider_motion.clone();
        motion.extend(pins.iter().filter_map(|p| p.motion.as_ref().map(|(m, _)| Some(m.clone()))));
        derived_max_speed(&model, limit_wind, limit_gust, &motion)
    }));
    check_step(&model, s.fps, solver.substeps(), solver.max_speed())?;
    let name = match &f.name {
        Some(n) => n.clone(),
        None => default_name.to_string(),
    };
    let whose = if f.name.is_some() { "name" } else { "name (the file's stem; set `name` to change it)" };
    if let Some(c) = name.chars().find(|c| c.is_control()) {
        return Err(format!(
            "{whose}: {name:?} contains the control character U+{:04X}; it cannot be used in file names and caches",
            c as u32
        ));
    }
    if name.is_empty() || name.contains(['/', '\\']) || name.starts_with('.') {
        return Err(format!("{whose}: {name:?} cannot be used as a folder and file name"));
    }
    // File systems take names of up to 255 bytes, and a cache's temporary files add a suffix.
    if name.len() > MAX_NAME_BYTES {
        return Err(format!(
            "{whose}: {} bytes long, over the {MAX_NAME_BYTES} that caches' file names leave room for",
            name.len()
        ));
    }
    // The global cloth solve needs compliant cloth constraints and one world.
    if let SolverChoice::Position(x) = solver
        && let Some(why) = hooke::solver::xpbd::global_cloth::refusal(&model, x.method, x.cloth_solver)
    {
        return Err(format!("solver.cloth_solver: {why}"));
    }
    // Force-based integrators need finite stiffness everywhere, and symplectic Euler and Verlet
    // a step under their stability limit: check now, not at run time.
    if let SolverChoice::Force(settings) = solver {
        let force = hooke::ForceSolver::new(model.clone(), settings).map_err(|e| e.to_string())?;
        force.check_step(1.0 / s.fps).map_err(|e| e.to_string())?;
    }
    // Tearing splits particles along the texture coordinates: a cloth whose material tears
    // and has none is refused now, not at its first tear; one that only a cut might cross is
    // warned about (a cut that crosses it will stop the run).
    let cuts = cuts(f)?;
    // A cut due after the last frame never happens (unless the run is made longer).
    let end = frames as f64 / s.fps as f64;
    for (k, c) in f.cut.iter().enumerate().filter(|(_, c)| c.time > end + 1e-9) {
        warnings.push(format!(
            "cut[{k}]: time {} s is after the scene's last frame (t = {end} s at {frames} frames): it cuts nothing \
             unless the run is made longer",
            c.time
        ));
    }
    // A blade cuts cloth only (a rope's segments are not cut): in a scene without cloth it
    // cuts nothing.
    if !cuts.is_empty() && !model.bodies().iter().any(|b| matches!(b.material, hooke::model::BodyMaterial::Cloth(_))) {
        warnings.push(format!(
            "cut: the scene has {} but no cloth, and a blade cuts only cloth (a rope is not cut): it cuts nothing",
            if cuts.len() == 1 { "a [[cut]]".to_string() } else { format!("{} [[cut]]s", cuts.len()) }
        ));
    }
    // Tearing rebuilds the model around a crack, which a model of several worlds cannot do:
    // refuse it now, not at the first tear after minutes of simulation.
    if model.worlds().len() > 1 {
        if !cuts.is_empty() {
            return Err(format!(
                "cut: a scene of {} worlds ([[world]]) cannot be cut (tearing rebuilds the model, which a model of \
                 several worlds cannot do); run its worlds as scenes of their own",
                model.worlds().len()
            ));
        }
        for body in model.bodies() {
            if let hooke::model::BodyMaterial::Cloth(m) = &body.material
                && m.tears()
            {
                return Err(format!(
                    "cloth {:?}: its material tears (tear_strain = {} / tear_energy = {} J/m²), but a scene of {} \
                     worlds ([[world]]) cannot tear (tearing rebuilds the model, which a model of several worlds \
                     cannot do); run its worlds as scenes of their own",
                    body.name,
                    m.tear_strain,
                    m.tear_energy,
                    model.worlds().len()
                ));
            }
        }
    }
    for (k, body) in model.bodies().iter().enumerate() {
        let hooke::model::BodyMaterial::Cloth(m) = body.material else { continue };
        if hooke::tearing::has_texture_coordinates(&model, k) {
            continue;
        }
        if m.tears() {
            return Err(format!(
                "cloth {:?}: its material sets tear_strain = {} / tear_energy = {} J/m², but it cannot tear: its mesh \
                 has no texture coordinates that span an area (none, or every triangle's are degenerate; tearing \
                 splits the cloth along them: give the mesh `vt` lines, or use a grid)",
                body.name, m.tear_strain, m.tear_energy
            ));
        }
        if !cuts.is_empty() {
            warnings.push(format!(
                "cloth {:?} has no texture coordinates: a [[cut]] that crosses it will stop the run (tearing splits \
                 a cloth along them; give the mesh `vt` lines, or use a grid)",
                body.name
            ));
        }
    }
    // A path with a NUL byte names no file (found only when the run ends and writes); an
    // empty one would be the working folder, unasked.
    if let Some(dir) = f.output.dir.as_deref() {
        if dir.contains('\0') {
            return Err(format!("output.dir: {dir:?} contains a NUL byte, which no file name may hold"));
        }
        if dir.trim().is_empty() {
            return Err(format!(
                "output.dir: {dir:?} is an empty folder name (leave the key out for out/<scene name>)"
            ));
        }
    }
    // The cache format, checked here so that `validate` says what `run` would refuse.
    if let Some(format) = f.output.format.as_deref() {
        let parsed: crate::cache::Format = format.parse().map_err(|e| format!("output.format: {e}"))?;
        let tears = !cuts.is_empty()
            || model.bodies().iter().any(|b| matches!(&b.material, hooke::model::BodyMaterial::Cloth(m) if m.tears()));
        if tears && parsed == crate::cache::Format::Pc2 {
            return Err(format!(
                "output.format: \"{format}\": the scene tears (a cloth has a tear_strain or tear_energy, or the scene a \
                 [[cut]]) and PC2 holds a fixed vertex count: write usda or obj"
            ));
        }
    }
    Ok(Scene {
        name,
        model,
        solver,
        fps: s.fps,
        frames,
        wind,
        gust,
        world_wind,
        pins,
        cuts,
        collider_motion,
        output: f.output.clone(),
        vertex_maps,
        warnings,
        residual_tolerance: s.residual_tolerance.unwrap_or(DEFAULT_RESIDUAL_TOLERANCE),
        tear_overlap: s.tear_overlap.unwrap_or(false),
    })
}

/// The scripted cuts, earliest first.
fn cuts(f: &SceneFile) -> Result<Vec<(f64, hooke::tearing::Cut)>, String> {
    let mut out = Vec::with_capacity(f.cut.len());
    for (k, c) in f.cut.iter().enumerate() {
        let key = format!("cut[{k}]");
        if !(c.time.is_finite() && c.time >= 0.0) {
            return Err(format!("{key}: time must be a finite number ≥ 0 (s), got {}", c.time));
        }
        if c.points.len() < 2 {
            return Err(format!("{key}: points must hold at least two points, got {}", c.points.len()));
        }
        let points = c.points.iter().map(|&p| vec3(p, &format!("{key}: points"))).collect::<Result<Vec<_>, _>>()?;
        let direction = vec3(c.direction.unwrap_or([0.0, 0.0, 1.0]), &format!("{key}: direction"))?;
        // Any length: scaled by its largest component first, so that neither 1e-10 nor 1e20
        // under- or overflows on the way to a unit vector.
        let largest = direction.abs().max_element();
        if largest == 0.0 {
            return Err(format!("{key}: direction must not be zero"));
        }
        let direction = (direction / largest).normalize();
        if let Some(w) = points.windows(2).find(|w| !(w[1] - w[0]).length_squared().is_finite()) {
            return Err(format!(
                "{key}: points {} to {} are too far apart: distances along the blade must square within f32",
                w[0], w[1]
            ));
        }
        if points.windows(2).all(|w| (w[1] - w[0]).length() < 1e-9) {
            return Err(format!("{key}: the points are all one point, so the blade has no length"));
        }
        if points.windows(2).all(|w| (w[1] - w[0]).cross(direction).length() < 1e-9) {
            return Err(format!("{key}: the points run along the direction, so the blade has no width"));
        }
        out.push((c.time, hooke::tearing::Cut { points, direction }));
    }
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    Ok(out)
}

/// The wind and gust of worlds 1, 2, …, after checking every `world` key names a world.
fn worlds(f: &SceneFile) -> Result<Vec<(Vec3, Option<hooke::Gust>)>, String> {
    let n = f.world.len();
    let keys = f.cloth.iter().map(|c| ("cloth", c.world)).chain(f.rope.iter().map(|r| ("rope", r.world)));
    let keys = keys.chain(f.collider.iter().map(|c| ("collider", c.world)));
    let mut counts: std::collections::BTreeMap<&str, usize> = Default::default();
    for (what, world) in keys {
        let k = counts.entry(what).or_default();
        if let Some(w) = world
            && w > n
        {
            return Err(format!("{what}[{k}]: world = {w}, but the scene has {} (0 and one per [[world]])", n + 1));
        }
        *k += 1;
    }
    f.world
        .iter()
        .enumerate()
        .map(|(k, w)| {
            let key = format!("world[{}]", k + 1);
            let wind = wind_speed(w.wind.unwrap_or([0.0; 3]), &format!("{key}: wind"))?;
            let gust = w.gust.as_ref().map(|g| gust(wind, g, &format!("{key}: gust"))).transpose()?;
            Ok((wind, gust))
        })
        .collect()
}

/// Gravity and air (set on the builder), wind and gust.
fn environment(f: &SceneFile, b: &mut ModelBuilder) -> Result<(Vec3, Option<hooke::Gust>), String> {
    if let Some(g) = f.gravity {
        b.set_gravity(gravity(g, "gravity")?).map_err(|e| e.to_string())?;
    }
    let wind = wind_speed(f.wind.unwrap_or([0.0; 3]), "wind")?;
    let gust = f.gust.as_ref().map(|g| gust(wind, g, "gust")).transpose()?;
    if let Some(a) = &f.air {
        // Each key finite and ≥ 0, named in the error (dimensionless but for the density).
        let key = |name: &str, value: Option<f32>, default: f32| match value.unwrap_or(default) {
            v if v.is_finite() && v >= 0.0 => Ok(v),
            v => Err(format!("air.{name}: must be a finite number ≥ 0, got {v}")),
        };
        let air = Air {
            density: key("density", a.density, 1.225)?,
            drag_coefficient: key("drag_coefficient", a.drag_coefficient, 1.0)?,
            lift_coefficient: key("lift_coefficient", a.lift_coefficient, 0.0)?,
        };
        b.set_air(air).map_err(|e| e.to_string())?;
    }
    Ok((wind, gust))
}

/// The material table a body names, or the defaults.
fn material(f: &SceneFile, name: &Option<String>, key: &str) -> Result<MaterialSection, String> {
    match name {
        None => Ok(MaterialSection::default()),
        Some(n) => {
            let m = f.materials.get(n).cloned().ok_or_else(|| {
                let known: Vec<&String> = f.materials.keys().collect();
                format!("{key}.material: no material named {n:?} (defined: {known:?})")
            })?;
            // Named by its key here; the model's own check names the body and the quantity.
            if let Some(d) = m.density.filter(|d| !(d.is_finite() && *d > 0.0)) {
                return Err(format!(
                    "materials.{n}.density: must be a finite number > 0 (kg/m² for a cloth, kg/m for a rope), got {d}"
                ));
            }
            Ok(m)
        }
    }
}

/// A cloth material from its table: unset keys take [`ClothMaterial::default`]'s values, and
/// the compression stiffness defaults to the stretch stiffness when that is given.
fn cloth_material(m: &MaterialSection, c: &ClothSection, key: &str) -> Result<ClothMaterial, String> {
    let d = ClothMaterial::default();
    let stretch = m.stretch_stiffness.unwrap_or(d.stretch_stiffness);
    if m.radius.is_some() {
        return Err(format!(
            "{key}: material {:?} sets `radius`, which is for ropes (cloth uses `thickness`)",
            c.material.as_deref().unwrap_or("")
        ));
    }
    Ok(ClothMaterial {
        areal_density: m.density.unwrap_or(d.areal_density),
        stretch_stiffness: stretch,
        compression_stiffness: m.compression_stiffness.unwrap_or(if m.stretch_stiffness.is_some() {
            stretch
        } else {
            d.compression_stiffness
        }),
        shear_stiffness: m.shear_stiffness.unwrap_or(d.shear_stiffness),
        bend_stiffness: m.bend_stiffness.unwrap_or(d.bend_stiffness),
        bending_modulus: m.bending_modulus.unwrap_or(d.bending_modulus),
        damping: m.damping.unwrap_or(d.damping),
        thickness: m.thickness.unwrap_or(d.thickness),
        self_collision: c.self_collision.unwrap_or(false),
        self_collision_thickness: c.self_collision_thickness,
        self_friction: self_friction(m, d.self_friction),
        self_collision_speed_clamp: c.self_collision_speed_clamp.unwrap_or(false),
        triangle_contact: c.triangle_contact.unwrap_or(d.triangle_contact),
        tear_strain: m.tear_strain.unwrap_or(d.tear_strain),
        tear_energy: m.tear_energy.unwrap_or(d.tear_energy),
    })
}

/// The friction of self-contacts from a material's keys: μₖ defaults to μₛ when only that
/// is given.
fn self_friction(m: &MaterialSection, d: hooke::collision::Friction) -> hooke::collision::Friction {
    let static_coefficient = m.self_static_friction.unwrap_or(d.static_coefficient);
    let kinetic_coefficient = m.self_kinetic_friction.unwrap_or(match m.self_static_friction {
        Some(s) => s,
        None => d.kinetic_coefficient,
    });
    hooke::collision::Friction { static_coefficient, kinetic_coefficient }
}

/// The bending model of a body from its `bending` key and its material: `"springs"` when the
/// material gives `bend_stiffness` (the springs' modulus) and the body does not say, else
/// `"angle"`; a modulus for the other model than the one chosen is an error, and one that
/// `bending = "none"` leaves unused a warning (the material may serve other bodies).
fn bending_model(
    bending: Option<&str>,
    m: &MaterialSection,
    key: &str,
    warnings: &mut Vec<String>,
) -> Result<Bending, String> {
    let chosen = match bending {
        None if m.bend_stiffness.is_some() && m.bending_modulus.is_some() => {
            return Err(format!(
                "{key}: its material sets both bend_stiffness (bend springs) and bending_modulus (angle \
                 bending); say which with bending = \"springs\" or \"angle\""
            ));
        }
        None if m.bend_stiffness.is_some() => Bending::Springs,
        None => Bending::Angle,
        Some("angle") => Bending::Angle,
        Some("springs") => Bending::Springs,
        Some("none") => Bending::None,
        Some(other) => {
            return Err(format!(
                "{key}: bending = {other:?} is not a bending model (\"angle\", \"springs\" or \"none\")"
            ));
        }
    };
    match chosen {
        Bending::Angle if m.bend_stiffness.is_some() => {
            Err(format!("{key}: bend_stiffness is the modulus of bend springs; angle bending takes bending_modulus"))
        }
        Bending::Springs if m.bending_modulus.is_some() => {
            Err(format!("{key}: bending_modulus is the modulus of angle bending; bend springs take bend_stiffness"))
        }
        Bending::None => {
            for (set, field) in
                [(m.bending_modulus.is_some(), "bending_modulus"), (m.bend_stiffness.is_some(), "bend_stiffness")]
            {
                if set {
                    warnings.push(format!("{key}: bending = \"none\": its material's {field} is not used"));
                }
            }
            Ok(chosen)
        }
        _ => Ok(chosen),
    }
}

/// Where a cloth's `mesh` comes from: a file relative to `base_dir`, unless `meshes` holds one
/// of that name.
struct MeshSource<'a> {
    base_dir: Option<&'a Path>,
    meshes: &'a super::Meshes,
}

/// Adds `[[cloth]]` number `k` (a grid or a mesh) and its pins; returns a mesh's vertex map.
fn add_cloth(
    b: &mut ModelBuilder,
    f: &SceneFile,
    k: usize,
    c: &ClothSection,
    source: MeshSource,
    pins: &mut Vec<ScheduledPin>,
    warnings: &mut Vec<String>,
) -> Result<Option<VertexMap>, String> {
    let name = c.name.clone().unwrap_or(format!("cloth{k}"));
    let key = format!("cloth[{k}] {name:?}");
    let section = material(f, &c.material, &key)?;
    let mat = cloth_material(&section, c, &key)?;
    if mat.self_collision_speed_clamp && !mat.self_collision {
        warnings.push(format!("{key}: self_collision_speed_clamp is set but self_collision is off: it clamps nothing"));
    }
    if c.self_collision_thickness.is_some() && !mat.self_collision {
        warnings.push(format!(
            "{key}: self_collision_thickness is set but self_collision is off: it keeps nothing apart (unless \
             `hooke run --self-collision true` turns it on)"
        ));
    }
    let bending = bending_model(c.bending.as_deref(), &section, &key, warnings)?;
    let center = vec3(c.center.unwrap_or([0.0; 3]), &format!("{key}: center"))?;
    let rot = rotation(c.rotation, &format!("{key}: rotation"))?;
    let (id, grid, map) = if let Some(mesh) = &c.mesh {
        for (set, field) in [
            (c.rows.is_some(), "rows"),
            (c.columns.is_some(), "columns"),
            (c.spacing.is_some(), "spacing"),
            (c.velocity.is_some(), "velocity"),
            (c.spring_stiffness.is_some(), "spring_stiffness"),
            (c.structural.is_some(), "structural"),
            (c.shear.is_some(), "shear"),
        ] {
            if set {
                return Err(format!("{key}: `{field}` applies to grids, not to a `mesh` cloth"));
            }
        }
        if !c.pin_rows.is_empty() || !c.pin_columns.is_empty() || !c.pin_cells.is_empty() {
            return Err(format!("{key}: pin_rows/pin_columns/pin_cells apply to grids; use pin_indices or pin_box"));
        }
        let weld = c.weld.unwrap_or(true);
        if !weld && c.weld_tolerance.is_some() {
            return Err(format!("{key}: `weld_tolerance` is given but `weld = false`"));
        }
        if let Some(t) = c.weld_tolerance
            && !(t.is_finite() && t >= 0.0)
        {
            return Err(format!("{key}: weld_tolerance: must be a finite length ≥ 0 (mesh file units), got {t}"));
        }
        let path = source.base_dir.map_or_else(|| PathBuf::from(mesh), |d| d.join(mesh));
        let obj = match source.meshes.get(mesh) {
            Some(obj) => obj.clone(),
            None => crate::mesh::load_obj(&path).map_err(|e| format!("{key}: mesh: {e}"))?,
        };
        let default_tolerance = crate::mesh::default_weld_tolerance(&obj.positions);
        let tolerance = weld.then(|| c.weld_tolerance.unwrap_or(default_tolerance));
        if !weld {
            let apart = crate::mesh::coincident_vertices(&obj.positions, default_tolerance);
            if apart > 0 {
                warnings.push(format!(
                    "{key}: weld = false, but {apart} of the mesh's {} vertices lie within {default_tolerance:.3e} of \
                     another vertex and are not joined to it: the cloth will come apart along them",
                    obj.positions.len()
                ));
            }
        }
        let welded = crate::mesh::weld(&obj, tolerance).map_err(|e| format!("{key}: mesh: {}: {e}", path.display()))?;
        let book = crate::mesh::non_manifold_edges(&welded.triangles);
        if book > 0 && bending == hooke::Bending::Angle {
            warnings.push(format!(
                "{key}: mesh {}: {book} edge(s) shared by more than two triangles (non-manifold): angle bending has \
                 no hinge across them, so the triangles there turn freely about them",
                path.display()
            ));
        }
        let scale = c.scale.unwrap_or(1.0);
        // The mesh's size after its scale: one too small for f32 to tell its vertices' masses
        // and lengths from zero is named here, by file and key (the model would name only a
        // particle's mass).
        let (lo, hi) =
            welded.positions.iter().fold((Vec3::INFINITY, Vec3::NEG_INFINITY), |(lo, hi), p| (lo.min(*p), hi.max(*p)));
        let size = (hi - lo).max_element() * scale;
        // (A scale ≤ 0 or not finite: the model's own check names it.)
        if scale > 0.0 && (size.is_finite() && size < 1e-6 || size > 1e9) {
            return Err(format!(
                "{key}: mesh {} (scale = {scale}): it spans {size:e} m; a cloth must span between 1e-6 m and 1e9 m",
                path.display()
            ));
        }
        let mut cm = ClothMesh::new(name.clone(), welded.positions, welded.triangles);
        cm.uvs = welded.uvs;
        cm.scale = scale;
        cm.rotation = rot;
        cm.translation = center;
        cm.material = mat;
        cm.bending = bending;
        cm.particle_mass = c.particle_mass;
        // (The model names the body and the particle; the file and its scale are the scene's.)
        let added =
            b.add_cloth_mesh(&cm).map_err(|e| format!("{key}: mesh {} (scale = {}): {e}", path.display(), cm.scale))?;
        (added, None, Some(welded.map))
    } else {
        let (Some(rows), Some(columns), Some(spacing)) = (c.rows, c.columns, c.spacing) else {
            return Err(format!("{key}: a grid cloth needs `rows`, `columns` and `spacing` (or give a `mesh`)"));
        };
        for (set, field) in
            [(c.scale.is_some(), "scale"), (c.weld.is_some(), "weld"), (c.weld_tolerance.is_some(), "weld_tolerance")]
        {
            if set {
                return Err(format!("{key}: `{field}` applies to mesh cloths"));
            }
        }
        let mut g = ClothGrid::new(
            name.clone(),
            count(rows, &format!("{key}: rows"))?,
            count(columns, &format!("{key}: columns"))?,
            spacing,
        );
        g.center = center;
        g.rotation = rot;
        g.velocity = speed(c.velocity.unwrap_or([0.0; 3]), &format!("{key}: velocity"))?;
        g.material = mat;
        g.structural = c.structural.unwrap_or(true);
        g.shear = c.shear.unwrap_or(true);
        g.bending = bending;
        if !g.structural && !g.shear {
            let but = match g.bending {
                hooke::Bending::None => ": it has no constraints at all (bending = \"none\")",
                _ => " but its bending",
            };
            warnings.push(format!(
                "{key}: structural = false and shear = false: nothing holds the grid's particles together{but}"
            ));
        }
        g.particle_mass = c.particle_mass;
        g.spring_stiffness = c.spring_stiffness;
        // Far from the origin f32 rounds positions to steps a good part of the spacing: rest
        // lengths then come out wrong (degenerate, at worst) and the rounding reads as strain.
        // (Its farthest particle from the origin is at most the center's largest coordinate
        // plus half the grid's diagonal away along any axis.)
        let half_diagonal = 0.5 * (g.rows.saturating_sub(1) as f32).hypot(g.columns.saturating_sub(1) as f32) * spacing;
        let reach = center.abs().max_element() + half_diagonal;
        let step = f32::EPSILON * reach;
        // (A spacing ≤ 0, beyond 10⁹ m or not finite: the grid's own check names it.)
        let within = spacing > 0.0 && reach.is_finite() && reach <= 1e9;
        // (A grid the builder refuses — its size, its memory — is named for that; the rest
        // lengths the rounding spoils are checked only when the model is finished.)
        let added = b.add_cloth_grid(&g).map_err(|e| e.to_string());
        if added.is_ok() && within && step > 0.25 * spacing {
            return Err(format!(
                "{key}: center = {center}: its particles lie up to {reach:.3e} m from the origin, where f32 positions \
                 are {step:.2e} m apart, too coarse for a spacing of {spacing} m; build the scene nearer the origin"
            ));
        } else if added.is_ok() && within && step > 1e-3 * spacing {
            warnings.push(format!(
                "{key}: center = {center}: its particles lie up to {reach:.3e} m from the origin, where f32 positions \
                 are {step:.2e} m apart, {:.2} % of the spacing: the rounding shows as strain; build the scene nearer \
                 the origin",
                100.0 * step / spacing
            ));
        }
        (added?, Some((g.rows, g.columns)), None)
    };
    let body = b.body(id).clone();
    let global = cloth_pins(b, c, &body, grid, map.as_ref(), &key, "pin_")?;
    if global.is_empty() && c.release_pins_at.is_some() {
        warnings.push(format!(
            "{key}: release_pins_at is set but the cloth has no pins (pin groups keep their own release_at)"
        ));
    }
    push_pins(pins, global, c.release_pins_at, &format!("{key}: release_pins_at"))?;
    for (g, group) in c.pin_groups.iter().enumerate() {
        let at = format!("{key}: pin_groups[{g}]");
        let selectors = ClothSection {
            pin_rows: group.rows.clone(),
            pin_columns: group.columns.clone(),
            pin_cells: group.cells.clone(),
            pin_indices: group.indices.clone(),
            pin_box: None,
            ..c.clone()
        };
        // A group's keys are `rows`, `columns`, `cells` and `indices`.
        let global = cloth_pins(b, &selectors, &body, grid, map.as_ref(), &at, "")?;
        if global.is_empty() {
            return Err(format!("{at}: names no particle (give rows, columns, cells or indices)"));
        }
        if group.keyframes.is_empty() {
            return Err(format!(
                "{at}: keyframes is empty; give at least one (a group that stays put: [{{ time = 0.0 }}])"
            ));
        }
        if group.keyframes.iter().any(|k| k.rotation.is_some()) {
            return Err(format!("{at}: keyframes of pins translate only (no rotation)"));
        }
        let motion = Arc::new(keyframed(&group.keyframes, &at)?);
        // The group moves its particles from where they start: a translation at t = 0 would
        // move them there in the first substep, however fast that is.
        let start = motion.translation_at(0.0);
        if start != Vec3::ZERO {
            return Err(format!(
                "{at}: keyframes: the translation at t = 0 s is {start} m; a pin group moves its particles \
                 from where they start, so it must be 0 then (add a keyframe {{ time = 0.0, translation = \
                 [0.0, 0.0, 0.0] }})"
            ));
        }
        // A particle has one pin: one that another key already holds would have two motions.
        if let Some(q) = pins.iter().find(|q| global.contains(&q.pin.particle)) {
            let by = if q.motion.is_some() { "an earlier pin group" } else { "the cloth's pin keys" };
            return Err(format!(
                "{at}: particle {} (index {} of the cloth) is already pinned by {by}; a particle can be in one \
                 pin group, or pinned in place, not both",
                q.pin.particle,
                q.pin.particle - body.particles.start
            ));
        }
        push_pins(pins, global.clone(), group.release_at, &format!("{at}: release_at"))?;
        for p in pins.iter_mut().filter(|p| global.contains(&p.pin.particle)) {
            (p.motion, p.release_at) = (Some((motion.clone(), b.particle_position(p.pin.particle))), group.release_at);
        }
    }
    Ok(map)
}

/// The particles a cloth's pin keys name (global indices). A mesh's `pin_indices` are its
/// file's vertex indices, mapped to their particles by `map`. `prefix` is what the keys'
/// names start with in the file (`pin_` in a `[[cloth]]`, nothing in its `pin_groups`), for
/// the messages.
fn cloth_pins(
    b: &ModelBuilder,
    c: &ClothSection,
    body: &hooke::Body,
    grid: Option<(usize, usize)>,
    map: Option<&VertexMap>,
    key: &str,
    prefix: &str,
) -> Result<Vec<u32>, String> {
    let n = body.particles.len();
    let mut local = Vec::new();
    if grid.is_none() && (!c.pin_rows.is_empty() || !c.pin_columns.is_empty() || !c.pin_cells.is_empty()) {
        return Err(format!(
            "{key}: {prefix}rows, {prefix}columns and {prefix}cells apply to grids; a mesh cloth's pins are \
             {prefix}indices (vertices of the mesh file){}",
            if prefix.is_empty() { "" } else { " or pin_box" }
        ));
    }
    if let Some((rows, columns)) = grid {
        for &r in &c.pin_rows {
            let r = index(r, rows, &format!("{key}: {prefix}rows"))?;
            local.extend((0..columns).map(|col| r * columns + col));
        }
        for &col in &c.pin_columns {
            let col = index(col, columns, &format!("{key}: {prefix}columns"))?;
            local.extend((0..rows).map(|r| r * columns + col));
        }
        for &[r, col] in &c.pin_cells {
            let (r, col) = (
                index(r, rows, &format!("{key}: {prefix}cells"))?,
                index(col, columns, &format!("{key}: {prefix}cells"))?,
            );
            local.push(r * columns + col);
        }
    }
    for &i in &c.pin_indices {
        local.push(match map {
            Some(m) => {
                let v = index(i, m.vertex_count(), &format!("{key}: {prefix}indices (vertices of the mesh file)"))?;
                m.particle[v] as usize
            }
            None => index(i, n, &format!("{key}: {prefix}indices"))?,
        });
    }
    let first = body.particles.start as usize;
    let mut global: Vec<u32> = local.iter().map(|&l| (first + l) as u32).collect();
    if let Some(bx) = c.pin_box {
        let (lo, hi) = (vec3(bx.min, &format!("{key}: pin_box.min"))?, vec3(bx.max, &format!("{key}: pin_box.max"))?);
        if lo.cmpgt(hi).any() {
            return Err(format!("{key}: pin_box.min {lo} must not exceed pin_box.max {hi} on any axis"));
        }
        global.extend(body.particles.clone().filter(|&p| {
            let x = b.particle_position(p);
            x.cmpge(lo).all() && x.cmple(hi).all()
        }));
        if global.is_empty() {
            return Err(format!("{key}: pin_box contains no particle of this cloth"));
        }
    }
    Ok(global)
}

/// Adds `[[rope]]` number `k` and its pins.
fn add_rope(
    b: &mut ModelBuilder,
    f: &SceneFile,
    k: usize,
    r: &RopeSection,
    pins: &mut Vec<ScheduledPin>,
    warnings: &mut Vec<String>,
) -> Result<(), String> {
    let name = r.name.clone().unwrap_or(format!("rope{k}"));
    let key = format!("rope[{k}] {name:?}");
    let m = material(f, &r.material, &key)?;
    // The keys of a cloth's material that a rope has no use for, named as the file sets them.
    let cloth_only: Vec<&str> = [
        ("shear_stiffness", m.shear_stiffness.is_some()),
        ("thickness", m.thickness.is_some()),
        ("tear_strain", m.tear_strain.is_some()),
        ("tear_energy", m.tear_energy.is_some()),
    ]
    .into_iter()
    .filter_map(|(name, set)| set.then_some(name))
    .collect();
    if let Some((last, rest)) = cloth_only.split_last() {
        let (keys, verb) = match rest {
            [] => (last.to_string(), "is a cloth's key"),
            _ => (format!("{} and {last}", rest.join(", ")), "are cloth keys"),
        };
        return Err(format!(
            "{key}: material {:?} sets {keys}, which {verb}: a rope has no shear, thickness or tearing (give the \
             rope a material of its own)",
            r.material.as_deref().unwrap_or("")
        ));
    }
    let d = RopeMaterial::default();
    let stretch = m.stretch_stiffness.unwrap_or(d.stretch_stiffness);
    let mat = RopeMaterial {
        linear_density: m.density.unwrap_or(d.linear_density),
        stretch_stiffness: stretch,
        compression_stiffness: m.compression_stiffness.unwrap_or(stretch),
        bend_stiffness: m.bend_stiffness.unwrap_or(d.bend_stiffness),
        bending_modulus: m.bending_modulus.unwrap_or(d.bending_modulus),
        damping: m.damping.unwrap_or(d.damping),
        radius: m.radius.unwrap_or(d.radius),
        self_collision: r.self_collision.unwrap_or(false),
        self_friction: self_friction(&m, d.self_friction),
        self_collision_speed_clamp: r.self_collision_speed_clamp.unwrap_or(false),
    };
    if mat.self_collision_speed_clamp && !mat.self_collision {
        warnings.push(format!("{key}: self_collision_speed_clamp is set but self_collision is off: it clamps nothing"));
    }
    let bending = bending_model(r.bending.as_deref(), &m, &key, warnings)?;
    let points: Vec<Vec3> = match (&r.points, r.start, r.end) {
        (Some(p), None, None) => {
            p.iter().enumerate().map(|(i, &q)| vec3(q, &format!("{key}: points[{i}]"))).collect::<Result<_, _>>()?
        }
        (None, Some(a), Some(e)) => vec![vec3(a, &format!("{key}: start"))?, vec3(e, &format!("{key}: end"))?],
        _ => return Err(format!("{key}: give either `start` and `end`, or `points`")),
    };
    // The rope is laid out along the polyline's length: it must be a finite f32.
    let which = if r.points.is_some() { "points" } else { "start and end" };
    for w in points.windows(2) {
        if !(w[1] - w[0]).length().is_finite() {
            return Err(format!("{key}: {which}: {} to {} is too long: its length overflows f32", w[0], w[1]));
        }
    }
    let particles = count(r.particles, &format!("{key}: particles"))?;
    if let Some(w) = folded(&points, particles) {
        warnings.push(format!("{key}: {w}"));
    }
    let mut rope = Rope::polyline(name.clone(), points, particles);
    rope.material = mat;
    rope.bending = bending;
    rope.particle_mass = r.particle_mass;
    let id = b.add_rope(&rope).map_err(|e| e.to_string())?;
    let body = b.body(id).clone();
    if let Some(m) = r.end_mass {
        b.set_particle_mass(body.particles.end - 1, m).map_err(|e| format!("{key}: end_mass: {e}"))?;
    }
    let n = body.particles.len();
    let global = r
        .pin_indices
        .iter()
        .map(|&i| index(i, n, &format!("{key}: pin_indices")).map(|l| body.particles.start + l as u32))
        .collect::<Result<Vec<_>, _>>()?;
    if global.is_empty() && r.release_pins_at.is_some() {
        warnings.push(format!("{key}: release_pins_at is set but the rope has no pins"));
    }
    push_pins(pins, global, r.release_pins_at, &format!("{key}: release_pins_at"))
}

/// The turn at a rope polyline's point past which it folds back on itself (a warning), in
/// degrees.
const FOLD_DEGREES: f32 = 150.0;

/// Where a rope polyline of `particles` particles (laid out evenly along its length) turns
/// back on itself — by more than [`FOLD_DEGREES`] at a point, between legs each at least half
/// a particle spacing long — the warning that says so: the particles of the two legs start on
/// top of one another, most likely a slip in the points. Repeated points are passed over; a
/// step back shorter than that (rounding, a nub) is not a fold.
fn folded(points: &[Vec3], particles: usize) -> Option<String> {
    let length: f32 = points.windows(2).map(|w| (w[1] - w[0]).length()).sum();
    let spacing = length / particles.saturating_sub(1).max(1) as f32;
    // The legs of non-zero length, with the index of the point each starts at.
    let legs: Vec<(usize, Vec3, f32)> = points
        .windows(2)
        .enumerate()
        .filter_map(|(i, w)| {
            let d = w[1] - w[0];
            let l = d.length();
            (l > 0.0).then(|| (i, d / l, l))
        })
        .collect();
    legs.windows(2).find_map(|pair| {
        let ((_, a, la), (j, b, lb)) = (pair[0], pair[1]);
        let turn = a.dot(b).clamp(-1.0, 1.0).acos().to_degrees();
        (turn > FOLD_DEGREES && la.min(lb) >= 0.5 * spacing).then(|| {
            format!(
                "points[{j}] turns the rope back by {turn:.0}°: the particles of the two legs start on top of one \
                 another (a fold, not a bend)"
            )
        })
    })
}

/// The name of `[[collider]]` number `k`: its `name`, or its shape and number.
fn collider_name(k: usize, c: &ColliderSection) -> String {
    c.name.clone().unwrap_or(format!("{}{k}", c.shape))
}

/// Adds `[[collider]]` number `k`; returns its keyframed motion, if any.
fn add_collider(
    b: &mut ModelBuilder,
    k: usize,
    c: &ColliderSection,
    base_dir: Option<&Path>,
    warnings: &mut Vec<String>,
) -> Result<Option<Arc<Motion>>, String> {
    let name = collider_name(k, c);
    let key = format!("collider[{k}] {name:?}");
    let need = |v: Option<[f32; 3]>, field: &str| -> Result<Vec3, String> {
        vec3(v.ok_or(format!("{key}: a {} needs `{field}`", c.shape))?, &format!("{key}: {field}"))
    };
    let need_r = || c.radius.ok_or(format!("{key}: a {} needs `radius`", c.shape));
    let allowed: &[&str] = match c.shape.as_str() {
        "plane" => &["point", "normal"],
        "sphere" => &["center", "radius"],
        "capsule" => &["a", "b", "radius"],
        "box" => &["center", "half_extents", "rotation"],
        "mesh" => &["path", "scale", "center", "rotation", "resolution", "cell_size", "margin", "bounds", "sign"],
        other => return Err(format!("{key}: unknown shape {other:?} (expected plane, sphere, capsule, box or mesh)")),
    };
    let given = [
        ("point", c.point.is_some()),
        ("normal", c.normal.is_some()),
        ("center", c.center.is_some()),
        ("radius", c.radius.is_some()),
        ("a", c.a.is_some()),
        ("b", c.b.is_some()),
        ("half_extents", c.half_extents.is_some()),
        ("rotation", c.rotation.is_some()),
        ("path", c.path.is_some()),
        ("scale", c.scale.is_some()),
        ("resolution", c.resolution.is_some()),
        ("cell_size", c.cell_size.is_some()),
        ("margin", c.margin.is_some()),
        ("bounds", c.bounds.is_some()),
        ("sign", c.sign.is_some()),
    ];
    if let Some((field, _)) = given.iter().find(|(f, set)| *set && !allowed.contains(f)) {
        return Err(format!("{key}: `{field}` does not apply to a {}", c.shape));
    }
    let mut surface = None;
    let shape = match c.shape.as_str() {
        "plane" => Shape::Plane { point: need(c.point, "point")?, normal: need(c.normal, "normal")? },
        "sphere" => Shape::Sphere { center: need(c.center, "center")?, radius: need_r()? },
        "capsule" => {
            let (a, b) = (need(c.a, "a")?, need(c.b, "b")?);
            if a == b {
                warnings.push(format!("{key}: a and b are the same point: the capsule is a sphere"));
            }
            Shape::Capsule { a, b, radius: need_r()? }
        }
        "mesh" => {
            let (shape, mesh) = mesh_shape(c, &key, base_dir, warnings)?;
            surface = Some(mesh);
            shape
        }
        _ => Shape::Box {
            center: need(c.center, "center")?,
            half_extents: need(c.half_extents, "half_extents")?,
            rotation: rotation(c.rotation, &format!("{key}: rotation"))?,
        },
    };
    let mu_s = c.static_friction.unwrap_or(0.0);
    let mu_k = c.kinetic_friction.unwrap_or(mu_s);
    if mu_k > mu_s {
        // Allowed, but not physical: a contact sliding less than μₖ·d per substep is stopped by
        // the kinetic clamp, so it sticks up to μₖ and μₛ has no effect. Probably swapped values.
        warnings.push(format!(
            "{key}: kinetic_friction μₖ = {mu_k} exceeds static_friction μₛ = {mu_s}: contacts then stick up \
             to μₖ and μₛ has no effect; real materials have μₖ ≤ μₛ (swapped values?)"
        ));
    }
    let motion = keyframed(&c.keyframes, &key)?;
    let mut collider = Collider::new(name, shape).with_friction(mu_s, mu_k);
    if let Some(surface) = surface {
        collider = collider.with_surface(surface);
    }
    b.add_collider(collider).map_err(|e| e.to_string())?;
    Ok((!motion.keys().is_empty()).then(|| Arc::new(motion)))
}

/// The motion of `keyframes` (a collider's, or a pin group's; `key` names them in errors).
fn keyframed(keyframes: &[KeyframeSection], key: &str) -> Result<Motion, String> {
    let keys = keyframes
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let at = format!("{key}: keyframes[{i}]");
            let translation = vec3(k.translation.unwrap_or([0.0; 3]), &format!("{at}.translation"))?;
            // The scene's reach (a grid's, a mesh's): beyond it f32 positions round by metres.
            if translation.abs().max_element() > 1e9 {
                return Err(format!(
                    "{at}.translation: {translation} m reaches beyond 1e9 m from where it starts; a motion must stay \
                     within 1e9 m"
                ));
            }
            Ok(Keyframe { time: k.time, translation, rotation: rotation(k.rotation, &format!("{at}.rotation"))? })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Motion::new(keys).map_err(|e| format!("{key}: {e}"))
}

/// The signed distance grid of a `shape = "mesh"` collider (built or read from its cache), and
/// the mesh it is sampled from, to draw.
fn mesh_shape(
    c: &ColliderSection,
    key: &str,
    base_dir: Option<&Path>,
    warnings: &mut Vec<String>,
) -> Result<(Shape, Arc<hooke::collision::ColliderSurface>), String> {
    use hooke::collision::{GridResolution, SignMethod};
    let path = c.path.as_ref().ok_or(format!("{key}: a mesh needs `path` (an OBJ file)"))?;
    let resolution = match (c.resolution, c.cell_size) {
        (Some(_), Some(_)) => return Err(format!("{key}: give `resolution` or `cell_size`, not both")),
        (Some(n), None) => GridResolution::Cells(
            u32::try_from(n)
                .ok()
                .filter(|&n| n >= 2)
                .ok_or(format!("{key}: resolution: must be a number of cells ≥ 2, got {n}"))?,
        ),
        (None, Some(h)) => GridResolution::CellSize(h),
        (None, None) => GridResolution::Cells(64),
    };
    let sign = match c.sign.as_deref() {
        None | Some("pseudo-normals") => SignMethod::PseudoNormals,
        Some("winding-number") => SignMethod::WindingNumber,
        Some(other) => {
            return Err(format!(
                "{key}: sign: unknown method {other:?} (expected \"pseudo-normals\" or \"winding-number\")"
            ));
        }
    };
    let spec = crate::mesh_collider::MeshColliderSpec {
        path: base_dir.map_or_else(|| PathBuf::from(path), |d| d.join(path)),
        scale: c.scale.unwrap_or(1.0),
        rotation: rotation(c.rotation, &format!("{key}: rotation"))?,
        translation: vec3(c.center.unwrap_or([0.0; 3]), &format!("{key}: center"))?,
        resolution,
        margin: c.margin,
        bounds: match c.bounds {
            Some(_) if c.margin.is_some() => {
                return Err(format!(
                    "{key}: `bounds` and `margin` both given; the bounds set the grid's box, give one"
                ));
            }
            Some([lo, hi]) => Some([vec3(lo, &format!("{key}: bounds"))?, vec3(hi, &format!("{key}: bounds"))?]),
            None => None,
        },
        sign,
    };
    let loaded = crate::mesh_collider::load_mesh_collider(&spec).map_err(|e| format!("{key}: {e}"))?;
    warnings.extend(loaded.warnings.into_iter().map(|w| format!("{key}: {w}")));
    Ok((Shape::Sdf(loaded.grid), loaded.surface))
}

/// Schedules the pins `global`, released at `release_at` (s), the value of the key `key` names.
fn push_pins(pins: &mut Vec<ScheduledPin>, global: Vec<u32>, release_at: Option<f64>, key: &str) -> Result<(), String> {
    if let Some(t) = release_at
        && !(t.is_finite() && t >= 0.0)
    {
        return Err(format!("{key}: must be a time ≥ 0 s, got {t}"));
    }
    for p in global {
        if !pins.iter().any(|q: &ScheduledPin| q.pin.particle == p) {
            pins.push(ScheduledPin { pin: Pin { particle: p, target: None }, release_at, motion: None });
        }
    }
    Ok(())
}

/// Checks that one substep of the scene's motion can be simulated: `model` stepped at
/// `fps` frames a second of `substeps` substeps each, under the blow-up speed limit
/// `max_speed` (m/s). A gravity that passes the limit within one substep blows the run up in
/// its first substep — and a collider below the cloth hides it: the sweep along a path of that
/// length rounds to its start in f32 and the contact stops the particle there, so the run
/// ended with the cloth frozen in the air and no error. Likewise, where there are colliders,
/// a particle whose path in one substep is longer than their sweep resolves to a millimetre
/// in f32 (2⁻²³ of the path: about 8 km).
///
/// # Errors
/// A message naming the gravity or the fastest particle's body and what would help.
pub(super) fn check_step(model: &hooke::Model, fps: f32, substeps: u32, max_speed: f32) -> Result<(), String> {
    let h = 1.0 / (fps * substeps as f32);
    let (world, strongest) = model
        .worlds()
        .iter()
        .enumerate()
        .map(|(w, world)| (w, world.gravity.length()))
        .fold((0, 0.0f32), |best, (w, g)| if g > best.1 { (w, g) } else { best });
    let key = if world == 0 { "gravity".to_string() } else { format!("world[{world}]: gravity") };
    if strongest * h > max_speed {
        return Err(format!(
            "{key}: |g| = {strongest:e} m/s² takes a particle past the blow-up speed limit ({max_speed} m/s) within one \
             substep ({h:.3e} s at {fps} fps and {substeps} substeps): give more solver.substeps or a weaker gravity \
             (under {:e} m/s² at this step), or raise solver.max_speed",
            max_speed / h
        ));
    }
    if model.colliders().is_empty() {
        return Ok(());
    }
    const SWEEP_TOLERANCE: f32 = 1e-3;
    let longest = SWEEP_TOLERANCE / f32::EPSILON;
    let (fastest, speed) = model
        .particle_velocity()
        .iter()
        .enumerate()
        .map(|(k, v)| (k, v.length()))
        .fold((0, 0.0f32), |best, (k, v)| if v > best.1 { (k, v) } else { best });
    let path = (speed + strongest * h) * h;
    if path > longest {
        let why = if speed >= strongest * h {
            let body = model.body_of_particle(fastest as u32).map(|b| format!(" of {:?}", b.name)).unwrap_or_default();
            format!("velocity: a particle{body} starts at {speed:e} m/s")
        } else {
            format!("{key}: |g| = {strongest:e} m/s² speeds a particle up to {:e} m/s", strongest * h)
        };
        return Err(format!(
            "{why}, {path:e} m in one substep ({h:.3e} s at {fps} fps and {substeps} substeps): longer than the colliders \
             can be swept along to a millimetre in f32 ({longest:e} m); give more solver.substeps or a lower speed"
        ));
    }
    Ok(())
}

/// [`check_step`] for a scene whose frame rate or substeps were changed after it was loaded
/// (`hooke run --fps`, `hooke bench --substeps`).
///
/// # Errors
/// As [`check_step`].
pub fn check_scene_step(scene: &Scene) -> Result<(), String> {
    check_step(&scene.model, scene.fps, scene.solver.substeps(), scene.solver.max_speed())
}
