//! # hooke-io — scene files and caches for the hooke cloth engine
//!
//! * [`scene`]: TOML scene files parsed into a typed schema and built into a
//!   [`hooke::Model`], pins and solver settings, with errors that name the file and key.
//! * [`mesh`]: triangle mesh import (OBJ; polygons ear-clipped; coincident vertices welded,
//!   with a map from the file's vertices to the particles).
//! * [`mesh_collider`]: mesh colliders — an OBJ file validated and sampled into a signed
//!   distance grid, cached beside the mesh.
//! * `cache`: writers for USD `.usda`, OBJ sequences and PC2 point caches.
#![warn(missing_docs)]

pub mod cache;
pub mod mesh;
pub mod mesh_collider;
pub mod scene;
