//! The WGSL sources of every kernel, each with `common.wgsl` prepended, as the device compiles
//! them. Listed here so that tests can validate all of them (with naga, and on a device).

/// `predict.wgsl`: pins, gravity, air damping, external forces (after `worlds.wgsl`).
pub const PREDICT: &str =
    concat!(include_str!("common.wgsl"), include_str!("worlds.wgsl"), include_str!("predict.wgsl"));
/// `aerodynamics.wgsl`: drag and lift per triangle, gathered per particle (after `worlds.wgsl`).
pub const AERODYNAMICS: &str =
    concat!(include_str!("common.wgsl"), include_str!("worlds.wgsl"), include_str!("aerodynamics.wgsl"));
/// `distance.wgsl`: the XPBD/PBD distance-constraint sweep of one colour.
pub const DISTANCE: &str =
    concat!(include_str!("common.wgsl"), include_str!("distance.wgsl"), include_str!("tiles.wgsl"));
/// `dihedral.wgsl`: the XPBD/PBD sweep of one colour of cloth hinges (dihedral bending).
pub const DIHEDRAL: &str = concat!(
    include_str!("common.wgsl"),
    include_str!("hinge.wgsl"),
    include_str!("dihedral.wgsl"),
    include_str!("tiles.wgsl")
);
/// `rope_bending.wgsl`: the XPBD/PBD sweep of one colour of rope joints (bending).
pub const ROPE_BENDING: &str =
    concat!(include_str!("common.wgsl"), include_str!("rope_bending.wgsl"), include_str!("tiles.wgsl"));
/// `rope_solver.wgsl`: the direct rope solver (rows, matrix and update in parallel, the band a workgroup per rope).
pub const ROPE_SOLVER: &str = concat!(include_str!("common.wgsl"), include_str!("rope_solver.wgsl"));
/// `global_cloth.wgsl`: the global cloth solve (rows, the band, its factorisation and
/// substitutions, the update; after `hinge.wgsl`).
pub const GLOBAL_CLOTH: &str =
    concat!(include_str!("common.wgsl"), include_str!("hinge.wgsl"), include_str!("global_cloth.wgsl"));
/// `tethers.wgsl`: long-range attachments, one thread per tethered particle.
pub const TETHERS: &str =
    concat!(include_str!("common.wgsl"), include_str!("tether.wgsl"), include_str!("tethers.wgsl"));
/// `local_sweep.wgsl`: tile-local Gauss–Seidel in workgroup memory — the distance constraints,
/// hinges and tethers of every iteration of a substep, one workgroup per body (after
/// `hinge.wgsl` and `tether.wgsl`).
pub const LOCAL_SWEEP: &str = concat!(
    include_str!("common.wgsl"),
    include_str!("hinge.wgsl"),
    include_str!("tether.wgsl"),
    include_str!("local_sweep.wgsl")
);
/// `jacobi.wgsl`: the Jacobi distance-constraint iteration, one thread per particle.
pub const JACOBI: &str = concat!(include_str!("common.wgsl"), include_str!("jacobi.wgsl"));
/// `spatial_hash.wgsl`: the spatial hash of the particle contacts (count, scan, scatter) and
/// the neighbour lists built from it (after `contact_layout.wgsl`).
pub const SPATIAL_HASH: &str =
    concat!(include_str!("common.wgsl"), include_str!("contact_layout.wgsl"), include_str!("spatial_hash.wgsl"));
/// `contact_lists.wgsl`: whether the particle contacts' neighbour lists are stale, and the
/// indirect arguments of their build (after `contact_layout.wgsl`).
pub const CONTACT_LISTS: &str =
    concat!(include_str!("common.wgsl"), include_str!("contact_layout.wgsl"), include_str!("contact_lists.wgsl"));
/// `self_collision.wgsl`: particle contacts, one Jacobi gather per member (after
/// `contact_layout.wgsl`).
pub const SELF_COLLISION: &str =
    concat!(include_str!("common.wgsl"), include_str!("contact_layout.wgsl"), include_str!("self_collision.wgsl"));
/// `collide.wgsl`: colliders and Coulomb friction (after `worlds.wgsl` and `collider_shapes.wgsl`).
pub const COLLIDE: &str = concat!(
    include_str!("common.wgsl"),
    include_str!("worlds.wgsl"),
    include_str!("collider_shapes.wgsl"),
    include_str!("collide.wgsl")
);
/// `triangle_contact.wgsl`: the cloth triangles' virtual particles against the colliders
/// (after `collider_shapes.wgsl`).
pub const TRIANGLE_CONTACT: &str = concat!(
    include_str!("common.wgsl"),
    include_str!("collider_shapes.wgsl"),
    include_str!("triangle_share.wgsl"),
    include_str!("triangle_contact.wgsl")
);
/// `triangle_gather.wgsl`: triangle contact's gather through the model's own lists.
pub const TRIANGLE_GATHER: &str =
    concat!(include_str!("common.wgsl"), include_str!("triangle_share.wgsl"), include_str!("triangle_gather.wgsl"));
/// `finish.wgsl`: velocity and position at the end of a substep.
pub const FINISH: &str = concat!(include_str!("common.wgsl"), include_str!("finish.wgsl"));
/// `normals.wgsl`: fixed-point atomic normal accumulation, then normalisation.
pub const NORMALS: &str = concat!(include_str!("common.wgsl"), include_str!("normals.wgsl"));
/// `tangents.wgsl`: fixed-point atomic UV-tangent accumulation, then Gram–Schmidt.
pub const TANGENTS: &str = concat!(include_str!("common.wgsl"), include_str!("tangents.wgsl"));
/// `raycast.wgsl`: picking, the nearest triangle a ray hits.
pub const RAYCAST: &str = concat!(include_str!("common.wgsl"), include_str!("raycast.wgsl"));
/// `health.wgsl`: non-finite and speed checks.
pub const HEALTH: &str = concat!(include_str!("common.wgsl"), include_str!("health.wgsl"));

/// Every kernel file with its bindings, as [`Kernels`](crate::kernel::Kernels) compiles them.
pub(crate) const KERNELS: &[crate::kernel::KernelSpec] = &[
    crate::predict::SPEC,
    crate::aerodynamics::SPEC,
    crate::distance::SPEC,
    crate::dihedral::SPEC,
    crate::rope_bending::SPEC,
    crate::rope_solver::SPEC,
    crate::global_cloth::SPEC,
    crate::tethers::SPEC,
    crate::local_sweep::SPEC,
    crate::jacobi::SPEC,
    crate::spatial_hash::SPEC,
    crate::contact_lists::SPEC,
    crate::self_collision::SPEC,
    crate::collide::SPEC,
    crate::triangle_contact::SPEC,
    crate::triangle_contact::GATHER,
    crate::finish::SPEC,
    crate::normals::SPEC,
    crate::tangents::SPEC,
    crate::raycast::SPEC,
    crate::health::SPEC,
];

/// Every kernel file: (file name, full source, entry points).
pub const ALL: &[(&str, &str, &[&str])] = &{
    let mut all: [(&str, &str, &[&str]); KERNELS.len()] = [("", "", &[]); KERNELS.len()];
    let mut k = 0;
    while k < KERNELS.len() {
        all[k] = (KERNELS[k].name, KERNELS[k].source, KERNELS[k].entries);
        k += 1;
    }
    all
};
