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
//! particle visits the candidates the [spatial hash](super::spatial_hash) gives it, and for
//! each contact sums its own share of the correction that
//! pushes the pair to distance t along n = (xᵢ − xⱼ)/‖xᵢ − xⱼ‖,
//!
//! Δxᵢ = wᵢ/(wᵢ + wⱼ) · (t − ‖xᵢ − xⱼ‖) · n,
//!
//! plus Coulomb friction on the pair's relative tangential displacement over the substep
//! (the same clamped law as the colliders, [`Friction`], with the coefficients averaged over
//! the two bodies). A particle of a layer lying on another touches several particles at
//! once, and the plain Jacobi sum would push it several depths away; so each pair's
//! correction is divided by max(nᵢ, nⱼ), the larger of the two particles' contact counts in
//! the previous substep (constraint averaging, Macklin et al. 2014 "Unified particle
//! physics", §4.2, made symmetric: dividing each particle's sum by its own count would give
//! the two sides of a pair different pushes and make momentum out of nothing). Both sides of
//! a pair get the same factor, so mᵢΔxᵢ + mⱼΔxⱼ = 0 for every pair, friction included. Each
//! particle writes only its own correction: no atomics. The terms are summed in fixed point
//! (3.7 nm units, 64 bits), so the sum does not depend on the order of the candidates: every
//! thread count and the GPU (whose hash cells are smaller, so it meets the candidates in
//! another order) get the same bits. The correction is zero at ‖xᵢ − xⱼ‖ = t and grows
//! continuously inside it. Two particles at one point are pushed apart along their
//! difference at rest, else at the substep's start, else along ±y by index.
//!
//! **Speed clamp** (optional, per body, off by default): before the contacts each member's
//! displacement in the substep is capped at 0.2 × its diameter, as Ten Minute Physics'
//! self-collision clamps velocities, so that no particle crosses a layer within a substep.
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

/// The contact count kept per particle saturates here (the GPU packs it into 12 bits).
pub const MAX_COUNT: u32 = 4095;

/// Members per parallel task.
const CHUNK: usize = 1024;

/// The particle contacts of a model: which particles collide, and the scratch of the solve.
#[derive(Clone, Debug, Default)]
pub(crate) struct SelfCollision {
    /// The colliding particles, increasing.
    members: Vec<u32>,
    /// The body of every particle (index into `friction`).
    body: Vec<u32>,
    /// The world of each body (particles of two worlds never touch).
    body_world: Vec<u32>,
    /// The friction of each body's self-contacts.
    friction: Vec<Friction>,
    /// Whether each body's substep displacements are capped (`self_collision_speed_clamp`).
    clamp: Vec<bool>,
    /// Largest contact radius among the members (m).
    max_radius: f32,
    /// Every particle's radius in self-contact ([`contact_radii`]; m).
    radius: Vec<f32>,
    hash: SpatialHash,
    /// Positions of every particle at the start of the stage.
    position: Vec<Vec3>,
    /// (correction, contacts) of each member.
    correction: Vec<(Vec3, u32)>,
    /// Each particle's number of contacts in the last substep (at most [`MAX_COUNT`]).
    previous: Vec<u32>,
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
        let clamp = model.bodies().iter().map(speed_clamp).collect();
        let body_world = body_worlds(model);
        let previous = vec![0; model.particle_count()];
        let radius = contact_radii(model);
        SelfCollision {
            members,
            body,
            body_world,
            friction,
            clamp,
            max_radius,
            radius,
            previous,
            ..SelfCollision::default()
        }
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
        // The optional speed clamp: |d| ≤ 0.2 × 2r.
        let radius = &self.radius;
        for &i in &self.members {
            if !self.clamp[self.body[i as usize] as usize] {
                continue;
            }
            let p = &mut particles[i as usize];
            let d = p.d.truncate();
            let (len, cap) = (d.length(), 0.4 * radius[i as usize]);
            if len > cap {
                let capped = d * (cap / len);
                p.d = capped.extend(0.0);
                if let Some(inv_h) = inv_h {
                    velocity[i as usize] += (capped - d) * inv_h;
                }
            }
        }
        self.position.clear();
        self.position.extend(particles.iter().map(Particle::position));
        let position = &self.position;
        self.hash
            .build(CELL_RADII * self.max_radius, &self.members, |i| position[i as usize].extend(radius[i as usize]));
        let ctx = Gather {
            particles,
            position,
            rest: model.particle_position(),
            radius,
            body: &self.body,
            body_world: &self.body_world,
            previous: &self.previous,
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
            self.previous[i as usize] = n.min(MAX_COUNT);
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
    /// The world of each body: particles of two worlds never touch.
    body_world: &'a [u32],
    previous: &'a [u32],
    friction: &'a [Friction],
    hash: &'a SpatialHash,
    max_radius: f32,
    relax: f32,
}

impl Gather<'_> {
    /// The correction of particle `i` and its number of contacts.
    #[inline]
    fn gather(&self, i: u32) -> (Vec3, u32) {
        let iu = i as usize;
        let wi = self.particles[iu].x.w;
        if wi <= 0.0 {
            return (Vec3::ZERO, 0);
        }
        let (xi, ri, bi, ni) = (self.position[iu], self.radius[iu], self.body[iu], self.previous[iu]);
        let (x0i, di) = (self.particles[iu].x.truncate(), self.particles[iu].d.truncate());
        let (mut sum, mut count) = (FixedSum::default(), 0u32);
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
            if self.body_world[bi as usize] != self.body_world[bj as usize] {
                return;
            }
            let rest = self.rest[iu] - self.rest[ju];
            if bi == bj && rest.length_squared() < t * t {
                return;
            }
            let x0j = self.particles[ju].x.truncate();
            // The contact normal: along the pair now; for coincident particles along the pair
            // at rest, else at the substep's start, else ±y by index — always antisymmetric.
            let dist = dist2.sqrt();
            let axis = if i < j { Vec3::Y } else { Vec3::NEG_Y };
            let start = x0i - x0j;
            let delta = [delta, rest, start].into_iter().find(|v| v.length_squared() > 0.0).unwrap_or(axis);
            let n = delta / delta.length();
            let wj = self.particles[ju].x.w;
            // A pair already overlapping at the substep's start separates at a bounded speed.
            let dist0 = start.length();
            let target = if dist0 < t { t.min(dist0 + self.relax) } else { t };
            count += 1;
            if target <= dist {
                return;
            }
            let depth = target - dist;
            // Mass-weighted, and shared out over the contacts that either particle had in the
            // last substep: the same factor on both sides, so the pair's momentum is kept.
            let shared = ni.max(self.previous[ju]).max(1) as f32;
            let share = wi / (wi + wj) / shared;
            sum.add(n * (depth * share));
            // Friction on the relative tangential displacement of the substep.
            let rel = di - self.particles[ju].d.truncate();
            let tangential = rel - n * rel.dot(n);
            let (fi, fj) = (self.friction[bi as usize], self.friction[bj as usize]);
            let f = Friction {
                static_coefficient: 0.5 * (fi.static_coefficient + fj.static_coefficient),
                kinetic_coefficient: 0.5 * (fi.kinetic_coefficient + fj.kinetic_coefficient),
            };
            sum.add(f.correction(tangential, depth) * share);
        });
        (sum.value(), count)
    }
}

/// Fixed-point units per metre of a contact sum: 2²⁸ (a resolution of 3.7 nm; one pair's push
/// of up to 8 m fits an `i32`).
pub const FIXED_POINT: f32 = 268_435_456.0;

/// A sum of vectors that does not depend on the order of its terms: each term is rounded to
/// [`FIXED_POINT`] units (truncated towards zero, saturating) and added exactly in 64 bits, so
/// the GPU, which visits the candidates in another order (its cells are smaller), gets the
/// CPU's bits. The GPU adds the same `i32` terms into two `u32` words with a carry.
#[derive(Clone, Copy, Debug, Default)]
struct FixedSum([i64; 3]);

impl FixedSum {
    #[inline]
    fn add(&mut self, v: Vec3) {
        for (acc, c) in self.0.iter_mut().zip(v.to_array()) {
            *acc += (c * FIXED_POINT) as i32 as i64;
        }
    }

    /// The sum in metres, each word divided by [`FIXED_POINT`]: a word that fits an `i32`
    /// (sums under 8 m, all of them in practice) converted as one, rounding once, so that
    /// opposite sums give opposite values; a larger one as f32(high)·2³² + f32(low) — the
    /// GPU's arithmetic.
    #[inline]
    fn value(&self) -> Vec3 {
        let word = |w: i64| match i32::try_from(w) {
            Ok(small) => small as f32 / FIXED_POINT,
            Err(_) => ((w >> 32) as i32 as f32 * 4_294_967_296.0 + w as u32 as f32) / FIXED_POINT,
        };
        Vec3::new(word(self.0[0]), word(self.0[1]), word(self.0[2]))
    }
}

/// The particles that take part in particle contacts — those of every body whose material has
/// `self_collision` on, with a collision radius > 0 — in increasing order, and the largest
/// of their radii (m; 0 when there are none). The spatial hash's cells are [`CELL_RADII`]
/// times that wide.
pub fn members(model: &Model) -> (Vec<u32>, f32) {
    let radius = contact_radii(model);
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

/// Each particle's radius in self-contact (m; one per particle): half a cloth's
/// `self_collision_thickness` where it is set, else the particle's collision radius.
pub fn contact_radii(model: &Model) -> Vec<f32> {
    let mut radius = model.particle_radius().to_vec();
    for body in model.bodies() {
        if let crate::model::BodyMaterial::Cloth(m) = &body.material
            && let Some(t) = m.self_collision_thickness
        {
            radius[body.particles.start as usize..body.particles.end as usize].fill(0.5 * t);
        }
    }
    radius
}

/// What may be wrong with a body's self-collision settings (for warnings; none is an error).
#[derive(Clone, Debug, PartialEq)]
pub enum SelfCollisionConcern {
    /// The contact distance t = 2r is below the body's mean structural rest length (m): a
    /// particle can pass between two particles of a layer.
    ThinnerThanSpacing {
        /// Body index.
        body: usize,
        /// Contact distance 2r (m) of two of its particles.
        contact_distance: f32,
        /// Mean rest length of its structural constraints (m).
        spacing: f32,
    },
    /// μₖ exceeds μₛ: contacts then stick up to μₖ and μₛ has no effect.
    KineticAboveStatic {
        /// Body index.
        body: usize,
    },
}

/// The concerns about every body with self-collision on (see [`SelfCollisionConcern`]).
pub fn concerns(model: &Model) -> Vec<SelfCollisionConcern> {
    let mut out = Vec::new();
    let radius = contact_radii(model);
    for (k, body) in model.bodies().iter().enumerate().filter(|(_, b)| b.self_collision()) {
        let set = model.distance();
        let (mut sum, mut n) = (0.0f64, 0usize);
        for (c, f) in set.constraints().iter().zip(set.families()) {
            if *f == crate::ConstraintFamily::Structural && body.particles.contains(&c.i) {
                sum += c.rest_length as f64;
                n += 1;
            }
        }
        let contact = body.particles.clone().map(|p| 2.0 * radius[p as usize]).fold(f32::INFINITY, f32::min);
        if n > 0 && (contact as f64) < sum / n as f64 {
            let spacing = (sum / n as f64) as f32;
            out.push(SelfCollisionConcern::ThinnerThanSpacing { body: k, contact_distance: contact, spacing });
        }
        let f = self_friction(body);
        if f.kinetic_coefficient > f.static_coefficient {
            out.push(SelfCollisionConcern::KineticAboveStatic { body: k });
        }
    }
    out
}

/// Whether `body`'s substep displacements are capped when it self-collides (its material's
/// `self_collision_speed_clamp`).
pub fn speed_clamp(body: &crate::Body) -> bool {
    match body.material {
        BodyMaterial::Cloth(m) => m.self_collision_speed_clamp,
        BodyMaterial::Rope(m) => m.self_collision_speed_clamp,
    }
}

/// The friction of `body`'s particle contacts (its material's `self_friction`); a contact
/// between two bodies uses the mean of their coefficients.
pub fn self_friction(body: &crate::Body) -> Friction {
    match body.material {
        BodyMaterial::Cloth(m) => m.self_friction,
        BodyMaterial::Rope(m) => m.self_friction,
    }
}

/// The pair of particles that overlap deepest: see [`deepest_overlap`].
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
/// particle), the pair that overlaps deepest: the largest t − ‖xᵢ − xⱼ‖ (m) over pairs closer
/// than their contact distance t = rᵢ + rⱼ, skipping pairs of one body that are closer than t
/// in the rest shape (neighbours on the surface, as the contact solve does); `None` when no
/// pair overlaps. Particles with a zero collision radius are skipped. Costs one spatial-hash
/// build and a query per particle.
///
/// # Panics
/// If `positions` is shorter than the model's particle count or an index is out of range.
pub fn deepest_overlap(model: &Model, positions: &[Vec3], particles: &[u32]) -> Option<Overlap> {
    let radius = contact_radii(model);
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
            if model.world_of_particle(i as usize) != model.world_of_particle(j as usize) {
                return;
            }
            let distance = (xi - positions[j as usize]).length();
            if distance < t && best.is_none_or(|b| t - distance > b.depth()) {
                best = Some(Overlap { particles: [i, j], distance, contact_distance: t });
            }
        });
    }
    best
}

/// The world of each body of `model`, indexed like [`Model::bodies`].
fn body_worlds(model: &Model) -> Vec<u32> {
    let mut out = vec![0u32; model.bodies().len()];
    for (k, w) in model.worlds().iter().enumerate() {
        out[w.bodies.start as usize..w.bodies.end as usize].fill(k as u32);
    }
    out
}
