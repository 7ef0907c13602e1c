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
//!
//! **After a tear.** A tear removes edges and splits particles; no path gets shorter. The
//! search keeps, for each particle and pin, the particle its path came from, so a torn model's
//! search ([`TetherSearch::after_tear`]) follows each old path back: a particle whose two paths
//! are both still there, step for step and bit for bit (through particles kept themselves),
//! keeps its pins, and only the others are searched again, from the kept particles around them
//! — the same tethers as a search from scratch, for the price of the graph and the particles
//! the tear cut off (a blade through a 512² sheet pinned along two edges: 21–29 ms against
//! 94–105 ms, 1 632 particles searched again of 261 323, on a 2-core machine). Which of two
//! pins exactly as far a search picks depends on its paths, so where a particle searched again
//! would hand a kept neighbour a pin tied with one of its own, it searches from scratch.
//! The solvers make that search while they rebuild for the torn model, on a thread beside the
//! rebuild ([`TetherCache::prepare`]), for the pins the next frame will most likely ask for
//! (every copy of a pin); the next frame takes it if it does. There they know what the tear
//! copied unchanged (its runs of constraint records, [`Torn::copied`](crate::tearing::Torn::copied)),
//! so the search looks only at the particles of the constraints outside those runs
//! ([`TetherSearch::after_tear_from`]): every other particle keeps its edges, and keeps its
//! pins unless one of its paths runs through a particle searched again (those are found from
//! the changed particles along the edges), with no pass over every particle's paths; the graph
//! and the records are laid out in the memory of the search the last update replaced (a new
//! allocation's page faults were a third of the time). The same tethers again; a 512² sheet
//! pinned along two edges, cut by four short blades one after another, on a 2-core machine
//! (example `after_tear`): 15–20 ms for the search and its tethers after the first cut, where
//! following every path took 30–45 ms for the search alone.

use crate::ModelError;
use crate::model::CopiedRun;
use crate::model::{BodyKind, BodyMaterial, ConstraintFamily, MassSource, Model};
use crate::solver::xpbd::distance_kernel::COS2_TURN;
use glam::Vec3;
use rayon::prelude::*;
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

/// "No particle": the last step of a pin's own path (it starts there).
const NONE: u32 = u32::MAX;

/// A heap entry of the multi-source Dijkstra, (distance, particle, source pin, last step) as
/// one key whose order is theirs, lexicographically: distances are finite and not negative
/// (sums of rest lengths from 0), and the bits of such floats order as the floats do. The heap
/// pops the smallest key: the nearest entry, then the lowest particle, then the lowest pin
/// (the last step, lowest too, only orders entries otherwise equal: the first settles).
#[inline]
fn entry(distance: f32, particle: u32, source: u32, via: u32) -> Reverse<u128> {
    debug_assert!(distance >= 0.0 && distance.is_finite() && distance.is_sign_positive());
    Reverse((distance.to_bits() as u128) << 96 | (particle as u128) << 64 | (source as u128) << 32 | via as u128)
}

/// The (distance, particle, source pin, last step) of a heap entry.
#[inline]
fn unpack(Reverse(key): Reverse<u128>) -> (f32, u32, u32, u32) {
    (f32::from_bits((key >> 96) as u32), (key >> 64) as u32, (key >> 32) as u32, key as u32)
}

/// A pin that settled a particle: the pin, the distance along the body (m), and the
/// particle the path came from ([`NONE`] on the pin itself).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Reached {
    pin: u32,
    distance: f32,
    via: u32,
}

/// What the multi-source search keeps for one particle.
#[derive(Clone, Copy, Debug)]
struct Search {
    /// The sources (pins) that settled it, `settled` of them, nearest first.
    found: [Reached; 2],
    /// The two nearest distinct sources pushed so far toward it, with their distances (m);
    /// an empty slot is infinitely far.
    pushed: [(u32, f32); 2],
    settled: u8,
    /// Whether it is pinned (a source: no path passes through it).
    pin: bool,
    /// Whether its pins are known already (kept from before a tear): the search passes it by.
    /// Read only during a search after a tear, which sets it on every record it keeps.
    known: bool,
}

impl Default for Search {
    fn default() -> Search {
        Search {
            found: [Reached { pin: NONE, distance: 0.0, via: NONE }; 2],
            pushed: [(NONE, f32::INFINITY); 2],
            settled: 0,
            pin: false,
            known: false,
        }
    }
}

impl Search {
    /// Whether it has two sources already, or source `s` among them.
    #[inline]
    fn full_or_holds(&self, s: u32) -> bool {
        self.settled >= 2 || self.found[..self.settled as usize].iter().any(|r| r.pin == s)
    }

    /// The pins found, nearest first.
    #[inline]
    fn found(&self) -> &[Reached] {
        &self.found[..self.settled as usize]
    }

    /// A pinned particle: settled by itself.
    fn pinned(p: u32) -> Search {
        let mut s = Search { pin: true, settled: 1, ..Search::default() };
        s.found[0] = Reached { pin: p, distance: 0.0, via: NONE };
        s
    }
}

/// The graph the tethers are searched on: each particle's structural and shear neighbours with
/// the rest lengths (m), in the order of the model's adjacency, laid out per particle so that
/// the search reads a particle's edges from one place instead of looking each constraint up
/// (the constraints are in colour order, a particle's spread over the whole set: a 512² sheet's
/// search waited on those lookups most of its time). With the per-particle records and the
/// packed heap keys, a 512² sheet pinned along two edges: 215–265 → 79–84 ms, the same tethers
/// bit for bit (on it, a 100² cloth with five pins and a rope, a 300² sheet pinned along a row
/// and a jittered mesh).
#[derive(Clone, Debug, Default, PartialEq)]
struct Graph {
    first: Vec<u32>,
    neighbours: Vec<(u32, f32)>,
}

impl Graph {
    fn new(model: &Model) -> Graph {
        let count = |v: usize| model_edges(model, v).count() as u32;
        Graph::laid_out(model.particle_count(), count, Graph::default(), |v, out| {
            for (slot, edge) in out.iter_mut().zip(model_edges(model, v)) {
                *slot = edge;
            }
        })
    }

    /// The graph of `model`, made by a tear from the model whose graph is `old`: the rows of
    /// the particles `changed` marks built from `model`, the others copied from `old` (a
    /// particle not marked keeps its number and its constraints, see
    /// [`TetherSearch::after_tear_from`]). Laid out in `reuse`'s memory.
    fn patched(old: &Graph, model: &Model, changed: &[bool], reuse: Graph) -> Graph {
        let count = |v: usize| if changed[v] { model_edges(model, v).count() as u32 } else { old.of(v).len() as u32 };
        Graph::laid_out(model.particle_count(), count, reuse, |v, out| {
            if changed[v] {
                for (slot, edge) in out.iter_mut().zip(model_edges(model, v)) {
                    *slot = edge;
                }
            } else {
                out.copy_from_slice(old.of(v));
            }
        })
    }

    /// A graph of `n` particles, particle v with `count(v)` neighbours that `fill(v, row)`
    /// writes: counted, then filled, in parallel (each chunk of particles fills its own
    /// stretch), in the memory of `reuse` (a graph no longer needed: memory already touched
    /// is filled without the page faults of a new allocation, about a third of the time for
    /// a 512² sheet).
    fn laid_out(
        n: usize,
        count: impl Fn(usize) -> u32 + Sync,
        reuse: Graph,
        fill: impl Fn(usize, &mut [(u32, f32)]) + Sync,
    ) -> Graph {
        let Graph { mut first, mut neighbours } = reuse;
        first.clear();
        if first.capacity() < n + 1 {
            first.reserve_exact(n + 1 + n / 16);
        }
        first.resize(n + 1, 0);
        first[1..].par_iter_mut().with_min_len(GRAPH_CHUNK).enumerate().for_each(|(v, c)| *c = count(v));
        let mut total = 0u32;
        for c in &mut first {
            total += *c;
            *c = total;
        }
        neighbours.clear();
        let len = first[n] as usize;
        if neighbours.capacity() < len {
            // Room for the next tears' copies too.
            neighbours.reserve_exact(len + len / 16);
        }
        neighbours.resize(len, (0u32, 0.0f32));
        let mut stretches = Vec::with_capacity(n.div_ceil(GRAPH_CHUNK));
        let mut rest: &mut [(u32, f32)] = &mut neighbours;
        for start in (0..n).step_by(GRAPH_CHUNK) {
            let end = (start + GRAPH_CHUNK).min(n);
            let (here, tail) = rest.split_at_mut((first[end] - first[start]) as usize);
            stretches.push((start..end, here));
            rest = tail;
        }
        stretches.into_par_iter().for_each(|(particles, mut out)| {
            for v in particles {
                let (row, tail) = out.split_at_mut((first[v + 1] - first[v]) as usize);
                fill(v, row);
                out = tail;
            }
        });
        Graph { first, neighbours }
    }

    /// Particle `v`'s neighbours and the rest lengths (m) to them.
    #[inline]
    fn of(&self, v: usize) -> &[(u32, f32)] {
        &self.neighbours[self.first[v] as usize..self.first[v + 1] as usize]
    }

    /// Whether every edge of this graph comes from an edge of `old` between the particles
    /// `parent` maps its ends to, at most as long: then no distance along this graph is
    /// shorter than along `old`.
    fn lengthens(&self, old: &Graph, parent: &[u32]) -> bool {
        (0..self.first.len() - 1).into_par_iter().with_min_len(GRAPH_CHUNK).all(|p| self.row_lengthens(old, parent, p))
    }

    /// [`Graph::lengthens`] for the edges of particle `p`.
    fn row_lengthens(&self, old: &Graph, parent: &[u32], p: usize) -> bool {
        let before = old.of(parent[p] as usize);
        self.of(p).iter().enumerate().all(|(k, &(u, l))| {
            let (q, same) = (parent[u as usize], |&(v, l0): &(u32, f32)| v == parent[u as usize] && l0 <= l);
            // The same place first (an untouched particle keeps its order).
            before.get(k).is_some_and(same) || before.iter().any(|e| e.0 == q && same(e))
        })
    }
}

/// Particle `v`'s structural and shear neighbours in `model` with the rest lengths (m), in
/// the order of the model's adjacency.
fn model_edges(model: &Model, v: usize) -> impl Iterator<Item = (u32, f32)> + '_ {
    let set = model.distance();
    let (offsets, list) = set.adjacency();
    list[offsets[v] as usize..offsets[v + 1] as usize].iter().filter_map(move |&k| {
        let (c, f) = (set.constraints()[k as usize], set.families()[k as usize]);
        matches!(f, ConstraintFamily::Structural | ConstraintFamily::Shear)
            .then_some((if c.i == v as u32 { c.j } else { c.i }, c.rest_length))
    })
}

/// Particles per parallel task in laying out and comparing the graphs.
const GRAPH_CHUNK: usize = 4096;

/// Offers pin `s` at `distance` (m), by way of particle `via`, to particle `u`, whose record
/// is `there`: pushed unless it would only be passed over when popped.
#[inline]
fn offer(heap: &mut BinaryHeap<Reverse<u128>>, there: &mut Search, distance: f32, u: u32, s: u32, via: u32) {
    if there.pin || there.known || there.full_or_holds(s) {
        return;
    }
    // An entry would be popped later and passed over — so it is not pushed, with the same
    // result and fewer heap operations — when it is no shorter than one already pushed for
    // the same source (that one settles the source there first, or the particle is full by
    // then), or when two other sources were pushed there strictly shorter (both are popped
    // first, each settling its source or finding it settled, so the particle is full when
    // this one comes). A 512² sheet pinned along two edges: 341 → 274 ms with the first rule,
    // then 339 → 229 ms with the second (another run), the same tethers.
    let slots = &mut there.pushed;
    match slots.iter().position(|&(q, _)| q == s) {
        Some(k) if slots[k].1 <= distance => return,
        Some(k) => slots[k].1 = distance,
        None => {
            // Replace the farther of the two (an empty slot is infinitely far) if this one is
            // nearer; two others strictly nearer make it useless.
            let far = if slots[0].1 >= slots[1].1 { 0 } else { 1 };
            if slots[far].1 < distance {
                return;
            }
            slots[far] = (s, distance);
        }
    }
    heap.push(entry(distance, u, s, via));
}

/// The multi-source Dijkstra from what `heap` holds: each particle settled by at most two
/// distinct pins, the nearest first.
fn settle(graph: &Graph, at: &mut [Search], mut heap: BinaryHeap<Reverse<u128>>) {
    while let Some(top) = heap.pop() {
        let (d, v, s, via) = unpack(top);
        let here = &mut at[v as usize];
        if here.full_or_holds(s) {
            continue;
        }
        here.found[here.settled as usize] = Reached { pin: s, distance: d, via };
        here.settled += 1;
        for &(u, rest_length) in graph.of(v as usize) {
            offer(&mut heap, &mut at[u as usize], d + rest_length, u, s, v);
        }
    }
}

/// Whether a search would settle pin `s` at `distance` (m) at a particle settled as `r`: a
/// pin it holds, nearer; or a pin it lacks, while it has room or before its farther pin in
/// the heap's order (distance, then pin).
fn would_take(r: &Search, distance: f32, s: u32) -> bool {
    if let Some(f) = r.found().iter().find(|f| f.pin == s) {
        return distance < f.distance;
    }
    let Some(far) = r.found().get(1) else { return true };
    (distance.to_bits(), s) < (far.distance.to_bits(), far.pin)
}

/// The particles whose records a tear leaves as they were: those (not pinned) each of whose
/// paths is still there (`paths`, from [`TetherSearch::paths_kept`]) by way of a pin or of a
/// particle kept itself — a particle searched again may settle other pins, which its
/// neighbours' paths through it would no longer follow. For each, the last step of each
/// path (`settled(p)` of them). Two particles may each be the other's last step (toward
/// different pins), so the rule is applied by taking away, from those whose paths are all
/// there, every particle with a step through one taken away, until none is left to take.
fn whole_paths(
    paths: &[[Option<u32>; 2]],
    is_pin: &[bool],
    graph: &Graph,
    settled: impl Fn(usize) -> usize,
) -> Vec<Option<[u32; 2]>> {
    let n = paths.len();
    let steps = |p: usize| &paths[p][..settled(p)];
    let mut lost: Vec<bool> = (0..n).map(|p| !is_pin[p] && steps(p).iter().any(|v| v.is_none())).collect();
    let mut taken: Vec<u32> = (0..n as u32).filter(|&p| lost[p as usize]).collect();
    while let Some(v) = taken.pop() {
        // A path's last step is one of the particle's neighbours.
        for &(p, _) in graph.of(v as usize) {
            let p = p as usize;
            if !lost[p] && !is_pin[p] && steps(p).contains(&Some(v)) {
                lost[p] = true;
                taken.push(p as u32);
            }
        }
    }
    (0..n)
        .map(|p| {
            (!lost[p] && !is_pin[p]).then(|| {
                let mut via = [NONE; 2];
                for (k, v) in steps(p).iter().enumerate() {
                    via[k] = v.unwrap_or(NONE);
                }
                via
            })
        })
        .collect()
}

/// Settles the particles `again` (increasing; neither pins nor known) from the pins and known
/// particles around them, after a tear. `false` when the full search could differ: a kept
/// particle keeps its two nearest pins, but which of two pins exactly as far (bit for bit) a
/// search picks depends on the paths — a pin a rounding step behind two others at one particle
/// goes no further, and may tie again beyond it — so a particle searched again may bring a
/// kept neighbour a pin that ties with (and, by index, beats) one of its own, which the full
/// search would take (a few in 10⁵ tears of random grids: lengths equal, pins differ).
fn search_again(graph: &Graph, at: &mut [Search], again: &[u32]) -> bool {
    let mut heap = BinaryHeap::new();
    for &p in again {
        let p = p as usize;
        for &(u, l) in graph.of(p) {
            let from = at[u as usize];
            if from.pin || from.known {
                for r in from.found() {
                    offer(&mut heap, &mut at[p], r.distance + l, p as u32, r.pin, u);
                }
            }
        }
    }
    settle(graph, at, heap);
    again.iter().all(|&p| {
        let here = at[p as usize];
        graph.of(p as usize).iter().all(|&(u, l)| {
            let there = &at[u as usize];
            !(there.known && here.found().iter().any(|r| would_take(there, r.distance + l, r.pin)))
        })
    })
}

/// `pinned` sorted, without repeats or particles beyond `n`.
fn sorted_pins(pinned: &[u32], n: usize) -> Vec<u32> {
    let mut pins: Vec<u32> = pinned.iter().copied().filter(|&p| (p as usize) < n).collect();
    pins.sort_unstable();
    pins.dedup();
    pins
}

/// What a tear kept of the model a search was made on ([`TetherSearch::after_tear_from`]).
#[derive(Clone, Copy, Debug)]
pub struct TornFrom<'a> {
    /// The model before the tear: the model searched.
    pub old: &'a Model,
    /// The runs of its distance constraints the torn model holds unchanged
    /// ([`Torn::copied`](crate::tearing::Torn::copied)`.distance`).
    pub copied: &'a [CopiedRun],
}

/// The search behind a model's tethers: each particle's two nearest pins along the body (see
/// the module documentation), kept with the last step of each path, so that after a tear only
/// the particles whose paths it cut are searched again ([`TetherSearch::after_tear`]).
#[derive(Clone, Debug, Default)]
pub struct TetherSearch {
    /// The pins searched from, sorted, without repeats.
    pins: Vec<u32>,
    /// One record per particle of the model searched.
    at: Vec<Search>,
    graph: Graph,
    /// Particles this search settled (those not kept from before a tear).
    searched: usize,
}

impl TetherSearch {
    /// Searches `model` from `pinned` (particle indices, any order, repeats allowed; those
    /// beyond the particle count are ignored). O((V + E) log V) in the particles and edges.
    pub fn new(model: &Model, pinned: &[u32]) -> TetherSearch {
        let n = model.particle_count();
        let pins = sorted_pins(pinned, n);
        let graph = Graph::new(model);
        let mut at = vec![Search::default(); n];
        let mut heap = BinaryHeap::new();
        for &p in &pins {
            at[p as usize].pin = true;
            heap.push(entry(0.0, p, p, NONE));
        }
        settle(&graph, &mut at, heap);
        let searched = at.iter().filter(|r| !r.pin && r.settled > 0).count();
        TetherSearch { pins, at, graph, searched }
    }

    /// The search of `model` — made by a tear or cut from the model this search was made on
    /// ([`crate::tearing::tear`]) — from `pinned`, reusing what the tear left: `parent`
    /// (length: `model`'s particle count) gives each particle of `model` the particle it comes
    /// from ([`Torn::parent`](crate::tearing::Torn::parent)).
    ///
    /// A tear removes edges and splits particles, so no path gets shorter (it may also tie a
    /// flap's corner by new edges at their present lengths; where one is shorter than the edge
    /// it comes from, see below). A particle both of whose paths
    /// still exist — each step an edge to a copy of the same particle, the same distance bit
    /// for bit, back to a copy of the same pin, through particles kept themselves — keeps its
    /// pins: they are still its two nearest. Only the others are searched again, from the
    /// kept particles around them. The result is the search [`TetherSearch::new`] makes of
    /// `model`, tether for tether and bit for bit.
    ///
    /// It searches `model` anew when the pins are not the old ones, one copy each in the same
    /// order (a pinned particle split, a pin added or released), when `parent` does not fit
    /// (wrong length, an index beyond the old particle count), when an edge is new or
    /// shorter than the one it comes from, or when a particle searched again would give a
    /// kept neighbour a pin that a search from scratch would take there (two pins exactly as
    /// far: which one a search picks depends on its paths; a few in 10⁵ tears of random
    /// grids).
    pub fn after_tear(&self, model: &Model, parent: &[u32], pinned: &[u32]) -> TetherSearch {
        let n = model.particle_count();
        let pins = sorted_pins(pinned, n);
        let old_n = self.at.len();
        if parent.len() != n || parent.iter().any(|&q| q as usize >= old_n) || pins.len() != self.pins.len() {
            return TetherSearch::new(model, pinned);
        }
        // The old pins' copies: the pins, one each, in the same order (a tie between two pins
        // goes to the lower index, in both searches).
        let parents: Vec<u32> = pins.iter().map(|&p| parent[p as usize]).collect();
        // And no other particle comes from a pin (a path through it, closed before, would be
        // new).
        if parents != self.pins || (0..n).filter(|&p| self.at[parent[p] as usize].pin).count() != pins.len() {
            return TetherSearch::new(model, pinned);
        }
        let new_pin = |old: u32| pins[self.pins.binary_search(&old).expect("a pin's parent is a pin")];
        let graph = Graph::new(model);
        if !graph.lengthens(&self.graph, parent) {
            return TetherSearch::new(model, pinned);
        }
        let paths = self.paths_kept(&graph, parent, &pins);
        let mut is_pin = vec![false; n];
        for &p in &pins {
            is_pin[p as usize] = true;
        }
        let settled = |p: usize| self.at[parent[p] as usize].settled as usize;
        let kept = whole_paths(&paths, &is_pin, &graph, settled);
        drop(paths);
        // The kept particles' records, on the new particles and pins; the others to search.
        let mut at: Vec<Search> = (0..n)
            .into_par_iter()
            .with_min_len(GRAPH_CHUNK)
            .map(|p| {
                if is_pin[p] {
                    return Search::pinned(p as u32);
                }
                let mut r = Search::default();
                if let Some(via) = kept[p] {
                    let old = &self.at[parent[p] as usize];
                    r.known = true;
                    r.settled = old.settled;
                    for (slot, (o, &v)) in old.found().iter().zip(&via).enumerate() {
                        r.found[slot] = Reached { pin: new_pin(o.pin), distance: o.distance, via: v };
                    }
                }
                r
            })
            .collect();
        drop(kept);
        // The search from the kept particles and pins around the others.
        let again: Vec<u32> = (0..n as u32).filter(|&p| !at[p as usize].pin && !at[p as usize].known).collect();
        if !search_again(&graph, &mut at, &again) {
            return TetherSearch::new(model, pinned);
        }
        let mut searched = 0;
        for r in at.iter_mut() {
            searched += (!r.known && !r.pin && r.settled > 0) as usize;
            r.known = false;
        }
        TetherSearch { pins, at, graph, searched }
    }

    /// As [`TetherSearch::after_tear`], told what the tear kept (`from`: the model this search
    /// was made on, and the runs of its distance constraints the torn model holds unchanged,
    /// [`Torn::copied`](crate::tearing::Torn::copied)), so that it looks only where the tear
    /// changed something: a particle that keeps its number and its constraints (in order,
    /// records the same bit for bit) keeps its edges and, unless one of its paths runs through
    /// a particle whose path the tear cut, its pins — with no pass over every particle's paths. The
    /// result is [`TetherSearch::after_tear`]'s, and so [`TetherSearch::new`]'s. Each run is
    /// compared with the old model's records first, so a wrong run costs time, not
    /// correctness; `from.old` must be the model searched (only its particle count is
    /// checked).
    pub fn after_tear_from(&self, model: &Model, parent: &[u32], pinned: &[u32], from: TornFrom<'_>) -> TetherSearch {
        self.after_tear_reusing(model, parent, pinned, from, TetherSearch::default())
    }

    /// [`TetherSearch::after_tear_from`], made in the memory of `spare` (a search no longer
    /// needed) where it can; [`TetherSearch::after_tear`] where the pins or `parent` do not
    /// fit, or the runs are not in order.
    fn after_tear_reusing(
        &self,
        model: &Model,
        parent: &[u32],
        pinned: &[u32],
        from: TornFrom<'_>,
        spare: TetherSearch,
    ) -> TetherSearch {
        let n = model.particle_count();
        let old_n = self.at.len();
        if from.old.particle_count() != old_n || parent.len() != n || parent.par_iter().any(|&q| q as usize >= old_n) {
            return self.after_tear(model, parent, pinned);
        }
        let pins = sorted_pins(pinned, n);
        let parents: Vec<u32> = pins.iter().map(|&p| parent[p as usize]).collect();
        if parents != self.pins || parent.par_iter().filter(|&&q| self.at[q as usize].pin).count() != pins.len() {
            return self.after_tear(model, parent, pinned);
        }
        // The runs the torn set copied, checked: each in order after the last in both sets,
        // and its records and families the old ones bit for bit (a run that is not is left
        // out: its constraints count as changed).
        let (old_set, set) = (from.old.distance(), model.distance());
        let mut runs: Vec<CopiedRun> = from.copied.to_vec();
        runs.sort_unstable_by_key(|r| r.to);
        let fits = |r: &CopiedRun| {
            (r.from as usize).checked_add(r.len as usize).is_some_and(|end| end <= old_set.len())
                && (r.to as usize).checked_add(r.len as usize).is_some_and(|end| end <= set.len())
        };
        if !runs.iter().all(fits)
            || runs.windows(2).any(|w| w[0].to + w[0].len > w[1].to || w[0].from + w[0].len > w[1].from)
        {
            return self.after_tear(model, parent, pinned);
        }
        let sound: Vec<bool> = runs
            .par_iter()
            .map(|r| {
                let (a, b, len) = (r.from as usize, r.to as usize, r.len as usize);
                bytemuck::cast_slice::<_, u8>(&old_set.constraints()[a..a + len])
                    == bytemuck::cast_slice::<_, u8>(&set.constraints()[b..b + len])
                    && old_set.families()[a..a + len] == set.families()[b..b + len]
            })
            .collect();
        let runs: Vec<CopiedRun> = runs.into_iter().zip(sound).filter_map(|(r, ok)| ok.then_some(r)).collect();
        // The particles whose edges may have changed: those of a constraint outside the runs,
        // in either set, and those renumbered or split off. Any other particle keeps its
        // number and its constraints, copies of the old ones in the same order (the runs
        // keep their order): its edges are the old ones.
        let mut changed = vec![false; n];
        let mut mark = |constraints: &[crate::model::DistanceConstraint],
                        ranges: &mut dyn Iterator<Item = (u32, u32)>| {
            let mut next = 0usize;
            for (start, len) in ranges.chain(std::iter::once((constraints.len() as u32, 0))) {
                for c in &constraints[next..start as usize] {
                    for q in [c.i, c.j] {
                        if let Some(slot) = changed.get_mut(q as usize) {
                            *slot = true;
                        }
                    }
                }
                next = (start + len) as usize;
            }
        };
        mark(set.constraints(), &mut runs.iter().map(|r| (r.to, r.len)));
        mark(old_set.constraints(), &mut runs.iter().map(|r| (r.from, r.len)));
        changed
            .par_iter_mut()
            .with_min_len(GRAPH_CHUNK)
            .enumerate()
            .for_each(|(p, c)| *c |= p >= old_n || parent[p] as usize != p);
        let graph = Graph::patched(&self.graph, model, &changed, spare.graph);
        let rows: Vec<u32> = (0..n as u32).into_par_iter().filter(|&p| changed[p as usize]).collect();
        if !rows.par_iter().all(|&p| graph.row_lengthens(&self.graph, parent, p as usize)) {
            // An edge new or shorter (a flap tied at its present lengths): paths may shorten.
            return TetherSearch::new(model, pinned);
        }
        let mut is_pin = vec![false; n];
        for &p in &pins {
            is_pin[p as usize] = true;
        }
        let settled = |p: usize| self.at[parent[p] as usize].settled as usize;
        // The last step of each path of a changed particle in the torn graph (`None`: cut), as
        // `paths_kept` finds it. A particle not changed keeps its steps: the same edges to
        // the same particles.
        let steps: Vec<[Option<u32>; 2]> = rows
            .par_iter()
            .map(|&p| {
                let mut via = [Some(NONE); 2];
                if is_pin[p as usize] {
                    return via;
                }
                let old = &self.at[parent[p as usize] as usize];
                for (slot, r) in via.iter_mut().zip(old.found()) {
                    *slot = (r.via != NONE)
                        .then(|| {
                            graph.of(p as usize).iter().find_map(|&(u, l)| {
                                if parent[u as usize] != r.via {
                                    return None;
                                }
                                let before = self.at[r.via as usize].found().iter().find(|b| b.pin == r.pin)?;
                                ((before.distance + l).to_bits() == r.distance.to_bits()).then_some(u)
                            })
                        })
                        .flatten();
                }
                via
            })
            .collect();
        let steps_of = |p: usize| -> &[Option<u32>] {
            let k = rows.binary_search(&(p as u32)).expect("a changed particle");
            &steps[k][..settled(p)]
        };
        // The particles searched again: those with a path cut, and every particle with a step
        // through one of them (`whole_paths`' rule), found from them along the edges.
        let mut lost = vec![false; n];
        let mut searched_again: Vec<u32> = rows
            .iter()
            .copied()
            .filter(|&p| !is_pin[p as usize] && steps_of(p as usize).iter().any(|s| s.is_none()))
            .collect();
        for &p in &searched_again {
            lost[p as usize] = true;
        }
        let mut next = searched_again.clone();
        while let Some(v) = next.pop() {
            for &(u, _) in graph.of(v as usize) {
                let u = u as usize;
                if lost[u] || is_pin[u] {
                    continue;
                }
                let through = if changed[u] {
                    steps_of(u).contains(&Some(v))
                } else {
                    self.at[u].found().iter().any(|r| r.via == v)
                };
                if through {
                    lost[u] = true;
                    searched_again.push(u as u32);
                    next.push(u as u32);
                }
            }
        }
        searched_again.sort_unstable();
        // The kept records, on the new particles and pins; the others to search.
        let same_pins = pins == self.pins;
        let new_pin = |old: u32| pins[self.pins.binary_search(&old).expect("a pin's parent is a pin")];
        let mut at = spare.at;
        if at.capacity() < n {
            at.reserve_exact(n + n / 16);
        }
        (0..n)
            .into_par_iter()
            .with_min_len(GRAPH_CHUNK)
            .map(|p| {
                if is_pin[p] {
                    return Search::pinned(p as u32);
                }
                if lost[p] {
                    return Search::default();
                }
                let mut r = self.at[parent[p] as usize];
                r.known = true;
                if changed[p] {
                    for (f, s) in r.found.iter_mut().zip(steps_of(p)) {
                        f.via = s.expect("a kept path's step");
                    }
                }
                if !same_pins {
                    for f in &mut r.found[..r.settled as usize] {
                        f.pin = new_pin(f.pin);
                    }
                }
                r
            })
            .collect_into_vec(&mut at);
        drop(steps);
        // The search from the kept particles and pins around the others.
        if !search_again(&graph, &mut at, &searched_again) {
            return TetherSearch::new(model, pinned);
        }
        let searched = searched_again.iter().filter(|&&p| at[p as usize].settled > 0).count();
        TetherSearch { pins, at, graph, searched }
    }

    /// For each particle of the new model (`graph`, `parent`, `pins`) and each of its old
    /// paths: the neighbour its path now comes from (`Some(NONE)` for a pin's own), or `None`
    /// when the path is gone.
    fn paths_kept(&self, graph: &Graph, parent: &[u32], pins: &[u32]) -> Vec<[Option<u32>; 2]> {
        const UNKNOWN: Option<Option<u32>> = None;
        let n = parent.len();
        let mut kept = vec![[UNKNOWN; 2]; n];
        let mut chain: Vec<(u32, usize, u32, usize)> = Vec::new();
        for p0 in 0..n {
            for k0 in 0..self.at[parent[p0] as usize].settled as usize {
                // Follow the path back until a particle whose path is known, then settle the
                // chain from there.
                let (mut p, mut k) = (p0 as u32, k0);
                let mut end: Option<u32> = loop {
                    if let Some(known) = kept[p as usize][k] {
                        break known.map(|_| p);
                    }
                    let old = &self.at[parent[p as usize] as usize];
                    let r = old.found[k];
                    if r.via == NONE {
                        // The pin's own path: p must be the pin's copy, and a pin.
                        let here = pins.binary_search(&p).is_ok() && parent[p as usize] == r.pin;
                        kept[p as usize][k] = Some(here.then_some(NONE));
                        break here.then_some(p);
                    }
                    // The neighbour that is a copy of the old last step, holding the same pin
                    // at a distance that gives this one bit for bit.
                    let step = graph.of(p as usize).iter().find_map(|&(u, l)| {
                        if parent[u as usize] != r.via {
                            return None;
                        }
                        let before = &self.at[r.via as usize];
                        let j = before.found().iter().position(|b| b.pin == r.pin)?;
                        ((before.found[j].distance + l).to_bits() == r.distance.to_bits()).then_some((u, j))
                    });
                    let Some((u, j)) = step else {
                        kept[p as usize][k] = Some(None);
                        break None;
                    };
                    chain.push((p, k, u, j));
                    (p, k) = (u, j);
                };
                while let Some((p, k, u, _)) = chain.pop() {
                    kept[p as usize][k] = Some(end.map(|_| u));
                    end = end.map(|_| p);
                }
            }
        }
        kept.into_iter().map(|k| k.map(|k| k.flatten())).collect()
    }

    /// The pins searched from, sorted, without repeats.
    pub fn pins(&self) -> &[u32] {
        &self.pins
    }

    /// The particles this search settled: every reached free particle for a new search, those
    /// whose paths a tear cut for [`TetherSearch::after_tear`].
    pub fn searched(&self) -> usize {
        self.searched
    }

    /// The tethers of every free particle of a body that has pins, to its two nearest pins
    /// (sorted by particle), with their lengths: the rest distance times 1 + ε (see the module
    /// documentation).
    ///
    /// # Errors
    /// [`ModelError::Invalid`] if `model` is not the model searched (another particle count).
    pub fn tethers(&self, model: &Model) -> Result<Vec<Tether>, ModelError> {
        if model.particle_count() != self.at.len() {
            return Err(ModelError::invalid(
                "tethers",
                format!("a search of {} particles for a model of {}", self.at.len(), model.particle_count()),
            ));
        }
        let x = model.particle_position();
        let mut out = Vec::new();
        for (b, body) in model.bodies().iter().enumerate() {
            let scale = (1.0 + slack(model, b)) * (1.0 + TOLERANCE);
            // A torn grid (split, or with a crack not yet opened) is no longer flat to the
            // pins: a path around a crack is longer than the straight distance, which would
            // hold the crack closed. It keeps the distance along its edges, as a mesh does.
            let flat = match body.kind {
                BodyKind::ClothGrid { rows, columns } => {
                    body.particles.len() == rows * columns
                        && !model.cracks.iter().any(|c| body.particles.contains(&c[0]))
                }
                _ => false,
            };
            // In parallel, in order.
            let tether = |p: u32| -> Option<Tether> {
                let pi = p as usize;
                let here = &self.at[pi];
                if here.pin || here.settled == 0 {
                    return None;
                }
                let mut t = Tether { particle: p, count: here.settled as u32, pins: [0; 2], length: [0.0; 2] };
                for (k, r) in here.found().iter().enumerate() {
                    // A flat grid's geodesic is the straight distance; ropes, meshes and torn
                    // grids keep the distance along their edges.
                    let rest = if flat { (x[pi] - x[r.pin as usize]).length() } else { r.distance };
                    t.pins[k] = r.pin;
                    t.length[k] = rest * scale;
                }
                Some(t)
            };
            let mut tethers = crate::parallel::filter_map_ordered(body.particles.clone(), GRAPH_CHUNK as u32, tether);
            if out.is_empty() {
                out = tethers;
            } else {
                out.append(&mut tethers);
            }
        }
        Ok(out)
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
    TetherSearch::new(model, pinned).tethers(model).expect("a search of the model itself")
}

/// A solver's tethers kept current: searched when the pins change, updated after a tear
/// where it cut paths ([`TetherSearch::after_tear`]), measured again after a material change
/// (the slack depends on the material). The CPU and GPU solvers keep one each.
#[derive(Clone, Debug, Default)]
pub struct TetherCache {
    search: Option<TetherSearch>,
    /// For each particle of the model now, the particle of the model searched it comes from,
    /// when tears have changed the model since.
    lineage: Option<Vec<u32>>,
    /// Whether a material has changed since the tethers were measured.
    stale: bool,
    /// The search and tethers of the model now for the pins' copies, made ahead of the next
    /// update ([`TetherCache::prepare`]) and not yet handed out.
    prepared: Option<Prepared>,
    /// The search the last update replaced, whose memory the next search made ahead is made
    /// in (see `Graph::laid_out`).
    spare: Option<TetherSearch>,
}

/// A search made ahead after a tear ([`TetherCache::prepare`]), with its tethers: what the
/// next [`TetherCache::update`] returns if it asks for the same pins.
#[derive(Clone, Debug)]
pub struct Prepared {
    search: TetherSearch,
    tethers: Vec<Tether>,
}

impl TetherCache {
    /// The tethers of `pinned` (particle indices, any order) on `model`, the solver's model
    /// now, when they differ from those of the last call; `None` when they are the same.
    pub fn update(&mut self, model: &Model, pinned: &[u32]) -> Option<Vec<Tether>> {
        let n = model.particle_count();
        let pins = sorted_pins(pinned, n);
        if let Some(p) = self.prepared.take()
            && p.search.pins == pins
            && p.search.at.len() == n
        {
            // What the search below would do, done already.
            self.lineage = None;
            let tethers =
                if self.stale { p.search.tethers(model).expect("a search of the model itself") } else { p.tethers };
            self.stale = false;
            self.spare = self.search.replace(p.search);
            return Some(tethers);
        }
        let search = match (self.search.take(), self.lineage.take()) {
            (Some(old), Some(parent)) => {
                let search = old.after_tear(model, &parent, &pins);
                self.spare = Some(old);
                search
            }
            (Some(old), None) if old.pins == pins && old.at.len() == n => {
                if !self.stale {
                    self.search = Some(old);
                    return None;
                }
                old
            }
            _ => TetherSearch::new(model, &pins),
        };
        self.stale = false;
        let tethers = search.tethers(model).expect("a search of the model itself");
        if self.spare.is_none() && crate::tearing::lowest_breaking_strain(model).is_finite() {
            // A cloth that tears: memory for the search after its first tear, touched now
            // rather than in the tear.
            self.spare = Some(search.clone());
        }
        self.search = Some(search);
        Some(tethers)
    }

    /// The model was torn: `parent` (one entry per particle of the torn model) gives the
    /// particle of the model before the tear that each comes from
    /// ([`Torn::parent`](crate::tearing::Torn::parent)). The next [`TetherCache::update`]
    /// searches only where the tear cut paths.
    pub fn torn(&mut self, parent: &[u32]) {
        self.prepared = None;
        if self.search.is_none() {
            return;
        }
        self.lineage = Some(self.lineage_after(parent));
    }

    /// For each particle after a tear whose `parent` map is given, the particle of the model
    /// searched it comes from.
    fn lineage_after(&self, parent: &[u32]) -> Vec<u32> {
        match &self.lineage {
            None => parent.to_vec(),
            // Two tears between updates: back to the model searched (an index that fits
            // nothing makes the next update search anew).
            Some(before) => parent.iter().map(|&q| before.get(q as usize).copied().unwrap_or(NONE)).collect(),
        }
    }

    /// The search that the first update after a tear would make — the tear that made `model`
    /// with its `parent` map, as [`TetherCache::torn`] takes it — made now, for the pins'
    /// copies: every particle that comes from a pin of the last search, as a control mapped
    /// through the tear pins them (`hooke_sim::Tearing::control`). A solver makes it beside
    /// its own rebuild and hands it to [`TetherCache::torn_prepared`]; `None` without a
    /// search to follow. Leaves the cache as it is (the rebuild may fail).
    ///
    /// With `from` (the model torn, which must be the model of the last update, and the runs
    /// the tear copied from it) the search looks only where the tear changed something
    /// ([`TetherSearch::after_tear_from`]), when the last update's search is of that model
    /// (no other tear since); the result is the same.
    pub fn prepare(&mut self, model: &Model, parent: &[u32], from: Option<TornFrom<'_>>) -> Option<Prepared> {
        let spare = self.spare.take().unwrap_or_default();
        let old = self.search.as_ref()?;
        let lineage = self.lineage_after(parent);
        let pins = crate::parallel::filter_map_ordered(0..lineage.len() as u32, GRAPH_CHUNK as u32, |p| {
            old.at.get(lineage[p as usize] as usize).is_some_and(|r| r.pin).then_some(p)
        });
        let search = match from {
            Some(from) if self.lineage.is_none() => old.after_tear_reusing(model, &lineage, &pins, from, spare),
            _ => old.after_tear(model, &lineage, &pins),
        };
        let tethers = search.tethers(model).ok()?;
        Some(Prepared { search, tethers })
    }

    /// Runs `work` (a solver's rebuild for the torn model) on this thread and, beside it, on a
    /// thread that flushes subnormals as this one does ([`crate::fp`]),
    /// [`TetherCache::prepare`] for `model`, `parent` and `from`; returns both results.
    pub fn prepare_beside<R>(
        &mut self,
        model: &Model,
        parent: &[u32],
        from: Option<TornFrom<'_>>,
        work: impl FnOnce() -> R,
    ) -> (R, Option<Prepared>) {
        let flush = crate::fp::flushes_subnormals();
        std::thread::scope(|s| {
            let prepared = s.spawn(|| {
                if flush {
                    crate::fp::flush_subnormals();
                }
                self.prepare(model, parent, from)
            });
            let done = work();
            (done, prepared.join().expect("the tethers' search does not panic"))
        })
    }

    /// [`TetherCache::torn`], keeping `prepared` (made by [`TetherCache::prepare`] with the
    /// same model and `parent`) for the next update: that update returns its tethers if it
    /// asks for the same pins, and searches as after [`TetherCache::torn`] otherwise.
    pub fn torn_prepared(&mut self, parent: &[u32], prepared: Option<Prepared>) {
        self.torn(parent);
        if self.search.is_some() {
            self.prepared = prepared;
        }
    }

    /// A material has changed: the next update measures the tethers again.
    pub fn material_changed(&mut self) {
        self.stale = true;
    }

    /// The search behind the tethers of the last update, if any.
    pub fn search(&self) -> Option<&TetherSearch> {
        self.search.as_ref()
    }
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

    /// The triangles of an nx × ny grid of particles numbered row by row, two per cell.
    fn grid_triangles(nx: usize, ny: usize) -> Vec<[u32; 3]> {
        let mut triangles = Vec::new();
        for j in 0..ny - 1 {
            for i in 0..nx - 1 {
                let a = (j * nx + i) as u32;
                triangles.push([a, a + 1, a + nx as u32 + 1]);
                triangles.push([a, a + nx as u32 + 1, a + nx as u32]);
            }
        }
        triangles
    }

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
                let triangles = grid_triangles(nx, ny);
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

    /// After a tear, the search updated where the tear cut paths is the full search of the torn
    /// model, tether for tether and bit for bit: random cuts (one, or two in a row through the
    /// cache) across a grid (many pins exactly as far) and a jittered mesh, pinned along a row,
    /// at corners or at random particles (on every copy of a split pin, or on one). Many cuts
    /// leave most paths: the update searches fewer than half the particles the full search does
    /// in over an eighth of the cases. The search made ahead of the update
    /// ([`TetherCache::prepare`]) is taken where the pins are every copy of a pin, and gives
    /// the same tethers.
    #[test]
    fn after_a_tear_the_updated_search_is_the_full_search() {
        use crate::model::ClothMesh;
        use crate::tearing::{self, Cut};
        use glam::Vec2;
        use proptest::prelude::*;
        // A fixed seed: the share of cases the update searches less in is asserted below.
        let rng = proptest::test_runner::TestRng::deterministic_rng(proptest::test_runner::RngAlgorithm::ChaCha);
        let mut runner = proptest::test_runner::TestRunner::new_with_rng(ProptestConfig::with_cases(96), rng);
        let blade = || prop::collection::vec((-0.2f32..1.2, -0.2f32..1.2), 2..4);
        let cases = ((8usize..16, 8usize..16, any::<bool>(), 0u8..3, any::<u64>()), blade(), prop::option::of(blade()));
        // Torn cases, and those where the update searched fewer than half the particles.
        let (torn, fewer) = (std::cell::Cell::new(0usize), std::cell::Cell::new(0usize));
        runner
            .run(&cases, |((nx, ny, jitter, pinning, seed), first, second)| {
                let mut rng = seed;
                let mut rand = move || {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    (rng >> 11) as f32 / (1u64 << 53) as f32
                };
                let h = 1.0 / (nx.max(ny) - 1) as f32;
                let mut positions = Vec::new();
                let mut uvs = Vec::new();
                for j in 0..ny {
                    for i in 0..nx {
                        let (u, v) = (i as f32 * h, j as f32 * h);
                        let wobble = if jitter { 0.3 * h } else { 0.0 };
                        positions.push(Vec3::new(u + wobble * (rand() - 0.5), v + wobble * (rand() - 0.5), 0.0));
                        uvs.push(Vec2::new(u, v));
                    }
                }
                let triangles = grid_triangles(nx, ny);
                let mut mesh = ClothMesh::new("m", positions, triangles);
                mesh.uvs = Some(uvs);
                let mut b = ModelBuilder::new();
                b.add_cloth_mesh(&mesh).unwrap();
                let model = b.finalize().unwrap();
                let n = model.particle_count() as u32;
                let pins: Vec<u32> = match pinning {
                    0 => ((ny - 1) * nx..ny * nx).map(|p| p as u32).collect(),
                    1 => vec![(ny - 1) as u32 * nx as u32, n - 1],
                    _ => (0..5).map(|_| (rand() * n as f32) as u32 % n).collect(),
                };
                let mut cache = TetherCache::default();
                cache.update(&model, &pins).unwrap();
                // The same, with each tear's search made ahead as the solvers make it.
                let mut ahead = cache.clone();
                let (mut model, mut parent_of): (Model, Vec<u32>) = (model, (0..n).collect());
                let mut tears = 0;
                for blade in std::iter::once(first).chain(second) {
                    let points: Vec<Vec3> = blade.iter().map(|&(x, y)| Vec3::new(x, y, 0.0)).collect();
                    let cut = tearing::cut(&model, model.particle_position(), &Cut { points, direction: Vec3::Z });
                    // Torn where the particles are now, stretched (as a tearing cloth is) or,
                    // in a quarter of the cases, squeezed: a flap's new edges take their present
                    // lengths, then shorter than the rest lengths (the update searches anew;
                    // such a shortcut would also reach a kept particle from one searched again,
                    // which the check after the search catches, so this case does not single
                    // out `Graph::lengthens`).
                    let x = model.particle_position();
                    let scale = if seed % 4 == 1 { 0.5 } else { 1.05 };
                    let now: Vec<Vec3> =
                        x.iter().map(|p| *p * scale + 0.02 * h * Vec3::new(rand() - 0.5, rand() - 0.5, 0.0)).collect();
                    let Some(torn) = tearing::tear(&model, &now, &cut).unwrap() else { continue };
                    cache.torn(&torn.parent);
                    let from = TornFrom { old: &model, copied: &torn.copied.distance };
                    let prepared = ahead.prepare(&torn.model, &torn.parent, Some(from));
                    // Told what the tear kept, the update is the same search (its graph the
                    // model's own), where it looked only at the changed particles.
                    if ahead.lineage.is_none() {
                        let before = ahead.search.as_ref().unwrap();
                        let lineage: Vec<u32> = torn.parent.clone();
                        let pinned: Vec<u32> = (0..torn.model.particle_count() as u32)
                            .filter(|&p| before.at[lineage[p as usize] as usize].pin)
                            .collect();
                        let quick = before.after_tear_from(&torn.model, &lineage, &pinned, from);
                        let slow = before.after_tear(&torn.model, &lineage, &pinned);
                        prop_assert_eq!(&quick.graph, &Graph::new(&torn.model));
                        prop_assert_eq!(quick.searched, slow.searched);
                        prop_assert_eq!(quick.tethers(&torn.model).unwrap(), slow.tethers(&torn.model).unwrap());
                        // A run that does not hold what it claims (the whole set copied) costs time,
                        // not correctness.
                        let len = model.distance().len().min(torn.model.distance().len()) as u32;
                        let wrong = [CopiedRun { from: 0, to: 0, len }];
                        let from_wrong = TornFrom { old: &model, copied: &wrong };
                        let misled = before.after_tear_from(&torn.model, &lineage, &pinned, from_wrong);
                        prop_assert_eq!(misled.tethers(&torn.model).unwrap(), slow.tethers(&torn.model).unwrap());
                    }
                    ahead.torn_prepared(&torn.parent, prepared);
                    tears += 1;
                    parent_of = torn.parent.iter().map(|&q| parent_of[q as usize]).collect();
                    model = torn.model;
                }
                if tears == 0 {
                    return Ok(());
                }
                // The pins on every copy of a pinned particle, as a run keeps them, or on its
                // first copy only (then the other copies are new paths between the pins).
                let every: Vec<u32> =
                    (0..model.particle_count() as u32).filter(|&p| pins.contains(&parent_of[p as usize])).collect();
                let mut now = every.clone();
                if seed % 2 == 0 {
                    let mut seen = std::collections::HashSet::new();
                    now.retain(|&p| seen.insert(parent_of[p as usize]));
                }
                let tethers = cache.update(&model, &now).unwrap();
                let fresh = TetherSearch::new(&model, &now);
                prop_assert_eq!(&tethers, &fresh.tethers(&model).unwrap());
                // The search made ahead is taken when the pins are every copy of a pin, and the
                // result is the same (after a material change, measured again on the new one).
                let taken = ahead.prepared.as_ref().is_some_and(|p| p.search.pins == now);
                prop_assert_eq!(taken, now == every);
                if seed % 3 == 0 {
                    // A weave four times softer: the slack, and so every length, changes.
                    let crate::BodyMaterial::Cloth(m) = model.bodies()[0].material else { unreachable!() };
                    let soft = model
                        .with_cloth_material(
                            0,
                            crate::ClothMaterial { stretch_stiffness: m.stretch_stiffness / 4.0, ..m },
                        )
                        .unwrap();
                    ahead.material_changed();
                    let measured = ahead.update(&soft, &now).unwrap();
                    prop_assert_eq!(&measured, &TetherSearch::new(&soft, &now).tethers(&soft).unwrap());
                    prop_assert!(measured != tethers, "the softer weave's tethers are longer");
                    prop_assert!(ahead.prepared.is_none() && ahead.update(&soft, &now).is_none());
                } else {
                    prop_assert_eq!(&ahead.update(&model, &now).unwrap(), &tethers);
                    prop_assert!(ahead.prepared.is_none() && ahead.update(&model, &now).is_none());
                }
                let search = cache.search().unwrap();
                prop_assert!(search.searched() <= fresh.searched());
                torn.set(torn.get() + 1);
                fewer.set(fewer.get() + (2 * search.searched() < fresh.searched()) as usize);
                Ok(())
            })
            .unwrap();
        let (torn, fewer) = (torn.get(), fewer.get());
        assert!(8 * fewer > torn, "of {torn} torn models, {fewer} updated with fewer than half the particles searched");
    }

    /// Which of two pins exactly as far a search picks depends on the paths (a pin one
    /// rounding step behind two others at a particle goes no further, and ties again beyond
    /// it): a 15 × 8 grid pinned at 10, 35 and 28, one edge beside pin 10 torn (a reviewer's
    /// case). The tear unblocks pin 28, which then ties with 35 at particles 0 and 9 whose own
    /// paths survive; the full search takes the lower index, and so must the update.
    #[test]
    fn a_tie_the_tear_unblocks_goes_as_in_the_full_search() {
        let mut b = ModelBuilder::new();
        b.add_cloth_grid(&ClothGrid::new("g", 15, 8, 0.07)).unwrap();
        let model = b.finalize().unwrap();
        let pins = [10u32, 35, 28];
        let search = TetherSearch::new(&model, &pins);
        let c = model.distance().constraints()[163];
        assert_eq!((c.i.min(c.j), c.i.max(c.j)), (10, 18), "the edge beside pin 10");
        let torn = crate::tearing::tear(&model, model.particle_position(), &[163]).unwrap().unwrap();
        let m = &torn.model;
        let fresh = TetherSearch::new(m, &pins).tethers(m).unwrap();
        let updated = search.after_tear(m, &torn.parent, &pins).tethers(m).unwrap();
        let at9 = |t: &[Tether]| t.iter().find(|t| t.particle == 9).map(|t| t.pins);
        assert_eq!(at9(&fresh), Some([10, 28]), "the full search's choice");
        assert_eq!(updated, fresh);
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
