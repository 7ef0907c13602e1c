//! Worlds on the GPU (issue #13, item 1): independent scenes packed into one model
//! ([`hooke::World`]) and solved by the same dispatches, each with its own gravity, wind and
//! colliders, none touching another.
//!
//! A model's worlds hold consecutive ranges of its particles, bodies and colliders, so a
//! kernel finds a particle's world by a binary search over the ends of the particle ranges
//! (`world_of` in `worlds.wgsl`) and needs no per-particle table. The kernels that read a
//! world's data are prediction (gravity), aerodynamics (wind, by the world of a triangle's
//! first vertex, as on the CPU) and collision (the world's colliders). Two other stages carry
//! what they need in buffers they already have: triangle contact stores each slot's collider
//! range beside its corners, and self-collision the world of each body beside its friction.
//! Everything else — constraint sets, tethers, pins — is per particle or per constraint and
//! never mixes worlds. The only sums over particles of several worlds are the health counters.
//!
//! The operations and their order are those of one world alone, so each world's positions
//! are bit-identical to its scene run by itself (tested on lavapipe in `tests/worlds.rs`).

use bytemuck::{Pod, Zeroable};
use hooke::{Model, SubstepPlan};

/// One 16-byte record of `worlds` in `worlds.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub(crate) struct WorldRecord([u32; 4]);

/// The `worlds` buffer's records for `model` run with `substeps` substeps: per world its
/// particle end and collider range, then its gravity (m/s²); then the wind (m/s) of every
/// world at every substep of `plan`, zero without one (a new solver's buffer, rewritten by each
/// frame). At least one record, so that the buffer can be bound for a model of one world.
pub(crate) fn records(model: &Model, substeps: u32, plan: Option<&SubstepPlan>) -> Vec<WorldRecord> {
    let worlds = model.worlds();
    let w = worlds.len();
    let bits = |v: glam::Vec3| WorldRecord([v.x.to_bits(), v.y.to_bits(), v.z.to_bits(), 0]);
    let mut out = Vec::with_capacity((2 + substeps as usize) * w);
    for world in worlds {
        out.push(WorldRecord([world.particles.end, world.colliders.start, world.colliders.end, 0]));
        out.push(bits(world.gravity));
    }
    for sub in 0..substeps {
        match plan {
            Some(plan) if w > 1 => out.extend(plan.winds(sub).iter().map(|&v| bits(v))),
            _ => out.extend(std::iter::repeat_n(WorldRecord::default(), w)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::Vec3;
    use hooke::{ClothGrid, ModelBuilder};

    #[test]
    fn records_hold_each_worlds_ranges_and_gravity() {
        let mut b = ModelBuilder::new();
        b.add_cloth_grid(&ClothGrid::new("a", 3, 3, 0.1)).unwrap();
        b.add_world(Vec3::new(1.0, -2.0, 3.0)).unwrap();
        b.add_cloth_grid(&ClothGrid::new("b", 2, 2, 0.1)).unwrap();
        let model = b.finalize().unwrap();
        let r = records(&model, 2, None);
        assert_eq!(r.len(), 2 * 2 + 2 * 2);
        assert_eq!(r[0].0[0], 9);
        assert_eq!(r[2].0[0], 13);
        assert_eq!(f32::from_bits(r[3].0[1]), -2.0);
        assert!(r[4..].iter().all(|w| w.0 == [0; 4]));
    }
}
