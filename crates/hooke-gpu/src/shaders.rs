//! The WGSL sources of every kernel, each with `common.wgsl` prepended, as the device compiles
//! them. Listed here so that tests can validate all of them (with naga, and on a device).

/// `predict.wgsl`: pins, gravity, air damping, external forces.
pub const PREDICT: &str = concat!(include_str!("common.wgsl"), include_str!("predict.wgsl"));
/// `aerodynamics.wgsl`: drag and lift per triangle, gathered per particle.
pub const AERODYNAMICS: &str = concat!(include_str!("common.wgsl"), include_str!("aerodynamics.wgsl"));
/// `distance.wgsl`: the XPBD/PBD distance-constraint sweep of one colour.
pub const DISTANCE: &str = concat!(include_str!("common.wgsl"), include_str!("distance.wgsl"));
/// `jacobi.wgsl`: the Jacobi distance-constraint iteration, one thread per particle.
pub const JACOBI: &str = concat!(include_str!("common.wgsl"), include_str!("jacobi.wgsl"));
/// `collide.wgsl`: colliders and Coulomb friction.
pub const COLLIDE: &str = concat!(include_str!("common.wgsl"), include_str!("collide.wgsl"));
/// `finish.wgsl`: velocity and position at the end of a substep.
pub const FINISH: &str = concat!(include_str!("common.wgsl"), include_str!("finish.wgsl"));
/// `normals.wgsl`: fixed-point atomic normal accumulation, then normalisation.
pub const NORMALS: &str = concat!(include_str!("common.wgsl"), include_str!("normals.wgsl"));
/// `tangents.wgsl`: fixed-point atomic UV-tangent accumulation, then Gram–Schmidt.
pub const TANGENTS: &str = concat!(include_str!("common.wgsl"), include_str!("tangents.wgsl"));
/// `health.wgsl`: non-finite and speed checks.
pub const HEALTH: &str = concat!(include_str!("common.wgsl"), include_str!("health.wgsl"));

/// Every kernel file with its bindings, as [`Kernels`](crate::kernel::Kernels) compiles them.
pub(crate) const KERNELS: &[crate::kernel::KernelSpec] = &[
    crate::predict::SPEC,
    crate::aerodynamics::SPEC,
    crate::distance::SPEC,
    crate::jacobi::SPEC,
    crate::collide::SPEC,
    crate::finish::SPEC,
    crate::normals::SPEC,
    crate::tangents::SPEC,
    crate::health::SPEC,
];

/// Every kernel file: (file name, full source, entry points).
pub const ALL: &[(&str, &str, &[&str])] = &[
    (KERNELS[0].name, KERNELS[0].source, KERNELS[0].entries),
    (KERNELS[1].name, KERNELS[1].source, KERNELS[1].entries),
    (KERNELS[2].name, KERNELS[2].source, KERNELS[2].entries),
    (KERNELS[3].name, KERNELS[3].source, KERNELS[3].entries),
    (KERNELS[4].name, KERNELS[4].source, KERNELS[4].entries),
    (KERNELS[5].name, KERNELS[5].source, KERNELS[5].entries),
    (KERNELS[6].name, KERNELS[6].source, KERNELS[6].entries),
    (KERNELS[7].name, KERNELS[7].source, KERNELS[7].entries),
    (KERNELS[8].name, KERNELS[8].source, KERNELS[8].entries),
];
