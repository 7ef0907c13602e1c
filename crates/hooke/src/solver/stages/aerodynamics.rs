//! The aerodynamics stage: drag and lift of every triangle in the wind (article §1.4; the
//! force law is in [`forces::aerodynamics`](crate::forces::aerodynamics)), a third of each
//! triangle's force on each of its vertices.

use crate::Model;
use crate::forces::aerodynamics;
use glam::Vec3;
use rayon::prelude::*;

/// Below this many triangles their loop runs on the calling thread.
const PARALLEL_MIN_TRIANGLES: usize = 4096;

/// Fills `out` with a third of each triangle's aerodynamic force (N), one per triangle, for
/// the positions `x(p)` (m) and velocities `v(p)` (m/s) in the wind `wind` (m/s).
pub(crate) fn triangle_forces(
    model: &Model,
    wind: Vec3,
    x: impl Fn(usize) -> Vec3 + Sync,
    v: impl Fn(usize) -> Vec3 + Sync,
    out: &mut Vec<Vec3>,
    parallel: bool,
) {
    let air = model.air();
    let tri = |t: &[u32; 3]| {
        let xs = t.map(|i| x(i as usize));
        let vs = t.map(|i| v(i as usize));
        aerodynamics::triangle_force(&air, xs, vs, wind) * (1.0 / 3.0)
    };
    if parallel && model.triangles().len() >= PARALLEL_MIN_TRIANGLES {
        model.triangles().par_iter().map(tri).collect_into_vec(out);
    } else {
        out.clear();
        out.extend(model.triangles().iter().map(tri));
    }
}

/// The aerodynamic force on particle `p` (N): the shares of its triangles, summed in the
/// order of [`Model::particle_triangles`].
#[inline(always)]
pub(crate) fn particle_force(model: &Model, triangle_force: &[Vec3], p: usize) -> Vec3 {
    model.particle_triangles(p).iter().map(|&t| triangle_force[t as usize]).sum()
}

/// Fills `force` (one per particle) with [`particle_force`].
pub(crate) fn gather(model: &Model, triangle_force: &[Vec3], force: &mut [Vec3], parallel: bool) {
    let f = |(p, out): (usize, &mut Vec3)| *out = particle_force(model, triangle_force, p);
    if parallel && force.len() >= 2 * super::PARTICLE_CHUNK {
        force.par_iter_mut().enumerate().for_each(f);
    } else {
        force.iter_mut().enumerate().for_each(f);
    }
}
