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

/// Every kernel file: (file name, full source, entry points).
pub const ALL: &[(&str, &str, &[&str])] = &[
    ("predict.wgsl", PREDICT, &["reset_w", "pin_begin", "predict", "pin_predict"]),
    ("aerodynamics.wgsl", AERODYNAMICS, &["triangle_forces", "gather"]),
    ("distance.wgsl", DISTANCE, &["solve"]),
    ("jacobi.wgsl", JACOBI, &["solve", "copy_back"]),
    ("collide.wgsl", COLLIDE, &["collide"]),
    ("finish.wgsl", FINISH, &["finish"]),
    ("normals.wgsl", NORMALS, &["accumulate", "normalise"]),
    ("tangents.wgsl", TANGENTS, &["accumulate", "finish"]),
    ("health.wgsl", HEALTH, &["check", "check_strain"]),
];
