//! Long-range attachments (tethers; Kim, Chentanez & Müller 2012, "Long range attachments —
//! a method to simulate inextensible clothing in computer games").
//!
//! A cloth or rope hanging from pins stretches under its own weight mostly because Gauss–Seidel
//! moves a correction one constraint per sweep: the particles far from the pins do not learn
//! in time that the pin holds them. A tether is a unilateral constraint from a free particle p
//! straight to a pinned particle q:
//!
//! C(x) = ‖x_p − x_q‖ − L ≤ 0,
//!
//! with L the distance from p to q *along the body* at rest (its geodesic: no path inside the
//! cloth is shorter, so an unstretched body never violates it). It does nothing while the
//! body is within its rest distances and, once it is violated, moves p back onto the sphere of
//! radius L around q in one step (q is pinned: all of the correction is p's). Each particle
//! gets tethers to its two nearest pins; they are independent of one another (each moves only
//! its own particle), so they are projected in parallel without colours, after the constraint
//! sets in every iteration.
//!
//! **Rest distances.** For a grid the body is flat at rest and the geodesic is the straight
//! distance — until it tears: a path around a crack is longer, so a torn grid (split, or with
//! a crack not yet opened) is treated as a mesh. For a rope it is the arc length. For a mesh it
//! is the shortest path along the rest mesh's edges (Dijkstra), which is at least the
//! geodesic — a tether too long is merely looser, never wrong. The two nearest pins are found with the same multi-source Dijkstra over
//! the body's structural and shear edges (each particle settled by at most two sources).
//!
//! **Slack for the material.** A tether of exactly L would make an elastic body inextensible
//! along the line to its pin. L is therefore scaled by 1 + ε, ε twice the strain the material
//! takes at a pin holding the whole body's weight (2·M·|g|·extent / (A·K) for a cloth of mass
//! M over an area A, 2·M·|g| / EA for a rope, point masses included; twice, because a load
//! applied at once stretches an elastic body up to twice its static strain), so a physically
//! stretched body is left alone while a solver's excess strain (the Gauss–Seidel residual,
//! percents to tens of percent) is removed. Rigid materials get ε = 0.
//!
//! The tethers depend on which particles are pinned, so the solvers rebuild them when the set
//! of pins changes (a pin released, another added).

use crate::model::{BodyKind, BodyMaterial, ConstraintFamily, MassSource, Model};
use crate::solver::xpbd::distance_kernel::COS2_TURN;
use glam::Vec3;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The tethers of one particle, 24 bytes (`Tether` in hooke-gpu's `tethers.wgsl`): up to two
/// pinned particles and the largest distance (m) it may be from each.
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct Tether {
    /// The tethered (free) particle.
    pub particle: u32,
    /// How many of `pins` are used: 1 or 2.
    pub count: u32,
    /// The pinned particles.
    pub pins: [u32; 2],
    /// The largest distance (m) from each pin: the rest geodesic times 1 + ε.
    pub length: [f32; 2],
}

/// A heap entry of the multi-source Dijkstra, (distance, particle, source pin) as one key
/// whose order is theirs, lexicographically: distances are finite and not negative (sums of
/// rest lengths from 0), and the bits of such floats order as the floats do. The heap pops
/// the smallest key: the nearest entry, then the lowest particle, then the lowest pin.
#[inline]
fn entry(distance: f32, particle: u32, source: u32) -> Reverse<u128> {
    debug_assert!(distance >= 0.0 && distance.is_finite() && distance.is_sign_positive());
    Reverse((distance.to_bits() as u128) << 64 | (particle as u128) << 32 | source as u128)
}

/// The (distance, particle, source pin) of a heap entry.
#[inline]
fn unpack(Reverse(key): Reverse<u128>) -> (f32, u32, u32) {
    (f32::from_bits((key >> 64) as u32), (key >> 32) as u32, key as u32)
}

/// What the multi-source search keeps for one particle.
#[derive(Clone, Copy)]
struct Search {
    /// The sources (pins) that settled it and their distances (m), `settled` of them.
    found: [(u32, f32); 2],
    /// The two nearest distinct sources pushed so far toward it, with their distances (m);
    /// an empty slot is infinitely far.
    pushed: [(u32, f32); 2],
    settled: u8,
    /// Whether it is pinned (a source: no path passes through it).
    pin: bool,
}

impl Default for Search {
    fn default() -> Search {
        Search { found: [(u32::MAX, 0.0); 2], pushed: [(u32::MAX, f32::INFINITY); 2], settled: 0, pin: false }
    }
}

impl Search {
    /// Whether it has two sources already, or source `s` among them.
    #[inline]
    fn full_or_holds(&self, s: u32) -> bool {
        self.settled >= 2 || self.found[..self.settled as usize].iter().any(|&(q, _)| q == s)
    }
}

/// The material slack ε of body `b` (see the module documentation).
fn slack(model: &Model, body: usize) -> f32 {
    let b = &model.bodies()[body];
    let range = b.particles.start as usize..b.particles.end as usize;
    let x = &model.particle_position()[range.clone()];
    let (lo, hi) = x.iter().fold((Vec3::MAX, Vec3::MIN), |(lo, hi), p| (lo.min(*p), hi.max(*p)));
    let extent = (hi - lo).length();
    let g = model.worlds()[model.world_of_particle(b.particles.start as usize) as usize].gravity.length();
    // The body's whole mass, point masses (a rope's end mass) included, and the area or length
    // its material's density covers.
    let mass: f32 = model.particle_mass()[range.clone()].iter().filter(|m| m.is_finite()).sum();
    let covered: f32 = model.particle_mass_source[range]
        .iter()
        .map(|s| match s {
            MassSource::Share(share) => *share,
            MassSource::Fixed => 0.0,
        })
        .sum();
    let eps = match b.material {
        // The weight per unit width a pin row carries, over K.
        BodyMaterial::Cloth(m) => {
            let density = if covered > 0.0 { mass / covered } else { m.areal_density };
            DYNAMIC * density * g * extent / m.stretch_stiffness
        }
        // The weight at the pin, over EA.
        BodyMaterial::Rope(m) => DYNAMIC * mass * g / m.stretch_stiffness,
    };
    if eps.is_finite() { eps.max(0.0) } else { 0.0 }
}

/// How many times its static own-weight strain a body may stretch before its tethers act: a
/// load applied at once stretches an elastic body up to twice its static strain.
const DYNAMIC: f32 = 2.0;

/// The tethers of every free particle of a body that has pins, to its two nearest pins
/// (sorted by particle). `pinned` lists the pinned particles (any order, repeats allowed).
pub fn build(model: &Model, pinned: &[u32]) -> Vec<Tether> {
    let n = model.particle_count();
    let mut is_pin = vec![false; n];
    for &p in pinned {
        if let Some(f) = is_pin.get_mut(p as usize) {
            *f = true;
        }
    }
    // The graph: structural and shear edges with their rest lengths.
    let set = model.distance();
    let (offsets, list) = set.adjacency();
    let edge = |k: u32| {
        let c = set.constraints()[k as usize];
        let f = set.families()[k as usize];
        matches!(f, ConstraintFamily::Structural | ConstraintFamily::Shear).then_some(c)
    };
    // The same graph laid out per particle — its structural and shear neighbours with the rest
    // lengths, in the order of the model's adjacency — so that the search reads a particle's
    // edges from one place instead of looking each constraint up (the constraints are in colour
    // order, a particle's spread over the whole set: a 512² sheet's search waited on those
    // lookups most of its time). With the per-particle records and the packed heap keys below,
    // a 512² sheet pinned along two edges: 215–265 → 79–84 ms, the same tethers bit for bit
    // (on it, a 100² cloth with five pins and a rope, a 300² sheet pinned along a row and a
    // jittered mesh).
    let mut first = Vec::with_capacity(n + 1);
    let mut neighbours: Vec<(u32, f32)> = Vec::with_capacity(list.len());
    first.push(0u32);
    for v in 0..n {
        for &k in &list[offsets[v] as usize..offsets[v + 1] as usize] {
            if let Some(c) = edge(k) {
                neighbours.push((if c.i == v as u32 { c.j } else { c.i }, c.rest_length));
            }
        }
        first.push(neighbours.len() as u32);
    }
    // Multi-source Dijkstra: each particle settled by at most two distinct pins. What the
    // search keeps per particle is one record (one cache line holds a neighbour's state).
    let mut at: Vec<Search> = is_pin.iter().map(|&pin| Search { pin, ..Search::default() }).collect();
    let mut heap = BinaryHeap::new();
    for (p, &pin) in is_pin.iter().enumerate() {
        if pin {
            heap.push(entry(0.0, p as u32, p as u32));
        }
    }
    while let Some(top) = heap.pop() {
        let (d, v, s) = unpack(top);
        let here = &mut at[v as usize];
        if here.full_or_holds(s) {
            continue;
        }
        here.found[here.settled as usize] = (s, d);
        here.settled += 1;
        let vi = v as usize;
        for &(u, rest_length) in &neighbours[first[vi] as usize..first[vi + 1] as usize] {
            let there = &mut at[u as usize];
            if there.pin || there.full_or_holds(s) {
                continue;
            }
            let nd = d + rest_length;
            // An entry would be popped later and passed over — so it is not pushed, with the
            // same result and fewer heap operations — when it is no shorter than one already
            // pushed for the same source (that one settles the source there first, or the
            // particle is full by then), or when two other sources were pushed there strictly
            // shorter (both are popped first, each settling its source or finding it settled,
            // so the particle is full when this one comes). A 512² sheet pinned along two
            // edges: 341 → 274 ms with the first rule, then 339 → 229 ms with the second
            // (another run), the same tethers.
            let slots = &mut there.pushed;
            match slots.iter().position(|&(q, _)| q == s) {
                Some(k) if slots[k].1 <= nd => continue,
                Some(k) => slots[k].1 = nd,
                None => {
                    // Replace the farther of the two (an empty slot is infinitely far) if
                    // this one is nearer; two others strictly nearer make it useless.
                    let far = if slots[0].1 >= slots[1].1 { 0 } else { 1 };
                    if slots[far].1 < nd {
                        continue;
                    }
                    slots[far] = (s, nd);
                }
            }
            heap.push(entry(nd, u, s));
        }
    }
    let x = model.particle_position();
    let mut out = Vec::new();
    for (b, body) in model.bodies().iter().enumerate() {
        let scale = (1.0 + slack(model, b)) * (1.0 + TOLERANCE);
        // A torn grid (split, or with a crack not yet opened) is no longer flat to the pins:
        // a path around a crack is longer than the straight distance, which would hold the
        // crack closed. It keeps the distance along its edges, as a mesh does.
        let flat = match body.kind {
            BodyKind::ClothGrid { rows, columns } => {
                body.particles.len() == rows * columns && !model.cracks.iter().any(|c| body.particles.contains(&c[0]))
            }
            _ => false,
        };
        for p in body.particles.clone() {
            let pi = p as usize;
            let Search { pin, settled, found, .. } = at[pi];
            if pin || settled == 0 {
                continue;
            }
            let mut t = Tether { particle: p, count: settled as u32, pins: [0; 2], length: [0.0; 2] };
            for (k, &(q, along)) in found.iter().enumerate().take(settled as usize) {
                // A flat grid's geodesic is the straight distance; ropes, meshes and torn grids
                // keep the distance along their edges.
                let rest = if flat { (x[pi] - x[q as usize]).length() } else { along };
                t.pins[k] = q;
                t.length[k] = rest * scale;
            }
            out.push(t);
        }
    }
    out
}

/// Every tether is made longer than the body's rest distance by this fraction (on top of the
/// material slack): a body lying exactly at its rest distances (a flat sheet at t = 0) is
/// then left alone despite the last bit of rounding in the distance (a few ulp of the
/// coordinates: 1 µm on a 10 cm tether 1 m from the origin) — 0.001 % of strain, far below
/// anything a cloth shows. (In the length, not as a dead band of the projection: a dead band
/// would let a particle held at its tether chatter across it.)
pub const TOLERANCE: f32 = 1e-5;

/// Projects one particle's tethers on positions x⁰ + d: `x0` and `d` give the start-of-substep
/// position and the displacement of a particle; returns the particle's new displacement.
/// Unilateral: a tether within its length does nothing; one beyond it by C moves the particle
/// by C toward the pin, along the pin–particle direction at the start of the substep (so that
/// it exerts no torque about the pin and conserves angular momentum, as the constraint sets
/// do; see `solver/xpbd/projection.rs`) unless the pair turned by more than 25° in the
/// substep, then along the current one.
#[inline]
pub fn project(t: &Tether, x0: impl Fn(u32) -> Vec3, d: impl Fn(u32) -> Vec3) -> Vec3 {
    let (xp, mut dp) = (x0(t.particle), d(t.particle));
    for k in 0..t.count.min(2) as usize {
        let q = t.pins[k];
        let start = xp - x0(q);
        let v = start + (dp - d(q));
        let (s2, v2) = (start.dot(start), v.dot(v));
        let dist = v2.sqrt();
        let excess = dist - t.length[k];
        if excess > 0.0 && dist > 0.0 {
            let dot = start.dot(v);
            let (u, u2) =
                if s2 > 0.0 && dot > 0.0 && dot * dot >= COS2_TURN * (s2 * v2) { (start, s2) } else { (v, v2) };
            dp -= u * (excess / u2.sqrt());
        }
    }
    dp
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ClothGrid, ModelBuilder, Rope};

    /// A grid pinned at its two top corners: every other particle is tethered to both, with
    /// the straight rest distance; a rope pinned at one end: the arc length.
    #[test]
    fn tethers_reach_the_nearest_pins_with_rest_distances() {
        let mut b = ModelBuilder::new();
        let mut g = ClothGrid::new("c", 5, 4, 0.1);
        g.material.stretch_stiffness = f32::INFINITY;
        b.add_cloth_grid(&g).unwrap();
        let mut r =
            Rope::polyline("r", vec![Vec3::new(2.0, 0.0, 0.0), Vec3::new(2.3, 0.4, 0.0), Vec3::new(3.0, 0.4, 0.0)], 8);
        r.material.stretch_stiffness = f32::INFINITY;
        b.add_rope(&r).unwrap();
        let model = b.finalize().unwrap();
        let (corner_a, corner_b, rope0) = (0u32, 3u32, 20u32);
        let t = build(&model, &[corner_a, corner_b, rope0]);
        assert_eq!(t.len(), 20 - 2 + 8 - 1);
        let x = model.particle_position();
        for t in &t {
            let p = t.particle as usize;
            if p < 20 {
                assert_eq!(t.count, 2);
                let mut pins = t.pins;
                pins.sort();
                assert_eq!(pins, [corner_a, corner_b]);
                for k in 0..2 {
                    let rest = (x[p] - x[t.pins[k] as usize]).length();
                    assert!((t.length[k] - rest * (1.0 + TOLERANCE)).abs() < 1e-6);
                }
            } else {
                assert_eq!((t.count, t.pins[0]), (1, rope0));
                let arc: f32 = (20..p).map(|k| (x[k + 1] - x[k]).length()).sum();
                assert!((t.length[0] - arc * (1.0 + TOLERANCE)).abs() < 1e-5, "{} vs {arc}", t.length[0]);
            }
        }
    }

    /// The multi-source search finds each particle's two nearest pins along the structural
    /// and shear edges: on a jittered mesh (no ties) with random pins, the tethers are those of
    /// one Dijkstra per pin in f64 — the pins (where the second and third nearest are not
    /// within rounding of each other) and the distances along the mesh.
    #[test]
    fn tethers_are_the_two_nearest_pins_of_one_search_per_pin() {
        use crate::model::ClothMesh;
        use proptest::prelude::*;
        use std::collections::BinaryHeap;
        let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(24));
        let cases = (prop::collection::vec(-0.3f32..0.3, 2 * 11 * 9), prop::collection::vec(0u32..99, 1..8));
        runner
            .run(&cases, |(jitter, pins)| {
                let (nx, ny) = (11usize, 9usize);
                let positions: Vec<Vec3> = (0..nx * ny)
                    .map(|k| {
                        let (i, j) = (k % nx, k / nx);
                        Vec3::new(i as f32 + jitter[2 * k], j as f32 + jitter[2 * k + 1], 0.0) * 0.1
                    })
                    .collect();
                let mut triangles = Vec::new();
                for j in 0..ny - 1 {
                    for i in 0..nx - 1 {
                        let a = (j * nx + i) as u32;
                        triangles.push([a, a + 1, a + nx as u32 + 1]);
                        triangles.push([a, a + nx as u32 + 1, a + nx as u32]);
                    }
                }
                let mut mesh = ClothMesh::new("m", positions, triangles);
                mesh.material.stretch_stiffness = f32::INFINITY;
                let mut b = ModelBuilder::new();
                b.add_cloth_mesh(&mesh).unwrap();
                let model = b.finalize().unwrap();
                let tethers = build(&model, &pins);
                // One Dijkstra per pin over the same edges, in f64.
                let set = model.distance();
                let n = model.particle_count();
                let mut adjacent = vec![Vec::new(); n];
                for (c, f) in set.constraints().iter().zip(set.families()) {
                    if matches!(f, ConstraintFamily::Structural | ConstraintFamily::Shear) {
                        adjacent[c.i as usize].push((c.j as usize, c.rest_length as f64));
                        adjacent[c.j as usize].push((c.i as usize, c.rest_length as f64));
                    }
                }
                let is_pin = |p: usize| pins.contains(&(p as u32));
                let mut distance = Vec::new();
                let mut sources: Vec<u32> = pins.clone();
                sources.sort_unstable();
                sources.dedup();
                for &q in &sources {
                    let mut dist = vec![f64::INFINITY; n];
                    let mut heap = BinaryHeap::new();
                    dist[q as usize] = 0.0;
                    heap.push((std::cmp::Reverse(0u64), q as usize));
                    while let Some((std::cmp::Reverse(bits), v)) = heap.pop() {
                        let d = f64::from_bits(bits);
                        if d > dist[v] {
                            continue;
                        }
                        for &(u, l) in &adjacent[v] {
                            // Paths do not pass through other pins (they are sources of their own).
                            if d + l < dist[u] && !(is_pin(u) && u != q as usize) {
                                dist[u] = d + l;
                                if !is_pin(u) {
                                    heap.push((std::cmp::Reverse((d + l).to_bits()), u));
                                }
                            }
                        }
                    }
                    distance.push(dist);
                }
                let by_particle: std::collections::HashMap<u32, &Tether> =
                    tethers.iter().map(|t| (t.particle, t)).collect();
                for p in (0..n).filter(|&p| !is_pin(p)) {
                    let mut near: Vec<(f64, u32)> = sources
                        .iter()
                        .enumerate()
                        .map(|(k, &q)| (distance[k][p], q))
                        .filter(|(d, _)| d.is_finite())
                        .collect();
                    near.sort_by(|a, b| a.0.total_cmp(&b.0));
                    let t = by_particle.get(&(p as u32)).expect("a reachable particle has tethers");
                    prop_assert_eq!(t.count as usize, near.len().min(2));
                    // Ties (within rounding) among the three nearest leave their order open.
                    let tied = near.windows(2).take(2).any(|w| w[1].0 - w[0].0 < 1e-5 * w[1].0);
                    for k in 0..t.count as usize {
                        let along = distance[sources.iter().position(|&q| q == t.pins[k]).unwrap()][p];
                        prop_assert!(
                            (t.length[k] as f64 - along * (1.0 + TOLERANCE as f64)).abs() < 1e-5 * along,
                            "particle {p}: tether {k} to {} of {} m, along the mesh {along} m",
                            t.pins[k],
                            t.length[k]
                        );
                        if !tied {
                            prop_assert_eq!(t.pins[k], near[k].1, "particle {}: pin {} of {:?}", p, k, near);
                        }
                    }
                }
                Ok(())
            })
            .unwrap();
    }

    /// `project` is unilateral and exact: for random pins, particles and displacements, a
    /// particle within its tether lengths keeps its displacement bit for bit (zero correction),
    /// and one beyond it moves toward it without passing it (one step along the start-of-substep
    /// direction: onto the sphere when the pair did not turn, short of it when it did).
    #[test]
    fn projection_does_nothing_within_and_reaches_the_sphere_beyond() {
        let mut seed = 0x2545_f491_u32;
        let mut rand = move || {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            seed as f32 / u32::MAX as f32 * 2.0 - 1.0
        };
        let (mut within, mut beyond) = (0, 0);
        for _ in 0..2000 {
            let x0 = [Vec3::new(rand(), rand(), rand()), Vec3::new(rand(), rand(), rand())];
            let d = [0.1 * Vec3::new(rand(), rand(), rand()), 0.1 * Vec3::new(rand(), rand(), rand())];
            let length = 1.5 * rand().abs();
            let t = Tether { particle: 1, count: 1, pins: [0, 0], length: [length, 0.0] };
            let new = project(&t, |q| x0[q as usize], |q| d[q as usize]);
            let dist = ((x0[1] + d[1]) - (x0[0] + d[0])).length();
            if dist <= length {
                within += 1;
                assert_eq!(new.to_array().map(f32::to_bits), d[1].to_array().map(f32::to_bits));
            } else {
                beyond += 1;
                let after = ((x0[1] + new) - (x0[0] + d[0])).length();
                assert!(after >= length - 1e-5 && after < dist, "{dist} → {after}, length {length}");
                // Without turning (pin and particle displaced alike), exactly onto the sphere.
                let still = project(&t, |q| x0[q as usize], |_| d[0]);
                let at = ((x0[1] + still) - (x0[0] + d[0])).length();
                let from = (x0[1] - x0[0]).length();
                if from > length {
                    assert!((at - length).abs() < 1e-5, "{at} vs {length}");
                }
            }
        }
        assert!(within > 200 && beyond > 200, "{within} within, {beyond} beyond");
    }
}
