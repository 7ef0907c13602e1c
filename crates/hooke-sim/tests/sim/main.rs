//! Scenes run through the factory, one test binary (each links wgpu): golden trajectories on
//! the CPU and on lavapipe, and run-time changes of a running scene.

#[path = "../../../hooke-gpu/tests/common/mod.rs"]
#[macro_use]
mod common;

mod golden;
mod model_changes;
mod tearing_keys;
