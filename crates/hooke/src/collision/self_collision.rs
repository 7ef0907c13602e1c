//! Contacts between particles: a cloth against itself, and cloths and ropes against each
//! other (issue #10; article §4.1 for the hash).
//!
//! Every particle of a body whose material has `self_collision` on is a sphere of its
//! collision radius r (half the cloth's thickness, the rope's radius). Two such particles i, j
//! are in contact when ‖xᵢ − xⱼ‖ < rᵢ + rⱼ = t, the contact distance — except two particles of
//! the same body that are closer than t in the *rest* shape: they are neighbours on the
//! surface (their distance is kept by the constraints), so the thickness may exceed the
//! spacing, which keeps layers from slipping between particles.
//!
//! **The solve** runs once per substep, after the constraint sets and before the colliders, as
//! a Jacobi gather: with the positions of all particles frozen at the start of the stage, each
//! particle visits the candidates the [spatial hash](super::spatial_hash) gives it (in the
//! hash's canonical order), and for each contact sums its own share of the correction that
//! pushes the pair to distance t along n = (xᵢ − xⱼ)/‖xᵢ − xⱼ‖,
//!
//! Δxᵢ = wᵢ/(wᵢ + wⱼ) · (t − ‖xᵢ − xⱼ‖) · n,
//!
//! plus Coulomb friction on the pair's relative tangential displacement over the substep
//! (the same clamped law as the colliders, [`Friction`], with the coefficients averaged over
//! the two bodies). The sum is divided by the particle's number of contacts (constraint
//! averaging, Macklin et al. 2014 "Unified particle physics", §4.2), since a particle of a
//! layer lying on another touches several particles at once and the plain Jacobi sum would
//! push it several depths away. Each particle writes only its own correction: no atomics, the
//! same sums in the same order on every thread count and on the GPU. The correction is zero
//! at ‖xᵢ − xⱼ‖ = t and grows continuously inside it.
//!
//! **Relaxing overlaps.** A pair that starts the substep closer than t (a cloth built with its
//! layers overlapping, or self-collision switched on mid-run) is separated by at most
//! [`DEPENETRATION_SPEED`]·h per substep instead of in one step, so an overlap relaxes at a
//! bounded speed instead of exploding; pairs that come into contact during the substep are
//! pushed to t at once, whatever their speed.
//!
//! Contact is between particles only: a particle can pass between two particles of a layer
//! if the thickness is less than the spacing (so use a thickness of at least the spacing),
//! and triangles are not tested against particles.

use super::Friction;
use super::spatial_hash::SpatialHash;
use crate::Model;
use crate::model::BodyMaterial;
use crate::solver::state::Particle;
use glam::Vec3;
use rayon::prelude::*;

/// Largest speed (m/s) at which a pair that was already closer than its contact distance at
/// the start of a substep is pushed apart.
pub const DEPENETRATION_SPEED: f32 = 1.0;

/// The spatial hash's cell size in units of the largest collision radius: cells twice the
/// largest contact distance, so the box of reach around a particle (at most one contact
/// distance each way) touches at most 2 cells per axis — 8 buckets to visit instead of 27,
/// which measured faster (≈ 4.2 against 6.4 ms per substep for a 10⁴-particle heap on one
/// thread) despite the larger cells.
pub const CELL_RADII: f32 = 4.0;

/// Members per parallel task.
const CHUNK: usize = 1024;

/// The particle contacts of a model: which particles collide, and the scratch of the solve.
#[derive(Clone, Debug, Default)]
pub(crate) struct SelfCollision {
    /// The colliding particles, increasing.
    members: Vec<u32>,
    /// The body of every particle (index into `friction`).
    body: Vec<u32>,
    /// The friction of each body's self-contacts.
    friction: Vec<Friction>,
    /// Largest collision radius among the members (m).
    max_radius: f32,
    hash: SpatialHash,
    /// Positions of every particle at the start of the stage.
    position: Vec<Vec3>,
    /// (correction, contacts) of each member.
    correction: Vec<(Vec3, u32)>,
}

/// What one solve found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ContactCount {
    /// Particles with at least one contact.
    pub particles: u32,
}

impl SelfCollision {
    /// The contacts of `model`: the particles of every body whose material has
    /// `self_collision` on and a positive collision radius.
    pub fn new(model: &Model) -> SelfCollision {
        let (members, max_radius) = members(model);
        if members.is_empty() {
            return SelfCollision::default();
        }
        let mut body = vec![0u32; model.particle_count()];
        for (b, info) in model.bodies().iter().enumerate() {
            for p in info.particles.clone() {
                body[p as usize] = b as u32;
            }
        }
        let friction = model.bodies().iter().map(self_friction).collect();
        SelfCollision { members, body, friction, max_radius, ..SelfCollision::default() }
    }

    /// Whether any particle collides with another.
    pub fn is_active(&self) -> bool {
        !self.members.is_empty()
    }

    /// One Jacobi pass over the contacts (see the module documentation): corrections are
    /// added to the particles' displacements d; with `inv_h` = Some(1/h) the velocity is
    /// corrected by Δd/h too (force-based solvers). `h` is the substep (s).
    pub fn solve(
        &mut self,
        model: &Model,
        particles: &mut [Particle],
        velocity: &mut [Vec3],
        h: f32,
        inv_h: Option<f32>,
        parallel: bool,
    ) -> ContactCount {
        if self.members.is_empty() {
            return ContactCount::default();
        }
        self.position.clear();
        self.position.extend(particles.iter().map(Particle::position));
        let position = &self.position;
        let radius = model.particle_radius();
        self.hash
            .build(CELL_RADII * self.max_radius, &self.members, |i| position[i as usize].extend(radius[i as usize]));
        let ctx = Gather {
            particles,
            position,
            rest: model.particle_position(),
            radius: model.particle_radius(),
            body: &self.body,
            friction: &self.friction,
            hash: &self.hash,
            max_radius: self.max_radius,
            relax: DEPENETRATION_SPEED * h,
        };
        self.correction.clear();
        self.correction.resize(self.members.len(), (Vec3::ZERO, 0));
        let members = &self.members;
        if parallel && members.len() > 2 * CHUNK {
            self.correction
                .par_chunks_mut(CHUNK)
                .zip(members.par_chunks(CHUNK))
                .for_each(|(out, ids)| ids.iter().zip(out).for_each(|(&i, o)| *o = ctx.gather(i)));
        } else {
            members.iter().zip(&mut self.correction).for_each(|(&i, o)| *o = ctx.gather(i));
        }
        let mut touching = 0;
        for (&i, &(c, n)) in members.iter().zip(&self.correction) {
            if n == 0 {
                continue;
            }
            touching += 1;
            let p = &mut particles[i as usize];
            p.d += c.extend(0.0);
            if let Some(inv_h) = inv_h {
                velocity[i as usize] += c * inv_h;
            }
        }
        ContactCount { particles: touching }
    }
}

/// What the gather of one particle reads.
struct Gather<'a> {
    particles: &'a [Particle],
    position: &'a [Vec3],
    rest: &'a [Vec3],
    radius: &'a [f32],
    body: &'a [u32],
    friction: &'a [Friction],
    hash: &'a SpatialHash,
    max_radius: f32,
    relax: f32,
}

impl Gather<'_> {
    /// The averaged correction of particle `i` and its number of contacts.
    #[inline]
    fn gather(&self, i: u32) -> (Vec3, u32) {
        let iu = i as usize;
        let wi = self.particles[iu].x.w;
        if wi <= 0.0 {
            return (Vec3::ZERO, 0);
        }
        let (xi, ri, bi) = (self.position[iu], self.radius[iu], self.body[iu]);
        let (x0i, di) = (self.particles[iu].x.truncate(), self.particles[iu].d.truncate());
        let (mut sum, mut count) = (Vec3::ZERO, 0u32);
        let reach = ri + self.max_radius;
        self.hash.for_each_candidate_at(xi, reach, |j, xj| {
            let delta = xi - xj.truncate();
            let dist2 = delta.length_squared();
            let t = ri + xj.w;
            if dist2 >= t * t || j == i {
                return;
            }
            let ju = j as usize;
            let bj = self.body[ju];
            if bi == bj && (self.rest[iu] - self.rest[ju]).length_squared() < t * t {
                return;
            }
            // Coincident particles separate along their rest direction.
            let (delta, dist) = match dist2 > 0.0 {
                true => (delta, dist2.sqrt()),
                false => (self.rest[iu] - self.rest[ju], 0.0),
            };
            let dir_len = delta.length();
            if dir_len == 0.0 {
                return;
            }
            let wj = self.particles[ju].x.w;
            // A pair already overlapping at the substep's start separates at a bounded speed.
            let dist0 = (x0i - self.particles[ju].x.truncate()).length();
            let target = if dist0 < t { t.min(dist0 + self.relax) } else { t };
            count += 1;
            if target <= dist {
                return;
            }
            let n = delta / dir_len;
            let depth = target - dist;
            let share = wi / (wi + wj);
            sum += n * (depth * share);
            // Friction on the relative tangential displacement of the substep.
            let rel = di - self.particles[ju].d.truncate();
            let tangential = rel - n * rel.dot(n);
            let (fi, fj) = (self.friction[bi as usize], self.friction[bj as usize]);
            let f = Friction {
                static_coefficient: 0.5 * (fi.static_coefficient + fj.static_coefficient),
                kinetic_coefficient: 0.5 * (fi.kinetic_coefficient + fj.kinetic_coefficient),
            };
            sum += f.correction(tangential, depth) * share;
        });
        if count == 0 { (Vec3::ZERO, 0) } else { (sum / count as f32, count) }
    }
}

/// The particles that take part in particle contacts — those of every body whose material has
/// `self_collision` on, with a collision radius > 0 — in increasing order, and the largest
/// of their radii (m; 0 when there are none). The spatial hash's cells are [`CELL_RADII`]
/// times that wide.
pub fn members(model: &Model) -> (Vec<u32>, f32) {
    let radius = model.particle_radius();
    let mut members = Vec::new();
    let mut max_radius = 0.0f32;
    for body in model.bodies().iter().filter(|b| b.self_collision()) {
        for p in body.particles.clone() {
            if radius[p as usize] > 0.0 {
                members.push(p);
                max_radius = max_radius.max(radius[p as usize]);
            }
        }
    }
    (members, max_radius)
}

/// The friction of `body`'s particle contacts (its material's `self_friction`); a contact
/// between two bodies uses the mean of their coefficients.
pub fn self_friction(body: &crate::Body) -> Friction {
    match body.material {
        BodyMaterial::Cloth(m) => m.self_friction,
        BodyMaterial::Rope(m) => m.self_friction,
    }
}

/// The pair of particles that overlap most, relative to their contact distance: see
/// [`deepest_overlap`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Overlap {
    /// The two particles (i < j).
    pub particles: [u32; 2],
    /// Their distance (m).
    pub distance: f32,
    /// Their contact distance t = rᵢ + rⱼ (m).
    pub contact_distance: f32,
}

impl Overlap {
    /// How deep the pair is inside its contact distance: t − ‖xᵢ − xⱼ‖ (m, > 0).
    pub fn depth(&self) -> f32 {
        self.contact_distance - self.distance
    }
}

/// Among `particles` (indices into the model, increasing) at `positions` (m, one per model
/// particle), the pair closer than its contact distance t = rᵢ + rⱼ by the largest fraction of
/// t, skipping pairs of one body that are closer than t in the rest shape (neighbours on the
/// surface, as the contact solve does); `None` when no pair overlaps. Particles with a zero
/// collision radius are skipped. Costs one spatial-hash build and query per particle.
///
/// # Panics
/// If `positions` is shorter than the model's particle count or an index is out of range.
pub fn deepest_overlap(model: &Model, positions: &[Vec3], particles: &[u32]) -> Option<Overlap> {
    let radius = model.particle_radius();
    let members: Vec<u32> = particles.iter().copied().filter(|&p| radius[p as usize] > 0.0).collect();
    let max_radius = members.iter().map(|&p| radius[p as usize]).fold(0.0f32, f32::max);
    if members.len() < 2 {
        return None;
    }
    let body_of: Vec<u32> = {
        let mut b = vec![0u32; model.particle_count()];
        for (k, info) in model.bodies().iter().enumerate() {
            for p in info.particles.clone() {
                b[p as usize] = k as u32;
            }
        }
        b
    };
    let rest = model.particle_position();
    let mut hash = SpatialHash::new();
    hash.build(CELL_RADII * max_radius, &members, |i| positions[i as usize].extend(0.0));
    let mut best: Option<Overlap> = None;
    for &i in &members {
        let (xi, ri) = (positions[i as usize], radius[i as usize]);
        hash.for_each_candidate(xi, ri + max_radius, |j| {
            if j <= i {
                return;
            }
            let t = ri + radius[j as usize];
            if body_of[i as usize] == body_of[j as usize]
                && (rest[i as usize] - rest[j as usize]).length_squared() < t * t
            {
                return;
            }
            let distance = (xi - positions[j as usize]).length();
            if distance < t && best.is_none_or(|b| distance / t < b.distance / b.contact_distance) {
                best = Some(Overlap { particles: [i, j], distance, contact_distance: t });
            }
        });
    }
    best
}
