//! # hooke-render — pictures of hooke scenes
//!
//! An off-screen renderer on wgpu for previews, tests and (next) the viewer: the cloth drawn
//! from the solver's own buffers (zero-copy on the GPU, article §5.4) with the recomputed
//! vertex normals (§6) and two-sided lighting, the colliders, the planes as a ground with a
//! grid, the ropes as lines; into an image read back as RGBA and written as PNG or animated
//! PNG (APNG). It runs wherever wgpu finds an adapter — lavapipe included — so pictures can
//! be made without a GPU.
//!
//! ```no_run
//! use std::sync::Arc;
//! use hooke_render::{Camera, HostCloth, RenderSettings, Renderer};
//!
//! let scene = hooke_io::scene::load(std::path::Path::new("scenes/flag.toml"), 1 << 30).unwrap();
//! let ctx = hooke_gpu::GpuContext::new().unwrap();
//! let renderer = Renderer::new(ctx.clone(), scene.model.clone(), RenderSettings::default()).unwrap();
//! let cloth = HostCloth::new(&ctx, scene.model.clone());
//! cloth.upload(&ctx, scene.model.particle_position()).unwrap();
//! renderer.draw(cloth.buffers(), &[], &Camera::framing(&scene.model, 0.6, 0.4, 960.0 / 540.0));
//! let rgba = renderer.read_rgba().unwrap();
//! hooke_render::write_png(std::path::Path::new("flag.png"), 960, 540, &rgba).unwrap();
//! ```
//!
//! Not drawn yet: mesh colliders (distance grids), which have no triangles after loading.
#![warn(missing_docs)]

mod camera;
mod image;
pub mod lod;
mod meshes;
mod renderer;

pub use camera::{Camera, scene_bounds};
pub use image::{AnimationWriter, write_png};
pub use renderer::{ClothBuffers, FORMAT, HostCloth, Palette, RenderSettings, Renderer};

use std::path::PathBuf;

/// Errors of the renderer and the image writers.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// A bad size, sample count or input length.
    #[error("{0}")]
    Input(String),
    /// The device rejected a pipeline, target or read-back.
    #[error("the GPU device failed: {0}")]
    Device(String),
    /// An image could not be written.
    #[error("cannot write {path}: {message}")]
    Write {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
}
