//! Contact of cloth triangles with colliders, through virtual particles (issue #10 item 4; the
//! approach of NvCloth's "virtual particles").
//!
//! Particle contact alone keeps the cloth's *vertices* out of a collider, but not the surface
//! between them: a box's edges and corners poke between the particles of a cloth draped over
//! it, and on a coarse mesh the triangles dip into a sphere between their vertices. Here each
//! triangle also carries four virtual particles — its centroid and the midpoints of its three
//! edges, p = Σ bᵢ xᵢ with barycentric weights b — of the radius of its vertices. After the
//! particle pass of the colliders stage each virtual particle is projected out of every
//! collider it reaches (along the signed distance's gradient, by r − φ, then Coulomb friction
//! on its motion relative to the collider, as for particles), and the
//! correction Δ is handed to the triangle's vertices so that p moves by exactly Δ:
//! Δxᵢ = bᵢ wᵢ / (Σⱼ bⱼ² wⱼ) · Δ (w the inverse masses; a pinned vertex does not move).
//!
//! The pass is a Jacobi gather: every virtual particle's Δ is computed from the positions after
//! the particle pass, then each vertex takes the mean of the corrections of the virtual
//! particles around it that touch a collider (a vertex under a box edge is pushed by several
//! at once, and their sum would overshoot). So the order of the triangles does not matter, and
//! the GPU (`collide.wgsl`) computes the same bits.
//!
//! With the centroid and the edge midpoints held at the contact distance, a chord between two
//! particles on either side of a convex edge cannot cross the edge, and a corner can poke
//! through a triangle only between its four virtual particles and three vertices.

use super::{Collider, ColliderBroadPhase, ColliderPlacement, broad_phase};
use crate::Model;
use glam::Vec3;
use rayon::prelude::*;

/// Triangles (or particles) per parallel task at least.
const CHUNK: usize = 256;

/// The virtual particles of a triangle: its centroid, then the midpoints of edges 0–1, 1–2
/// and 2–0.
pub const POINTS_PER_TRIANGLE: usize = 4;

/// The cloth triangles that carry virtual particles, and the scratch of their corrections.
#[derive(Clone, Debug, Default)]
pub struct TriangleContact {
    /// Indices into the model's triangles, increasing.
    triangles: Vec<u32>,
    /// CSR over particles: the (slot, corner) pairs of the listed triangles around each,
    /// `entries[offsets[p]..offsets[p + 1]]`, each `slot << 2 | corner`.
    offsets: Vec<u32>,
    entries: Vec<u32>,
    /// Per slot, the correction of each virtual particle (m).
    delta: Vec<[Vec3; POINTS_PER_TRIANGLE]>,
}

/// The per-particle lists of (slot, corner) entries of the listed `triangles` (see
/// [`TriangleContact::adjacency`]): a counting sort over the slots.
fn lists_of(model: &Model, triangles: &[u32]) -> (Vec<u32>, Vec<u32>) {
    let n = model.particle_count();
    let mut count = vec![0u32; n + 1];
    for &t in triangles {
        for &p in &model.triangles()[t as usize] {
            count[p as usize + 1] += 1;
        }
    }
    for p in 0..n {
        count[p + 1] += count[p];
    }
    let mut next = count.clone();
    let mut entries = vec![0u32; count[n] as usize];
    for (slot, &t) in triangles.iter().enumerate() {
        for (corner, &p) in model.triangles()[t as usize].iter().enumerate() {
            entries[next[p as usize] as usize] = (slot as u32) << 2 | corner as u32;
            next[p as usize] += 1;
        }
    }
    (count, entries)
}

/// [`lists_of`] every triangle of the model, from the model's own triangles around each
/// particle (the same order: a counting sort over the triangles), each with its corner there;
/// in parallel, a block of particles at a time.
fn lists_of_all(model: &Model) -> (Vec<u32>, Vec<u32>) {
    let (offsets, around) = model.particle_triangle_adjacency();
    let mut entries = vec![0u32; around.len()];
    crate::model::csr_blocks(&mut entries, offsets, CHUNK).into_par_iter().for_each(|(p0, p1, block)| {
        let base = offsets[p0] as usize;
        for p in p0..p1 {
            for e in offsets[p] as usize..offsets[p + 1] as usize {
                let t = around[e];
                let corner = model.triangles()[t as usize].iter().position(|&v| v as usize == p).unwrap_or(0);
                block[e - base] = t << 2 | corner as u32;
            }
        }
    });
    (offsets.to_vec(), entries)
}

impl TriangleContact {
    /// The triangles of every cloth whose material has `triangle_contact` on, when the model
    /// has colliders.
    pub fn new(model: &Model) -> TriangleContact {
        let mut triangles = Vec::new();
        if !model.colliders().is_empty() {
            for body in model.bodies() {
                if let crate::model::BodyMaterial::Cloth(m) = &body.material
                    && m.triangle_contact
                {
                    triangles.extend(body.triangles.clone());
                }
            }
        }
        // Every triangle listed (in order, 0..T): the lists are the model's own, made in
        // parallel. (The corrections' scratch is made at the first push: the GPU needs none.)
        let every = !triangles.is_empty()
            && triangles.len() == model.triangles().len()
            && triangles.iter().enumerate().all(|(k, &t)| k as u32 == t);
        let (offsets, entries) = if every { lists_of_all(model) } else { lists_of(model, &triangles) };
        TriangleContact { triangles, offsets, entries, delta: Vec::new() }
    }

    /// Whether every triangle of `model` takes part, in order (every body with triangles a
    /// cloth with triangle contact, and a collider to touch): then the lists are the model's
    /// own triangles around each particle, each slot its triangle. Without making the lists.
    pub fn takes_every_triangle(model: &Model) -> bool {
        if model.colliders().is_empty() || model.triangles().is_empty() {
            return false;
        }
        let mut end = 0u32;
        for body in model.bodies() {
            if body.triangles.is_empty() {
                continue;
            }
            let listed = matches!(&body.material, crate::model::BodyMaterial::Cloth(m) if m.triangle_contact);
            if !listed || body.triangles.start != end {
                return false;
            }
            end = body.triangles.end;
        }
        end as usize == model.triangles().len()
    }

    /// Whether no triangle takes part.
    pub fn is_empty(&self) -> bool {
        self.triangles.is_empty()
    }

    /// The listed triangles (indices into the model's triangles).
    pub fn triangles(&self) -> &[u32] {
        &self.triangles
    }

    /// The per-particle CSR of (slot, corner) entries: offsets (particle count + 1) and entries
    /// `slot << 2 | corner`.
    pub fn adjacency(&self) -> (&[u32], &[u32]) {
        (&self.offsets, &self.entries)
    }

    /// Computes every virtual particle's correction from the particles' positions at the start
    /// of the substep, `start(p)`, and their displacements since, `moved(p)` (m), and their
    /// radii; returns how many touch a collider.
    pub(crate) fn push(
        &mut self,
        model: &Model,
        placements: &[ColliderPlacement],
        broad: &ColliderBroadPhase,
        start: impl Fn(usize) -> Vec3 + Sync,
        moved: impl Fn(usize) -> Vec3 + Sync,
        parallel: bool,
    ) -> u32 {
        let radius = model.particle_radius();
        let colliders = model.colliders();
        let one = |(&t, out): (&u32, &mut [Vec3; POINTS_PER_TRIANGLE])| -> u32 {
            let [i, j, k] = model.triangles()[t as usize].map(|v| v as usize);
            let (a, b, c) = (start(i), start(j), start(k));
            let (da, db, dc) = (moved(i), moved(j), moved(k));
            let (ra, rb, rc) = (radius[i], radius[j], radius[k]);
            let within = model.colliders_of_particle(i);
            if clear_of_colliders(
                colliders,
                within.clone(),
                placements,
                broad,
                [a + da, b + db, c + dc],
                ra.max(rb).max(rc),
            ) {
                *out = [Vec3::ZERO; POINTS_PER_TRIANGLE];
                return 0;
            }
            let points = [
                ((a + b + c) / 3.0, (da + db + dc) / 3.0, (ra + rb + rc) / 3.0),
                ((a + b) * 0.5, (da + db) * 0.5, (ra + rb) * 0.5),
                ((b + c) * 0.5, (db + dc) * 0.5, (rb + rc) * 0.5),
                ((c + a) * 0.5, (dc + da) * 0.5, (rc + ra) * 0.5),
            ];
            let mut touching = 0;
            for (q, &(x0, d, r)) in points.iter().enumerate() {
                let delta = project_point(colliders, within.clone(), placements, broad, x0, d, r);
                touching += (delta != Vec3::ZERO) as u32;
                out[q] = delta;
            }
            touching
        };
        if self.delta.len() != self.triangles.len() {
            self.delta = vec![[Vec3::ZERO; POINTS_PER_TRIANGLE]; self.triangles.len()];
        }
        if parallel {
            self.triangles.par_iter().zip(self.delta.par_iter_mut()).with_min_len(CHUNK).map(one).sum()
        } else {
            self.triangles.iter().zip(self.delta.iter_mut()).map(one).sum()
        }
    }

    /// The correction particle `p` (inverse mass `w[p]` > 0) takes from the virtual particles
    /// around it: the mean over those that touch of bᵢwᵢ/(Σⱼbⱼ²wⱼ)·Δ (m), or zero.
    pub(crate) fn gather(&self, model: &Model, p: usize, w: impl Fn(usize) -> f32) -> Vec3 {
        let (start, end) = (self.offsets[p] as usize, self.offsets[p + 1] as usize);
        let mut sum = Vec3::ZERO;
        let mut count = 0u32;
        for &e in &self.entries[start..end] {
            let (slot, corner) = ((e >> 2) as usize, (e & 3) as usize);
            let tri = model.triangles()[self.triangles[slot] as usize];
            let wc = tri.map(|v| w(v as usize));
            // (No correction before the first push.)
            let Some(d) = self.delta.get(slot) else { continue };
            // Centroid: b = 1/3 for all three corners.
            if d[0] != Vec3::ZERO {
                let s = (wc[0] + wc[1]) + wc[2];
                sum += d[0] * (3.0 * wc[corner] / s);
                count += 1;
            }
            // The midpoints of the two edges through this corner: b = 1/2 at both ends.
            for q in [corner, (corner + 2) % 3] {
                if d[1 + q] != Vec3::ZERO {
                    let s = wc[q] + wc[(q + 1) % 3];
                    sum += d[1 + q] * (2.0 * wc[corner] / s);
                    count += 1;
                }
            }
        }
        if count == 0 { Vec3::ZERO } else { sum / count as f32 }
    }
}

/// Whether no virtual particle of the triangle with corners `x` (m, current positions) and
/// largest corner radius `r` can touch a collider: each collider its box reaches is farther from
/// the centroid than r plus L times the largest distance from the centroid to an edge midpoint
/// (a signed distance changes by at most L times the distance moved,
/// [`Shape::growth_bound`](super::Shape::growth_bound)), with 10⁻⁵ m and 10⁻⁶ of the
/// coordinates to spare for rounding. One evaluation per nearby collider instead of four; when it holds the
/// four projections would have found nothing, so the result is the same.
#[inline]
fn clear_of_colliders(
    colliders: &[Collider],
    within: std::ops::Range<usize>,
    placements: &[ColliderPlacement],
    broad: &ColliderBroadPhase,
    x: [Vec3; 3],
    r: f32,
) -> bool {
    let centroid = (x[0] + x[1] + x[2]) / 3.0;
    let reach = ((x[0] + x[1]) * 0.5 - centroid)
        .length()
        .max(((x[1] + x[2]) * 0.5 - centroid).length())
        .max(((x[2] + x[0]) * 0.5 - centroid).length());
    let size = x[0].abs().max(x[1].abs()).max(x[2].abs()).max_element();
    let spare = 1e-5 + 1e-6 * size;
    let (mut lo, mut hi) = broad_phase::path_box(x[0], x[1], r);
    let (l2, h2) = broad_phase::path_box(x[2], x[2], r);
    (lo, hi) = (lo.min(l2), hi.max(h2));
    let mut next = within.start;
    while let Some(k) = broad.first_overlapping_before(next, within.end, lo, hi) {
        let shape = &colliders[k].shape;
        if placements[k].signed_distance(shape, centroid).0 <= r + shape.growth_bound() * reach + spare {
            return false;
        }
        next = k + 1;
    }
    true
}

/// The correction (m) that takes a virtual particle of radius `r`, at `x0` at the start of the
/// substep and moved by `d` since, out of every collider it reaches, colliders in index order:
/// the projection along the normal, then Coulomb friction on its motion relative to the
/// collider's surface (as for particles, without the swept test).
#[inline]
pub(crate) fn project_point(
    colliders: &[Collider],
    within: std::ops::Range<usize>,
    placements: &[ColliderPlacement],
    broad: &ColliderBroadPhase,
    x0: Vec3,
    d: Vec3,
    r: f32,
) -> Vec3 {
    let mut moved = d;
    let mut next = within.start;
    loop {
        let q = x0 + moved;
        let (lo, hi) = broad_phase::path_box(q, q, r);
        let Some(k) = broad.first_overlapping_before(next, within.end, lo, hi) else {
            return moved - d;
        };
        let (c, s) = (&colliders[k], &placements[k]);
        let (phi, n) = s.signed_distance(&c.shape, q);
        let depth = r - phi;
        if depth > 0.0 {
            moved = super::push_out(c, s, x0, moved, n, depth);
        }
        next = k + 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ClothGrid, ModelBuilder};

    /// The lists made from the model's own triangles around each particle are those of the
    /// counting sort over every triangle, entry for entry: on two grids, and on them torn (the
    /// split particles' copies numbered after their body, their triangles' corners moved).
    #[test]
    fn every_triangles_lists_are_the_counting_sorts() {
        let mut b = ModelBuilder::new();
        b.add_cloth_grid(&ClothGrid::new("a", 9, 12, 0.1)).unwrap();
        let mut g = ClothGrid::new("b", 7, 5, 0.1);
        g.center = Vec3::new(3.0, 0.0, 0.0);
        b.add_cloth_grid(&g).unwrap();
        let model = b.finalize().unwrap();
        // Every third structural or shear constraint of the first grid broken.
        let set = model.distance();
        let broken: Vec<u32> = (0..set.len() as u32)
            .filter(|&k| {
                let c = set.constraints()[k as usize];
                k % 3 == 0
                    && model.bodies()[0].particles.contains(&c.i)
                    && matches!(
                        set.families()[k as usize],
                        crate::ConstraintFamily::Structural | crate::ConstraintFamily::Shear
                    )
            })
            .collect();
        let torn = crate::tearing::tear(&model, model.particle_position(), &broken).unwrap().unwrap();
        assert!(torn.split > 0);
        for m in [&model, &torn.model] {
            let all: Vec<u32> = (0..m.triangles().len() as u32).collect();
            assert_eq!(lists_of_all(m), lists_of(m, &all));
        }
    }

    /// `takes_every_triangle` says whether the plan lists every triangle in order, as the plan
    /// made finds: two cloths, a rope between them, with and without a collider, with one
    /// cloth's triangle contact off (the first or the last).
    #[test]
    fn every_triangle_is_taken_exactly_when_the_plan_lists_them_all() {
        use crate::collision::{Collider, Shape};
        let build = |collider: bool, off: Option<usize>| {
            let mut b = ModelBuilder::new();
            let mut a = ClothGrid::new("a", 4, 5, 0.1);
            a.material.triangle_contact = off != Some(0);
            b.add_cloth_grid(&a).unwrap();
            b.add_rope(&crate::Rope::straight("r", Vec3::new(0.0, 1.0, 0.0), Vec3::new(1.0, 1.0, 0.0), 6)).unwrap();
            let mut c = ClothGrid::new("c", 3, 3, 0.1);
            c.center = Vec3::new(2.0, 0.0, 0.0);
            c.material.triangle_contact = off != Some(1);
            b.add_cloth_grid(&c).unwrap();
            if collider {
                b.add_collider(Collider::new("ball", Shape::Sphere { center: Vec3::ZERO, radius: 0.2 })).unwrap();
            }
            b.finalize().unwrap()
        };
        let mut every_count = 0;
        for (collider, off) in [(true, None), (false, None), (true, Some(0)), (true, Some(1))] {
            let model = build(collider, off);
            let plan = TriangleContact::new(&model);
            let all: Vec<u32> = (0..model.triangles().len() as u32).collect();
            let every = TriangleContact::takes_every_triangle(&model);
            assert_eq!(every, plan.triangles() == all.as_slice(), "collider {collider}, off {off:?}");
            every_count += every as u32;
        }
        assert_eq!(every_count, 1);
    }
}
