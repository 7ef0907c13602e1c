//! External forces on particles (article §1.4).
//!
//! Gravity is a constant acceleration applied by the solvers directly; this module holds the
//! forces that need geometry, such as the aerodynamic force on cloth triangles.

pub mod aerodynamics;
pub mod spring;
