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
//! particle visits its candidates — from neighbour lists that the
//! [spatial hash](super::spatial_hash) builds and that are kept while no particle has moved
//! more than a fraction of their skin (see [`NeighbourLists`]; the GPU keeps the same lists
//! for large models and queries its hash every substep for small ones; all find the same
//! contacts) — and for each contact sums its own share of the correction that
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

/// The spatial hash's cell size, before the lists' skin, in units of the largest collision
/// radius: the CPU's cells are `CELL_RADII` radii plus twice the skin wide (6 radii, three
/// contact distances, with [`SKIN_RADII`] = 1), so the box of reach around a particle (its
/// contact distance plus the skin each way) touches two cells per axis, three where rounding
/// puts it across two borders. (Before the lists, cells of 4 radii, measured ≈ 4.2 against 6.4
/// ms per substep for cells of 2 on a 10⁴-particle heap on one thread.)
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
    /// The candidate lists the gather reads ([`NeighbourLists`]).
    lists: NeighbourLists,
}

/// Verlet neighbour lists (the molecular-dynamics device): for each member, the particles
/// that were within its contact distance plus a skin s when the lists were built — those of
/// its world, not itself, not a neighbour at rest — found through the spatial hash. A pair
/// missing from the lists was at least t + s apart then; while no particle has moved more
/// than s/2 since, it is still at least t apart and cannot be in contact, so the lists hold
/// every contact and the gather, which tests each listed pair exactly as the hash's
/// candidates were tested, finds the same contacts and (summing in fixed point) the same
/// bits as a hash built afresh — for finite positions: a pair at a NaN distance is no contact
/// here, where the GPU's gather counts it (a NaN stops the run either way). They are rebuilt
/// in the substep where a particle has moved more than [`LIST_REBUILD`] × s since the last
/// build, with s = [`SKIN_RADII`] × the largest collision radius, both absolutely and
/// relative to a reference particle (so a cloth falling as a whole keeps its lists): every
/// substep or two while a cloth crumples fast, seldom once it rests.
#[derive(Clone, Debug, Default)]
struct NeighbourLists {
    /// Member k's candidates are `pairs[offsets[k]..offsets[k + 1]]` (particle ids).
    offsets: Vec<u32>,
    pairs: Vec<u32>,
    /// Each member's position when the lists were built (m); empty: no lists yet.
    built_at: Vec<Vec3>,
    /// The skin s (m).
    skin: f32,
    /// Builds since the start (for benchmarks and tests).
    builds: u64,
    /// Substeps solved since the start.
    substeps: u64,
}

/// The lists' skin in units of the largest collision radius (s = r: pairs within 1.5 contact
/// distances of a uniform cloth are listed).
pub const SKIN_RADII: f32 = 1.0;

/// The lists are rebuilt once a particle has moved more than this fraction of the skin since
/// they were built, and also relative to the reference member ([`reference_member`]): below
/// ½, with a margin for the rounding of the distances.
pub const LIST_REBUILD: f32 = 0.45;

/// The member (index into the members, of `members` in all) whose displacement since the
/// lists' build is the common shift of the second staleness test: the middle one. Its
/// position is taken at the substep's start where its body has the speed clamp (any common
/// shift keeps the bound).
pub fn reference_member(members: usize) -> usize {
    members / 2
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
        self.lists.substeps += 1;
        // The reference member's position now, or at the substep's start where its body has
        // the speed clamp (the GPU, which clamps in the kernel that tests the lists, reads it
        // there without a race).
        let reference = self.members[reference_member(self.members.len())] as usize;
        let reference_x = if self.clamp[self.body[reference] as usize] {
            particles[reference].x.truncate()
        } else {
            self.position[reference]
        };
        if self.lists_stale(reference_x, parallel) {
            self.build_lists(model, parallel);
        }
        let ctx = Gather {
            particles,
            position: &self.position,
            rest: model.particle_position(),
            radius: &self.radius,
            body: &self.body,
            previous: &self.previous,
            friction: &self.friction,
            relax: DEPENETRATION_SPEED * h,
        };
        let (members, lists) = (&self.members, &self.lists);
        let gather = |k: usize, i: u32| {
            let listed = &lists.pairs[lists.offsets[k] as usize..lists.offsets[k + 1] as usize];
            ctx.gather(i, listed)
        };
        self.correction.clear();
        self.correction.resize(members.len(), (Vec3::ZERO, 0));
        if parallel && members.len() > 2 * CHUNK {
            self.correction.par_chunks_mut(CHUNK).zip(members.par_chunks(CHUNK)).enumerate().for_each(
                |(chunk, (out, ids))| {
                    for (k, (&i, o)) in ids.iter().zip(out).enumerate() {
                        *o = gather(chunk * CHUNK + k, i);
                    }
                },
            );
        } else {
            for (k, (&i, o)) in members.iter().zip(&mut self.correction).enumerate() {
                *o = gather(k, i);
            }
        }
        let mut touching = 0;
        for (&i, &(c, n)) in self.members.iter().zip(&self.correction) {
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

    /// Whether the lists must be rebuilt for the positions in `self.position`: there are
    /// none yet, or a member has moved more than [`LIST_REBUILD`] × the skin since, and a
    /// member has moved that much relative to the reference member ([`reference_member`]),
    /// which is at `reference_x` now.
    /// Either bound keeps every pair's distance within 2 × LIST_REBUILD × s of its value at the
    /// build (|Δxᵢ − Δxⱼ| ≤ |Δxᵢ − c| + |Δxⱼ − c| for any common c: 0 or the reference's
    /// displacement), so the lists stay valid while one holds — the second through a cloth's
    /// free fall, where every particle moves together.
    fn lists_stale(&self, reference_x: Vec3, parallel: bool) -> bool {
        let lists = &self.lists;
        if lists.built_at.len() != self.members.len() {
            return true;
        }
        let limit2 = (LIST_REBUILD * lists.skin).powi(2);
        let shift = reference_x - lists.built_at[reference_member(self.members.len())];
        let beyond = |c: Vec3| {
            move |(&i, &x): (&u32, &Vec3)| {
                let d2 = ((self.position[i as usize] - x) - c).length_squared();
                d2 > limit2 || d2.is_nan()
            }
        };
        let any = |c: Vec3| {
            if parallel && self.members.len() > 2 * CHUNK {
                self.members.par_iter().zip(&lists.built_at).any(beyond(c))
            } else {
                self.members.iter().zip(&lists.built_at).any(beyond(c))
            }
        };
        any(Vec3::ZERO) && any(shift)
    }

    /// Rebuilds the spatial hash and, through it, the lists at `self.position`.
    fn build_lists(&mut self, model: &Model, parallel: bool) {
        let skin = SKIN_RADII * self.max_radius;
        let (position, radius) = (&self.position, &self.radius);
        // Cells wide enough that a query's box (the reach each way) touches two cells per axis
        // (three where rounding puts it across two borders).
        let reach = 2.0 * self.max_radius + skin;
        self.hash.build(CELL_RADII * self.max_radius + 2.0 * skin, &self.members, |i| {
            position[i as usize].extend(radius[i as usize])
        });
        let (rest, body, body_world, hash) = (model.particle_position(), &self.body, &self.body_world, &self.hash);
        // The candidates of member i: within t + s now, same world, not i, not neighbours at rest.
        let list = |i: u32, out: &mut Vec<u32>| {
            let iu = i as usize;
            let (xi, ri, bi) = (position[iu], radius[iu], body[iu]);
            hash.for_each_overlapping(xi, ri + skin, reach, |j, xj| {
                let ju = j as usize;
                let bj = body[ju];
                let t = ri + xj.w;
                if j == i
                    || body_world[bi as usize] != body_world[bj as usize]
                    || (bi == bj && (rest[iu] - rest[ju]).length_squared() < t * t)
                {
                    return;
                }
                out.push(j);
            });
        };
        let lists = &mut self.lists;
        lists.offsets.clear();
        lists.offsets.push(0);
        lists.pairs.clear();
        if parallel && self.members.len() > 2 * CHUNK {
            let chunks: Vec<(Vec<u32>, Vec<u32>)> = self
                .members
                .par_chunks(CHUNK)
                .map(|ids| {
                    let (mut counts, mut pairs) = (Vec::with_capacity(ids.len()), Vec::new());
                    for &i in ids {
                        list(i, &mut pairs);
                        counts.push(pairs.len() as u32);
                    }
                    (counts, pairs)
                })
                .collect();
            for (counts, pairs) in chunks {
                let base = lists.pairs.len() as u32;
                lists.offsets.extend(counts.iter().map(|c| base + c));
                lists.pairs.extend_from_slice(&pairs);
            }
        } else {
            for &i in &self.members {
                list(i, &mut lists.pairs);
                lists.offsets.push(lists.pairs.len() as u32);
            }
        }
        lists.built_at.clear();
        lists.built_at.extend(self.members.iter().map(|&i| position[i as usize]));
        lists.skin = skin;
        lists.builds += 1;
    }

    /// Each particle's contact count of the last substep, which the next substep's solve
    /// reads (to keep with a snapshot of the state).
    pub(crate) fn counts(&self) -> &[u32] {
        &self.previous
    }

    /// Restores the counts saved with [`SelfCollision::counts`].
    pub(crate) fn restore_counts(&mut self, counts: &[u32]) {
        self.previous.clear();
        self.previous.extend_from_slice(counts);
    }

    /// How often the neighbour lists were rebuilt: (builds, substeps solved).
    pub fn list_builds(&self) -> (u64, u64) {
        (self.lists.builds, self.lists.substeps)
    }
}

/// What the gather of one particle reads.
struct Gather<'a> {
    particles: &'a [Particle],
    position: &'a [Vec3],
    /// Rest positions (m), for the normal of coincident particles.
    rest: &'a [Vec3],
    radius: &'a [f32],
    body: &'a [u32],
    previous: &'a [u32],
    friction: &'a [Friction],
    relax: f32,
}

impl Gather<'_> {
    /// The correction of particle `i` and its number of contacts, from its listed candidates
    /// (see [`NeighbourLists`]: same world, not `i`, not neighbours at rest).
    #[inline]
    fn gather(&self, i: u32, listed: &[u32]) -> (Vec3, u32) {
        let iu = i as usize;
        let wi = self.particles[iu].x.w;
        if wi <= 0.0 {
            return (Vec3::ZERO, 0);
        }
        let (xi, ri, bi, ni) = (self.position[iu], self.radius[iu], self.body[iu], self.previous[iu]);
        let (x0i, di) = (self.particles[iu].x.truncate(), self.particles[iu].d.truncate());
        let (mut sum, mut count) = (FixedSum::default(), 0u32);
        for &j in listed {
            let ju = j as usize;
            let delta = xi - self.position[ju];
            let dist2 = delta.length_squared();
            let t = ri + self.radius[ju];
            // (A NaN distance is no contact; the run's health check reports the NaN.)
            if dist2 >= t * t || dist2.is_nan() {
                continue;
            }
            let bj = self.body[ju];
            let x0j = self.particles[ju].x.truncate();
            // The contact normal: along the pair now; for coincident particles along the pair
            // at rest, else at the substep's start, else ±y by index — always antisymmetric.
            let dist = dist2.sqrt();
            let axis = if i < j { Vec3::Y } else { Vec3::NEG_Y };
            let start = x0i - x0j;
            let rest = self.rest[iu] - self.rest[ju];
            let delta = [delta, rest, start].into_iter().find(|v| v.length_squared() > 0.0).unwrap_or(axis);
            let n = delta / delta.length();
            let wj = self.particles[ju].x.w;
            // A pair already overlapping at the substep's start separates at a bounded speed.
            let dist0 = start.length();
            let target = if dist0 < t { t.min(dist0 + self.relax) } else { t };
            count += 1;
            if target <= dist {
                continue;
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
        }
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
/// of their radii (m; 0 when there are none). The CPU's spatial hash cells are
/// [`CELL_RADII`] + 2 [`SKIN_RADII`] times that wide.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solver::state::SolverState;
    use crate::{ClothGrid, ModelBuilder};
    use glam::Vec4;

    /// Short vertical ropes of radius `r` with self-collision, one at each x of `xs`.
    fn ropes_at(xs: &[f32], r: f32) -> Model {
        let mut b = ModelBuilder::new();
        for (k, &x) in xs.iter().enumerate() {
            let mut rope = crate::Rope::straight(format!("rope{k}"), Vec3::new(x, 1.0, 0.0), Vec3::new(x, 1.1, 0.0), 2);
            rope.material.radius = r;
            rope.material.self_collision = true;
            b.add_rope(&rope).unwrap();
        }
        b.finalize().unwrap()
    }

    /// One contact solve of `state` (displacements set) by `kept` and by a clone with its
    /// lists dropped; returns both counts and moves `state` on to the fresh solve's positions.
    fn kept_and_fresh(
        kept: &mut SelfCollision,
        model: &Model,
        state: &mut SolverState,
    ) -> (ContactCount, ContactCount) {
        let mut fresh = kept.clone();
        fresh.lists = NeighbourLists::default();
        let (mut a, mut b) = (state.clone(), state.clone());
        let ca = kept.solve(model, &mut a.particles, &mut a.velocity, 1.0 / 1200.0, None, false);
        let cb = fresh.solve(model, &mut b.particles, &mut b.velocity, 1.0 / 1200.0, None, false);
        *state = b;
        for p in &mut state.particles {
            p.x += p.d.truncate().extend(0.0);
            p.d = Vec4::ZERO;
        }
        (ca, cb)
    }

    /// Two short ropes (1 cm radius) side by side, t + s + 10 µm apart when the lists are built
    /// in the first substep (so not listed), each moving toward the other by
    /// 0.999 × [`LIST_REBUILD`] × s per substep: with LIST_REBUILD ≤ ½ they stay more than t apart until the lists are rebuilt,
    /// and the kept lists give the fresh lists' bits at every substep; with any value above ½
    /// they touch before a rebuild and the kept lists miss the contact. (Head-on, the tightest
    /// case of the skin argument.)
    #[test]
    fn lists_are_rebuilt_before_an_unlisted_pair_can_touch() {
        let r = 0.01f32;
        let (t, s) = (2.0 * r, SKIN_RADII * r);
        let gap = t + s + 1e-5;
        let model = ropes_at(&[0.0, gap], r);
        let mut state = SolverState::from_model(&model);
        let mut kept = SelfCollision::new(&model);
        let step = 0.999 * LIST_REBUILD * s;
        let mut touched = false;
        // Substep 0 builds the lists where the ropes start; then they close in.
        for substep in 0..6 {
            for (k, p) in state.particles.iter_mut().enumerate() {
                let toward = if substep == 0 {
                    0.0
                } else if k < 2 {
                    step
                } else {
                    -step
                };
                p.d = Vec4::new(toward, 0.0, 0.0, 0.0);
            }
            let (ca, cb) = kept_and_fresh(&mut kept, &model, &mut state);
            assert_eq!(ca, cb, "kept lists must find the contacts a fresh hash finds");
            touched |= cb.particles > 0;
        }
        assert!(touched, "the ropes must come into contact");
    }

    /// The same head-on pair, and a third rope far away in the middle of the members (the
    /// reference), all carried by a common motion of 5 skins per substep: every particle
    /// moves far more than the skin, yet the lists are kept in some substeps (no particle
    /// moved half a skin relative to the reference) and still give the fresh lists' contacts
    /// at every substep (the pair closes by 2 × 0.999 × LIST_REBUILD × s per substep, as
    /// above). Testing the relative motion against the skin instead of its 0.45 misses the
    /// contact.
    #[test]
    fn lists_follow_a_common_motion_and_stay_valid() {
        let r = 0.01f32;
        let (t, s) = (2.0 * r, SKIN_RADII * r);
        let gap = t + s + 1e-5;
        let model = ropes_at(&[0.0, 1.0, gap], r);
        let per_rope = model.bodies()[0].particles.len();
        let mut state = SolverState::from_model(&model);
        let mut kept = SelfCollision::new(&model);
        let step = 0.999 * LIST_REBUILD * s;
        let common = Vec3::new(0.0, 0.0, 5.0 * s);
        let mut touched = false;
        for substep in 0..6 {
            for (k, p) in state.particles.iter_mut().enumerate() {
                let toward = match (substep, k / per_rope) {
                    (0, _) | (_, 1) => 0.0,
                    (_, 0) => step,
                    _ => -step,
                };
                let shift = if substep == 0 { Vec3::ZERO } else { common };
                p.d = (Vec3::new(toward, 0.0, 0.0) + shift).extend(0.0);
            }
            let (ca, cb) = kept_and_fresh(&mut kept, &model, &mut state);
            assert_eq!(ca, cb, "kept lists must find the contacts a fresh hash finds (substep {substep})");
            touched |= cb.particles > 0;
        }
        assert!(touched, "the ropes must come into contact");
        let (builds, substeps) = kept.list_builds();
        assert!(builds < substeps, "the common motion alone must not rebuild the lists: {builds} of {substeps}");
    }

    /// A 10 × 10 cloth pressed (1 mm per substep) onto another 1.4 cm below, the two sliding
    /// past each other at 2 mm per substep each way (1 cm spacing, 1.5 cm thick), with a
    /// little noise in every step: the solve that keeps its neighbour lists gives, substep by
    /// substep, the bits of one that builds them afresh (a clone with its lists dropped),
    /// while reusing them in some substeps. Lists kept past their skin (rebuilt at 1.0 × the
    /// skin instead of 0.45) miss the pairs that slide into contact and differ.
    #[test]
    fn kept_neighbour_lists_give_the_bits_of_fresh_ones() {
        let mut b = ModelBuilder::new();
        for (k, y) in [0.0f32, 0.014].into_iter().enumerate() {
            let mut g = ClothGrid::new(format!("layer{k}"), 10, 10, 0.01);
            g.center = Vec3::new(-0.04 * k as f32, y, 0.002 * k as f32);
            g.material.thickness = 0.015;
            g.material.self_collision = true;
            b.add_cloth_grid(&g).unwrap();
        }
        let model = b.finalize().unwrap();
        let mut state = SolverState::from_model(&model);
        let mut kept = SelfCollision::new(&model);
        let mut contacts = 0;
        let mut seed = 12345u32;
        let mut noise = || {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (seed >> 8) as f32 / (1u32 << 24) as f32 - 0.5
        };
        for _ in 0..40 {
            for (k, p) in state.particles.iter_mut().enumerate() {
                let (slide, fall) = if k >= 100 { (0.002, -0.001) } else { (-0.002, 0.0) };
                p.d = Vec4::new(slide + 2e-4 * noise(), fall + 2e-4 * noise(), 2e-4 * noise(), 0.0);
            }
            let mut fresh = kept.clone();
            fresh.lists = NeighbourLists::default();
            let (mut a, mut b) = (state.clone(), state.clone());
            let ca = kept.solve(&model, &mut a.particles, &mut a.velocity, 1.0 / 1200.0, None, false);
            let cb = fresh.solve(&model, &mut b.particles, &mut b.velocity, 1.0 / 1200.0, None, false);
            assert_eq!(ca, cb);
            let bits =
                |s: &SolverState| s.particles.iter().map(|p| p.d.to_array().map(f32::to_bits)).collect::<Vec<_>>();
            assert_eq!(bits(&a), bits(&b), "kept lists must find the contacts a fresh hash finds");
            contacts += ca.particles;
            // Finish the substep: x⁰ ← x⁰ + d.
            state = a;
            for p in &mut state.particles {
                p.x += p.d.truncate().extend(0.0);
                p.d = Vec4::ZERO;
            }
        }
        let (builds, substeps) = kept.list_builds();
        assert_eq!(substeps, 40);
        assert!(contacts > 500, "the layers must meet ({contacts} particle-substeps in contact)");
        // Each side slides 2 mm per substep against a rebuild at 0.45 × 7.5 mm: every other substep.
        assert!((3..40).contains(&builds), "lists built {builds} times in 40 substeps: some must be reused");
    }
}
