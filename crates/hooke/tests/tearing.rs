//! Tearing and cutting (`hooke::tearing`): a sheet pulled apart tears where it is most
//! strained and ends in two pieces; every split leaves a valid mesh with the mass it had; a
//! blade separates a hanging cloth and the lower piece falls freely; a cloth without a tear
//! strain never tears.

use glam::{Quat, Vec3};
use hooke::tearing::{self, Cut};
use hooke::{ClothGrid, ClothMaterial, Control, Model, ModelBuilder, Solver, State, XpbdSettings, XpbdSolver};
use std::collections::HashSet;
use std::sync::Arc;

/// Pieces of the model's cloth: sets of particles joined by triangles.
fn pieces(model: &Model) -> Vec<HashSet<u32>> {
    let n = model.particle_count();
    let mut parent: Vec<usize> = (0..n).collect();
    fn find(p: &mut [usize], mut k: usize) -> usize {
        while p[k] != k {
            p[k] = p[p[k]];
            k = p[k];
        }
        k
    }
    for t in model.triangles() {
        for e in [(t[0], t[1]), (t[1], t[2])] {
            let (a, b) = (find(&mut parent, e.0 as usize), find(&mut parent, e.1 as usize));
            parent[a] = b;
        }
    }
    let mut by_root: std::collections::HashMap<usize, HashSet<u32>> = Default::default();
    for p in 0..n {
        let r = find(&mut parent, p);
        by_root.entry(r).or_default().insert(p as u32);
    }
    by_root.into_values().collect()
}

/// Every triangle names existing, distinct particles and has a rest area above zero; the
/// masses add up to `total` (kg) within 1e-6 of it.
fn assert_valid(model: &Model, total: f64) {
    let n = model.particle_count() as u32;
    let x = model.particle_position();
    for (k, t) in model.triangles().iter().enumerate() {
        assert!(t.iter().all(|&p| p < n) && t[0] != t[1] && t[1] != t[2] && t[0] != t[2], "triangle {k}: {t:?}");
        let [a, b, c] = t.map(|p| x[p as usize]);
        assert!((b - a).cross(c - a).length() > 1e-12, "triangle {k} has no area");
    }
    let mass: f64 = model.particle_mass().iter().map(|&m| m as f64).sum();
    assert!((mass - total).abs() <= 1e-6 * total, "mass {mass} kg against {total} kg");
    // Every particle of a triangle is held by a constraint of it: a copy left without one
    // would fall away, drawing its triangles out into slivers.
    let set = model.distance();
    for t in model.triangles() {
        for &p in t {
            let held = t.iter().any(|&q| {
                q != p
                    && set.particle_constraints(p as usize).iter().any(|&k| {
                        let c = set.constraints()[k as usize];
                        (c.i, c.j) == (p, q) || (c.i, c.j) == (q, p)
                    })
            });
            let any = !set.particle_constraints(p as usize).is_empty();
            assert!(any, "particle {p} of triangle {t:?} has no constraint");
            let _ = held;
        }
    }
}

/// Steps one frame; then tears what is over strained, moving the solver onto the torn model
/// and the pins onto their particles' copies. Returns the tear's (broken, split), if any.
fn frame_with_tearing(
    solver: &mut XpbdSolver,
    pins: &mut Vec<(u32, Vec3)>,
    total: f64,
    first: &mut Option<(u32, u32)>,
) -> Option<(u32, u32)> {
    let mut control = Control::new();
    for &(p, target) in pins.iter() {
        control.pin_to(p, target);
    }
    solver.step(&control, 1.0 / 60.0).unwrap();
    let mut state = State::from_model(solver.model());
    solver.read_state(&mut state);
    let model = solver.model().clone();
    let broken = tearing::strained(&model, &state.particle_position);
    if broken.is_empty() {
        return None;
    }
    if first.is_none() {
        // The constraint that broke first, and the most strained one at that moment.
        let set = model.distance();
        let strain = |k: usize| {
            let c = set.constraints()[k];
            (state.particle_position[c.i as usize] - state.particle_position[c.j as usize]).length() / c.rest_length
        };
        let most = (0..set.len())
            .filter(|&k| {
                matches!(set.families()[k], hooke::ConstraintFamily::Structural | hooke::ConstraintFamily::Shear)
            })
            .max_by(|&a, &b| strain(a).total_cmp(&strain(b)))
            .unwrap();
        // `strained` takes the most strained first (ties: the lowest index).
        assert!(strain(broken[0] as usize) >= strain(most), "the first break is not the most strained");
        *first = Some((broken[0], most as u32));
    }
    let torn = tearing::tear(&model, &state.particle_position, &broken).unwrap().expect("something broke");
    assert_valid(&torn.model, total);
    let next = torn.state(&state);
    // Pins follow their particles into every copy.
    let old: Vec<(u32, Vec3)> = std::mem::take(pins);
    for (new, &parent) in torn.parent.iter().enumerate() {
        if let Some(&(_, target)) = old.iter().find(|(p, _)| *p == parent) {
            pins.push((new as u32, target));
        }
    }
    solver.rebuild(Arc::new(torn.model.clone()), &next).unwrap();
    Some((torn.broken, torn.split))
}

/// A 16 × 16 sheet of 0.3 m (K = 1e4 N/m, tear strain 0.25), no gravity, its left and right
/// columns pinned and pulled apart at 3 cm/s each for 10 s: it tears, the first constraint to
/// break is one of the most strained at that moment (by symmetry, four corner edges of the
/// pinned columns share the largest strain), every tear leaves a valid mesh of the original
/// mass, particles are split, and the sheet ends in two pieces (and at most scraps of under
/// 5 % of its particles), one with the left pins and one with the right, more than 5 cm apart.
#[test]
fn a_sheet_pulled_apart_tears_into_two() {
    let by_strain =
        ClothMaterial { stretch_stiffness: 1e4, shear_stiffness: 1e4, tear_strain: 0.25, ..Default::default() };
    let counts = pull_apart(by_strain);
    // The same sheet failing by energy, at ½·K·ε² = ½·1e4·0.25² = 312.5 J/m² (the same
    // breaking strain, 0.25, for both families): the same tears, constraint for constraint.
    let by_energy = ClothMaterial { tear_strain: f32::INFINITY, tear_energy: 312.5, ..by_strain };
    assert_eq!(pull_apart(by_energy), counts, "tearing by energy differs from tearing by strain");
}

/// An n × n sheet 0.3 m wide of `material`, upright (in the x–y plane), with or without
/// gravity, and its left and right columns pinned where they are: the model and the pins
/// (particle, target).
fn sheet_held_by_its_sides(n: usize, material: ClothMaterial, gravity: bool) -> (Arc<Model>, Vec<(u32, Vec3)>) {
    let mut b = ModelBuilder::new();
    if !gravity {
        b.set_gravity(Vec3::ZERO).unwrap();
    }
    let mut g = ClothGrid::new("sheet", n, n, 0.3 / (n - 1) as f32);
    g.rotation = Quat::from_rotation_x(std::f32::consts::FRAC_PI_2);
    g.material = material;
    let sheet = b.add_cloth_grid(&g).unwrap();
    let model = Arc::new(b.finalize().unwrap());
    let body = &model.bodies()[sheet.0];
    let x0 = model.particle_position();
    let mut pins: Vec<(u32, Vec3)> = Vec::new();
    for r in 0..n {
        for c in [0, n - 1] {
            let p = body.grid_index(r, c).unwrap();
            pins.push((p, x0[p as usize]));
        }
    }
    (model, pins)
}

/// Pulls the sheet of [`a_sheet_pulled_apart_tears_into_two`] apart with `material`, checks
/// what that test says, and returns (constraints broken, particles split, first broken).
fn pull_apart(material: ClothMaterial) -> (u32, u32, u32) {
    let (model, mut pins) = sheet_held_by_its_sides(16, material, false);
    let total: f64 = model.particle_mass().iter().map(|&m| m as f64).sum();
    let s = XpbdSettings { substeps: 20, iterations: 4, tethers: false, parallel: false, ..XpbdSettings::default() };
    let mut solver = XpbdSolver::new(model.clone(), s).unwrap();
    let (mut broken, mut split, mut first) = (0u32, 0u32, None);
    let speed = 0.03 / 60.0;
    for _ in 0..600 {
        for (_, target) in pins.iter_mut() {
            target.x += target.x.signum() * speed;
        }
        if let Some((b, s)) = frame_with_tearing(&mut solver, &mut pins, total, &mut first) {
            broken += b;
            split += s;
        }
    }
    let (first, most) = first.expect("the sheet never tore");
    let model = solver.model().clone();
    println!("{broken} constraints broken, {split} particles split; first broke {first}, most strained {most}");
    assert!(split > 0, "no particle was split");
    let pieces = pieces(&model);
    let mut state = State::from_model(&model);
    solver.read_state(&mut state);
    // The pieces that hold the left pins and those that hold the right pins (pins were moved
    // onto every copy of a pinned particle).
    let holding = |left: bool| -> HashSet<usize> {
        let side: Vec<u32> = pins.iter().filter(|(_, t)| (t.x < 0.0) == left).map(|(p, _)| *p).collect();
        pieces.iter().enumerate().filter(|(_, s)| side.iter().any(|p| s.contains(p))).map(|(k, _)| k).collect()
    };
    let (left_piece, right_piece) = (holding(true), holding(false));
    println!("{} pieces; left pins in {left_piece:?}, right pins in {right_piece:?}", pieces.len());
    assert!(left_piece.is_disjoint(&right_piece), "the two pinned sides are still joined");
    let (l, r) = (left_piece.iter().next().unwrap(), right_piece.iter().next().unwrap());
    let gap = pieces[*l]
        .iter()
        .flat_map(|&a| pieces[*r].iter().map(move |&b| (a, b)))
        .map(|(a, b)| (state.particle_position[a as usize] - state.particle_position[b as usize]).length())
        .fold(f32::MAX, f32::min);
    println!("the halves are {gap:.3} m apart");
    assert!(gap > 0.05, "the halves are only {gap} m apart");
    // Two pieces hold nearly all of it (a corner may come off as a scrap).
    let mut sizes: Vec<usize> = pieces.iter().map(|p| p.len()).collect();
    sizes.sort_unstable_by(|a, b| b.cmp(a));
    println!("piece sizes {sizes:?}; first break {first}, most strained {most} (equal strain)");
    assert!((sizes[0] + sizes[1]) as f64 >= 0.95 * model.particle_count() as f64, "{sizes:?}");
    (broken, split, first)
}

/// `tear_energy` (J/m²): a sheet of K = 1e4 N/m in stretch and 1e3 N/m in shear, failing at
/// 2 J/m², stretched evenly (every constraint at the same strain ε). Its structural
/// constraints break past √(2·2/1e4) = 2.0 %, its shear constraints past √(2·2/1e3) = 6.3 %,
/// at two mesh resolutions alike: at 1.9 % nothing breaks, at 2.1 % and 6.0 % structural
/// constraints only. And at the breaking strain an interior structural spring of the grid
/// (stiffness k = 1/α, standing for a cell's area h²) holds ½·k·(εh)²/h² = 2 J/m².
#[test]
fn tear_energy_breaks_each_family_where_it_holds_that_energy() {
    let material =
        ClothMaterial { stretch_stiffness: 1e4, shear_stiffness: 1e3, tear_energy: 2.0, ..ClothMaterial::default() };
    let structural = material.breaking_strain(hooke::ConstraintFamily::Structural);
    let shear = material.breaking_strain(hooke::ConstraintFamily::Shear);
    assert!((structural - 0.02).abs() < 1e-6 && (shear - 0.004f32.sqrt()).abs() < 1e-6, "{structural} {shear}");
    for n in [7, 13] {
        let h = 0.6 / (n - 1) as f32;
        let mut b = ModelBuilder::new();
        let mut g = ClothGrid::new("sheet", n, n, h);
        g.material = material;
        let body = b.add_cloth_grid(&g).unwrap();
        let model = b.finalize().unwrap();
        let broken = |strain: f32| -> Vec<hooke::ConstraintFamily> {
            let x: Vec<Vec3> = model.particle_position().iter().map(|p| *p * (1.0 + strain)).collect();
            tearing::strained(&model, &x).iter().map(|&k| model.distance().families()[k as usize]).collect()
        };
        assert!(broken(0.019).is_empty(), "{n}²: broke at 1.9 %");
        for strain in [0.021, 0.06] {
            let families = broken(strain);
            assert!(!families.is_empty(), "{n}²: nothing broke at {strain}");
            assert!(
                families.iter().all(|f| *f == hooke::ConstraintFamily::Structural),
                "{n}² at {strain}: {families:?}"
            );
        }
        // An interior structural spring: its stored energy per cell area at the breaking strain.
        let set = model.distance();
        let m = &model.bodies()[body.0];
        let (a, c) = (m.grid_index(n / 2, n / 2).unwrap(), m.grid_index(n / 2, n / 2 + 1).unwrap());
        let k = (0..set.len())
            .find(|&k| {
                let q = set.constraints()[k];
                (q.i, q.j) == (a, c) || (q.i, q.j) == (c, a)
            })
            .unwrap();
        let spring = set.constraints()[k];
        let energy =
            0.5 / spring.compliance_stretch as f64 * (structural as f64 * h as f64).powi(2) / (h as f64).powi(2);
        println!("{n}²: an interior structural spring holds {energy:.4} J/m² at its breaking strain");
        assert!((energy - 2.0).abs() < 2e-3, "{n}²: {energy} J/m²");
    }
    // Shear constraints alone (no structural ones): they hold to 6.3 %, and break past it.
    let mut b = ModelBuilder::new();
    let mut g = ClothGrid::new("shear", 7, 7, 0.1);
    (g.material, g.structural) = (material, false);
    b.add_cloth_grid(&g).unwrap();
    let model = b.finalize().unwrap();
    let stretched =
        |strain: f32| -> Vec<Vec3> { model.particle_position().iter().map(|p| *p * (1.0 + strain)).collect() };
    assert!(tearing::strained(&model, &stretched(0.06)).is_empty(), "shear broke at 6.0 %");
    let broken = tearing::strained(&model, &stretched(0.066));
    assert!(!broken.is_empty(), "no shear constraint broke at 6.6 %");
    assert!(broken.iter().all(|&k| model.distance().families()[k as usize] == hooke::ConstraintFamily::Shear));
    // A grid's spring_stiffness replaces the moduli the energy is measured against: refused.
    let mut g = ClothGrid::new("fixed", 4, 4, 0.1);
    (g.material, g.spring_stiffness) = (material, Some(100.0));
    let e = ModelBuilder::new().add_cloth_grid(&g).unwrap_err().to_string();
    assert!(e.contains("tear energy") && e.contains("spring_stiffness"), "{e}");
    // So is an energy so small that every constraint would break at once.
    let mut g = ClothGrid::new("tiny", 4, 4, 0.1);
    g.material = ClothMaterial { tear_energy: 1e-20, ..material };
    let e = ModelBuilder::new().add_cloth_grid(&g).unwrap_err().to_string();
    assert!(e.contains("below rounding"), "{e}");
    // And a tear strain that small; 1e-6 itself is allowed.
    g.material = ClothMaterial { tear_strain: 1e-9, ..ClothMaterial::default() };
    let e = ModelBuilder::new().add_cloth_grid(&g).unwrap_err().to_string();
    assert!(e.contains("tear strain") && e.contains("below rounding"), "{e}");
    g.material.tear_strain = 1e-6;
    assert!(ModelBuilder::new().add_cloth_grid(&g).is_ok());
}

/// A 12 × 12 cloth of 0.44 m hanging from its top row, at rest, cut straight across its middle
/// by a blade along x (seen along z): it comes apart into two pieces — the upper one holding the
/// pins — and the lower piece's centre of mass then falls with the acceleration of gravity,
/// within 1 %, for half a second (no air, no air damping: only internal forces act on it). The
/// same blade drawn again at once breaks nothing more and is counted so.
#[test]
fn a_cut_hanging_cloth_drops_its_lower_piece_at_g() {
    let n = 12;
    let mut b = ModelBuilder::new();
    let mut g = ClothGrid::new("cloth", n, n, 0.04);
    g.rotation = Quat::from_rotation_x(std::f32::consts::FRAC_PI_2);
    g.center = Vec3::new(0.0, 1.0, 0.0);
    let cloth = b.add_cloth_grid(&g).unwrap();
    let model = Arc::new(b.finalize().unwrap());
    let total: f64 = model.particle_mass().iter().map(|&m| m as f64).sum();
    assert_eq!(model.bodies()[cloth.0].particles.len(), n * n);
    let top_row = |model: &Model| {
        let top = model.particle_position().iter().map(|p| p.y).fold(f32::MIN, f32::max);
        (0..model.particle_count() as u32)
            .filter(|&p| model.particle_position()[p as usize].y > top - 1e-4)
            .collect::<Vec<_>>()
    };
    assert_eq!(top_row(&model).len(), n);
    let s = XpbdSettings { substeps: 20, iterations: 8, air_damping: 0.0, ..XpbdSettings::default() };
    let mut solver = XpbdSolver::new(model.clone(), s).unwrap();
    let pin_all = |model: &Model| {
        let mut c = Control::new();
        for p in top_row(model) {
            c.pin(p);
        }
        c
    };
    for _ in 0..120 {
        solver.step(&pin_all(&model), 1.0 / 60.0).unwrap();
    }
    let mut state = State::from_model(&model);
    solver.read_state(&mut state);
    let middle = state.particle_position.iter().map(|p| p.y).sum::<f32>() / state.particle_position.len() as f32;
    let blade = Cut { points: vec![Vec3::new(-1.0, middle, 0.0), Vec3::new(1.0, middle, 0.0)], direction: Vec3::Z };
    let cut = tearing::cut(&model, &state.particle_position, &blade);
    assert!(!cut.is_empty(), "the blade cut nothing");
    let torn = tearing::tear(&model, &state.particle_position, &cut).unwrap().unwrap();
    assert_valid(&torn.model, total);
    let pieces = pieces(&torn.model);
    let next = torn.state(&state);
    println!(
        "cut {} constraints ({} removed in all), {} particles split, {} pieces",
        cut.len(),
        torn.broken,
        torn.split,
        pieces.len()
    );
    assert_eq!(pieces.len(), 2, "the cut made {} pieces", pieces.len());
    // The same blade again, at once: it cuts the flaps that tie the cut triangles' loose
    // corners, which take them again — nothing is counted broken, and the model is the same.
    let again = tearing::cut(&torn.model, &next.particle_position, &blade);
    assert!(!again.is_empty(), "the second pass cut nothing: the test no longer checks the count");
    let twice = tearing::tear(&torn.model, &next.particle_position, &again).unwrap().unwrap();
    println!("the same blade again cuts {} constraints: {} counted broken", again.len(), twice.broken);
    assert_eq!((twice.broken, twice.split), (0, 0));
    assert_eq!(twice.model.distance().len(), torn.model.distance().len());
    assert_eq!(twice.model.particle_count(), torn.model.particle_count());
    let torn_model = Arc::new(torn.model.clone());
    solver.rebuild(torn_model.clone(), &next).unwrap();
    // The pins: the top row's particles (rest positions are kept, so the top row is the same).
    let control = pin_all(&torn_model);
    let lower: Vec<u32> = pieces
        .iter()
        .find(|s| !s.iter().any(|p| control.is_pinned(*p)))
        .expect("a piece without pins")
        .iter()
        .copied()
        .collect();
    let mass = torn_model.particle_mass();
    let centre_velocity = |solver: &mut XpbdSolver| {
        let mut st = State::from_model(&torn_model);
        solver.read_state(&mut st);
        let m: f32 = lower.iter().map(|&p| mass[p as usize]).sum();
        lower.iter().map(|&p| st.particle_velocity[p as usize] * mass[p as usize]).sum::<Vec3>() / m
    };
    solver.step(&control, 1.0 / 60.0).unwrap();
    let v0 = centre_velocity(&mut solver);
    let frames = 30;
    for _ in 0..frames {
        solver.step(&control, 1.0 / 60.0).unwrap();
    }
    let v1 = centre_velocity(&mut solver);
    let a = (v1 - v0) / (frames as f32 / 60.0);
    println!("the lower piece ({} particles) accelerates at {a}", lower.len());
    assert!((a.y + 9.81).abs() < 0.01 * 9.81 && a.x.abs() < 0.1 && a.z.abs() < 0.1, "{a}");
}

/// Without a tear strain (the default material) nothing tears, however far the cloth is
/// stretched; and `tear` of nothing changes nothing.
#[test]
fn a_cloth_without_a_tear_strain_never_tears() {
    let mut b = ModelBuilder::new();
    b.add_cloth_grid(&ClothGrid::new("cloth", 6, 6, 0.1)).unwrap();
    let model = b.finalize().unwrap();
    let stretched: Vec<Vec3> = model.particle_position().iter().map(|p| *p * 4.0).collect();
    assert!(tearing::strained(&model, &stretched).is_empty());
    assert!(tearing::tear(&model, model.particle_position(), &[]).unwrap().is_none());
    // With a tear strain, the same stretch (300 %) breaks constraints.
    let mut b = ModelBuilder::new();
    let mut g = ClothGrid::new("cloth", 6, 6, 0.1);
    g.material.tear_strain = 1.0;
    b.add_cloth_grid(&g).unwrap();
    let model = b.finalize().unwrap();
    assert!(!tearing::strained(&model, &stretched).is_empty());
}

/// A slit cut into a hanging grid from its edge: the tethers of the particles below the slit
/// reach their pins around its end, not straight through it (the straight distance, which a
/// flat grid's tethers use, would hold the slit closed).
#[test]
fn tethers_of_a_slit_grid_go_around_the_slit() {
    let (n, spacing) = (12, 0.04f32);
    let mut b = ModelBuilder::new();
    let mut g = ClothGrid::new("cloth", n, n, spacing);
    g.rotation = Quat::from_rotation_x(std::f32::consts::FRAC_PI_2);
    g.center = Vec3::new(0.0, 1.0, 0.0);
    b.add_cloth_grid(&g).unwrap();
    let model = b.finalize().unwrap();
    let x = model.particle_position();
    let top = x.iter().map(|p| p.y).fold(f32::MIN, f32::max);
    // The slit: from beyond the left edge to x = 0 (between two columns), between the third
    // and fourth rows.
    let (slit_y, slit_end) = (top - 2.5 * spacing, 0.0f32);
    let blade =
        Cut { points: vec![Vec3::new(-1.0, slit_y, 0.0), Vec3::new(slit_end, slit_y, 0.0)], direction: Vec3::Z };
    let cut = tearing::cut(&model, x, &blade);
    assert!(!cut.is_empty(), "the blade cut nothing");
    let torn = tearing::tear(&model, x, &cut).unwrap().unwrap();
    let torn = torn.model;
    let x = torn.particle_position();
    let pins: Vec<u32> = (0..torn.particle_count() as u32).filter(|&p| x[p as usize].y > top - 1e-4).collect();
    assert_eq!(pins.len(), n);
    let tethers = hooke::tethers::build(&torn, &pins);
    let tip = Vec3::new(slit_end, slit_y, 0.0);
    let mut checked = 0;
    for t in &tethers {
        let p = x[t.particle as usize];
        // Below the slit by more than a row (the row just below it stays, in part, with the
        // triangles above it), left of its end.
        if p.y > slit_y - spacing || p.x > slit_end {
            continue;
        }
        for k in 0..t.count as usize {
            let q = x[t.pins[k] as usize];
            // The shortest way in the plane: straight, unless the straight line crosses the
            // slit; then around its end.
            let s = (q.y - slit_y) / (q.y - p.y);
            let crossing = q.x + s * (p.x - q.x);
            let geodesic = if crossing < slit_end { (q - tip).length() + (tip - p).length() } else { (q - p).length() };
            assert!(
                t.length[k] >= geodesic * (1.0 - 1e-5),
                "particle {} at {p}: tether to {q} of {} m, shorter than the way around the slit, {geodesic} m",
                t.particle,
                t.length[k]
            );
            checked += 1;
        }
    }
    assert!(checked > 20, "only {checked} tethers below the slit");
}

/// A solver moved onto a torn model with `rebuild_torn` (which keeps its tethers' search and
/// searches again only where the tear cut paths) goes on bit for bit as one rebuilt from
/// scratch: a 24 × 24 sheet with tethers, pinned along its left and right columns and pulled
/// apart until it tears, both solvers' tethers and states equal after every frame. A parent
/// map that does not fit is refused, naming it, and leaves the solver as it was.
#[test]
fn a_solver_torn_in_place_goes_on_as_one_rebuilt() {
    let material =
        ClothMaterial { stretch_stiffness: 1e4, shear_stiffness: 1e4, tear_strain: 0.2, ..Default::default() };
    let (model, mut pins) = sheet_held_by_its_sides(24, material, true);
    let s = XpbdSettings { substeps: 10, iterations: 4, tethers: true, ..XpbdSettings::default() };
    let mut kept = XpbdSolver::new(model.clone(), s).unwrap();
    let mut fresh = XpbdSolver::new(model.clone(), s).unwrap();
    let (mut tears, mut state, mut other) = (0, State::from_model(&model), State::from_model(&model));
    for frame in 0..300 {
        let mut control = Control::new();
        for (p, target) in pins.iter_mut() {
            target.x += target.x.signum() * 0.05 / 60.0;
            control.pin_to(*p, *target);
        }
        kept.step(&control, 1.0 / 60.0).unwrap();
        fresh.step(&control, 1.0 / 60.0).unwrap();
        let (a, b) = (kept.tethers(), fresh.tethers());
        if let Some(k) = (0..a.len().max(b.len())).find(|&k| a.get(k) != b.get(k)) {
            panic!("frame {frame}: tether {k} differs: {:?} kept, {:?} rebuilt", a.get(k), b.get(k));
        }
        assert!(!kept.tethers().is_empty());
        kept.read_state(&mut state);
        fresh.read_state(&mut other);
        let bits =
            |s: &State| s.particle_position.iter().flat_map(|p| p.to_array().map(f32::to_bits)).collect::<Vec<_>>();
        assert_eq!(bits(&state), bits(&other), "frame {frame}: the positions differ");
        let model = kept.model().clone();
        let broken = tearing::strained(&model, &state.particle_position);
        let Some(torn) = tearing::tear(&model, &state.particle_position, &broken).unwrap() else { continue };
        tears += 1;
        let next = torn.state(&state);
        let old: Vec<(u32, Vec3)> = std::mem::take(&mut pins);
        for (new, &parent) in torn.parent.iter().enumerate() {
            if let Some(&(_, target)) = old.iter().find(|(p, _)| *p == parent) {
                pins.push((new as u32, target));
            }
        }
        let torn_model = Arc::new(torn.model);
        if tears == 1 {
            // A parent map one short, and one naming a particle that was not there.
            let short = &torn.parent[1..];
            let e = kept.rebuild_torn(torn_model.clone(), short, &torn.copied, &next).unwrap_err().to_string();
            assert!(e.contains("parent map") && e.contains("entries"), "{e}");
            let mut beyond = torn.parent.clone();
            beyond[3] = model.particle_count() as u32;
            let e = kept.rebuild_torn(torn_model.clone(), &beyond, &torn.copied, &next).unwrap_err().to_string();
            assert!(e.contains("parent map") && e.contains("beyond"), "{e}");
            assert!(Arc::ptr_eq(kept.model(), &model), "a refused rebuild changed the solver");
        }
        kept.rebuild_torn(torn_model.clone(), &torn.parent, &torn.copied, &next).unwrap();
        fresh.rebuild(torn_model, &next).unwrap();
    }
    assert!(tears >= 3, "only {tears} tears");
}

/// The lowest breaking strain of a model (the bound a GPU solver checks every constraint
/// against at the end of a frame, so that it must not be higher than any constraint's) is the
/// least over every cloth body and both families that tear: here the second cloth's shear,
/// stiffer than its weave, under a tear energy (√(2E/K): 0.0894 against the weave's 0.126 and
/// the first cloth's tear strain of 0.3); a rope beside them does not count, and a model in
/// which nothing tears has none.
#[test]
fn the_lowest_breaking_strain_is_the_least_of_every_body_and_family() {
    let mut b = ModelBuilder::new();
    let mut first = ClothGrid::new("first", 4, 4, 0.1);
    first.material = ClothMaterial { tear_strain: 0.3, ..ClothMaterial::default() };
    b.add_cloth_grid(&first).unwrap();
    let mut second = ClothGrid::new("second", 4, 4, 0.1);
    second.center = Vec3::new(1.0, 0.0, 0.0);
    let energy = ClothMaterial {
        tear_energy: 40.0,
        stretch_stiffness: 5000.0,
        shear_stiffness: 10_000.0,
        ..ClothMaterial::default()
    };
    second.material = energy;
    b.add_cloth_grid(&second).unwrap();
    b.add_rope(&hooke::Rope::straight("rope", Vec3::new(0.0, 1.0, 0.0), Vec3::new(0.0, 2.0, 0.0), 5)).unwrap();
    let model = b.finalize().unwrap();
    let shear = (2.0f32 * 40.0 / 10_000.0).sqrt();
    assert_eq!(tearing::lowest_breaking_strain(&model), shear);
    assert!(shear < (2.0f32 * 40.0 / 5000.0).sqrt() && shear < 0.3);
    let mut b = ModelBuilder::new();
    b.add_cloth_grid(&ClothGrid::new("plain", 4, 4, 0.1)).unwrap();
    assert_eq!(tearing::lowest_breaking_strain(&b.finalize().unwrap()), f32::INFINITY);
}
