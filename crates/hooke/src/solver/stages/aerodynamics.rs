//! The aerodynamics stage: drag and lift of every triangle in the wind (article §1.4; the
//! force law and its limit are in [`forces::aerodynamics`](crate::forces::aerodynamics)), a
//! third of each triangle's force and drag rate on each of its vertices, gathered per particle
//! and limited there so that no step overshoots the wind.

use crate::Model;
use crate::forces::aerodynamics;
use glam::{Vec3, Vec4};
use rayon::prelude::*;

/// Below this many triangles their loop runs on the calling thread.
const PARALLEL_MIN_TRIANGLES: usize = 4096;

/// Fills `out`, one per triangle, with a third of each triangle's aerodynamic force (N, in
/// xyz) and a third of its drag rate κ (kg/s, in w), for the positions `x(p)` (m) and
/// velocities `v(p)` (m/s) in the wind of each world `winds` (m/s, one per world, see
/// [`SubstepPlan::winds`](crate::SubstepPlan::winds)).
pub(crate) fn triangle_forces(
    model: &Model,
    winds: &[Vec3],
    x: impl Fn(usize) -> Vec3 + Sync,
    v: impl Fn(usize) -> Vec3 + Sync,
    out: &mut Vec<Vec4>,
    parallel: bool,
) {
    let air = model.air();
    let tri = |t: &[u32; 3]| {
        let xs = t.map(|i| x(i as usize));
        let vs = t.map(|i| v(i as usize));
        let wind = if winds.len() == 1 { winds[0] } else { winds[model.world_of_particle(t[0] as usize) as usize] };
        let a = aerodynamics::triangle_air(&air, xs, vs, wind);
        a.force.extend(a.rate) * (1.0 / 3.0)
    };
    if parallel && model.triangles().len() >= PARALLEL_MIN_TRIANGLES {
        model.triangles().par_iter().map(tri).collect_into_vec(out);
    } else {
        out.clear();
        out.extend(model.triangles().iter().map(tri));
    }
}

/// The aerodynamic force (N) to apply to particle `p`, of inverse mass `w` (1/kg), for a step
/// of `h` (s): the shares of its triangles and their drag rates, each summed in the order of
/// [`Model::particle_triangles`], then [`aerodynamics::limited_force`].
#[inline(always)]
pub(crate) fn particle_force(model: &Model, triangle_force: &[Vec4], p: usize, h: f32, w: f32) -> Vec3 {
    let sum: Vec4 = model.particle_triangles(p).iter().map(|&t| triangle_force[t as usize]).sum();
    aerodynamics::limited_force(sum.truncate(), sum.w, h, w)
}

/// Fills `force` (one per particle) with [`particle_force`] for the step `h` (s), with each
/// particle's inverse mass `w(p)` (1/kg).
pub(crate) fn gather(
    model: &Model,
    triangle_force: &[Vec4],
    force: &mut [Vec3],
    h: f32,
    w: impl Fn(usize) -> f32 + Sync,
    parallel: bool,
) {
    let f = |(p, out): (usize, &mut Vec3)| *out = particle_force(model, triangle_force, p, h, w(p));
    if parallel && force.len() >= 2 * super::PARTICLE_CHUNK {
        force.par_iter_mut().enumerate().for_each(f);
    } else {
        force.iter_mut().enumerate().for_each(f);
    }
}
