//! The off-screen renderer: a colour (+ MSAA) and depth target, one lit triangle pipeline for
//! cloth, colliders and ground, one line pipeline for ropes and one for overlay lines between
//! particles drawn over everything ([`Renderer::set_overlay`]; `scene.wgsl`).
//!
//! The cloth is drawn from vertex buffers in the GPU solver's layout — one `vec4<f32>` per
//! particle for positions and for normals, and the model's triangles as a `u32` index buffer
//! ([`hooke_gpu::GpuXpbdSolver::position_buffer`], `normal_buffer`, `triangle_buffer`) — so a
//! GPU run is drawn with no copy (article §5.4); a CPU run uploads its positions and normals
//! into buffers of the same layout ([`HostCloth`]). Ropes are lines over the same position
//! buffer. Colliders and the ground are small meshes built on the host for each picture
//! (`meshes.rs`). Cloth grids finer than the picture are drawn through a coarser index buffer
//! over the same vertex buffers ([`crate::lod`]).

use crate::RenderError;
use crate::camera::{Camera, scene_bounds};
use crate::lod;
use crate::meshes::{self, HostMesh};
use glam::{Mat4, Vec3, Vec4};
use hooke::collision::Pose;
use hooke::{BodyKind, Model};
use hooke_gpu::GpuContext;
use std::sync::Arc;
use wgpu::util::DeviceExt;

/// The colour format of the pictures: 8-bit RGBA, sRGB encoded.
pub const FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8UnormSrgb;
const DEPTH: wgpu::TextureFormat = wgpu::TextureFormat::Depth32Float;
/// The format of [`Renderer::ui_view`].
const UI_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8Unorm;

/// Linear RGB colours (each channel in [0, 1]) of what is drawn.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Palette {
    /// The background.
    pub background: Vec3,
    /// The front of the cloth (the side its triangles wind counter-clockwise).
    pub cloth_front: Vec3,
    /// The back of the cloth.
    pub cloth_back: Vec3,
    /// Colliders.
    pub collider: Vec3,
    /// The ground (planes) between grid lines.
    pub ground: Vec3,
    /// The ground's grid lines.
    pub grid_line: Vec3,
    /// Ropes.
    pub rope: Vec3,
}

impl Default for Palette {
    /// A light blue-grey background, blue cloth with an orange back, red colliders, a grey
    /// ground with darker lines, dark ropes.
    fn default() -> Self {
        Palette {
            background: Vec3::new(0.62, 0.68, 0.75),
            cloth_front: Vec3::new(0.15, 0.35, 0.80),
            cloth_back: Vec3::new(0.85, 0.45, 0.12),
            collider: Vec3::new(0.75, 0.08, 0.06),
            ground: Vec3::new(0.45, 0.45, 0.42),
            grid_line: Vec3::new(0.22, 0.22, 0.21),
            rope: Vec3::new(0.08, 0.06, 0.05),
        }
    }
}

/// Size, antialiasing and content of the pictures.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RenderSettings {
    /// Width in pixels, 1 to 8192.
    pub width: u32,
    /// Height in pixels, 1 to 8192.
    pub height: u32,
    /// Samples per pixel: 1 (no antialiasing) or 4.
    pub samples: u32,
    /// Draw the colliders (bounded shapes).
    pub colliders: bool,
    /// Draw the planes as a ground with a grid.
    pub ground: bool,
    /// Draw cloth grids finer than the picture at a coarser level of detail (every s-th row
    /// and column of particles, from the same buffers; see [`crate::lod`]) when their
    /// triangles exceed a quarter of the picture's pixels. Off: always every triangle.
    pub level_of_detail: bool,
    /// Colours.
    pub palette: Palette,
}

impl Default for RenderSettings {
    /// 960 × 540, 4× antialiasing, colliders and ground drawn, level of detail on, the
    /// default palette.
    fn default() -> Self {
        RenderSettings {
            width: 960,
            height: 540,
            samples: 4,
            colliders: true,
            ground: true,
            level_of_detail: true,
            palette: Palette::default(),
        }
    }
}

/// The uniform block of `scene.wgsl` (`View`), 208 bytes.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct ViewUniform {
    view_projection: [[f32; 4]; 4],
    light: [f32; 4],
    eye: [f32; 4],
    cloth_front: [f32; 4],
    cloth_back: [f32; 4],
    collider: [f32; 4],
    ground: [f32; 4],
    grid_line: [f32; 4],
    rope: [f32; 4],
    grid: [f32; 4],
}

/// Where the cloth's vertices are: buffers in the GPU solver's layout.
#[derive(Clone, Copy, Debug)]
pub struct ClothBuffers<'a> {
    /// Positions, one `vec4<f32>` per particle (m; w ignored), `VERTEX` usage.
    pub positions: &'a wgpu::Buffer,
    /// Unit normals, one `vec4<f32>` per particle (w = 0), `VERTEX` usage.
    pub normals: &'a wgpu::Buffer,
    /// The model's triangles, three `u32` each, `INDEX` usage.
    pub triangles: &'a wgpu::Buffer,
}

/// Buffers of the [`ClothBuffers`] layout filled from the host, for solvers that run on the
/// CPU: [`HostCloth::upload`] writes positions and the vertex normals computed from them.
pub struct HostCloth {
    positions: wgpu::Buffer,
    normals: wgpu::Buffer,
    triangles: wgpu::Buffer,
    model: Arc<Model>,
}

impl HostCloth {
    /// Buffers for `model`'s particles and triangles.
    pub fn new(ctx: &GpuContext, model: Arc<Model>) -> HostCloth {
        let device = ctx.device();
        let n = model.particle_count().max(1) as u64;
        let vertex = |label| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: 16 * n,
                usage: wgpu::BufferUsages::VERTEX | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        };
        let mut indices: Vec<u32> = model.triangles().iter().flatten().copied().collect();
        indices.resize(indices.len().max(4), 0);
        let triangles = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("hooke-render triangles"),
            contents: bytemuck::cast_slice(&indices),
            usage: wgpu::BufferUsages::INDEX,
        });
        HostCloth {
            positions: vertex("hooke-render positions"),
            normals: vertex("hooke-render normals"),
            triangles,
            model,
        }
    }

    /// Writes `positions` (m, one per particle) and their vertex normals.
    ///
    /// # Errors
    /// [`RenderError::Input`] if there is not one position per particle.
    pub fn upload(&self, ctx: &GpuContext, positions: &[Vec3]) -> Result<(), RenderError> {
        let normals = hooke::surface::vertex_normals(&self.model, positions);
        self.upload_with_normals(ctx, positions, &normals)
    }

    /// Writes `positions` (m) and `normals` (unit vectors), one of each per particle.
    ///
    /// # Errors
    /// [`RenderError::Input`] if there is not one of each per particle.
    pub fn upload_with_normals(
        &self,
        ctx: &GpuContext,
        positions: &[Vec3],
        normals: &[Vec3],
    ) -> Result<(), RenderError> {
        let n = self.model.particle_count();
        if positions.len() != n || normals.len() != n {
            return Err(RenderError::Input(format!(
                "{} positions and {} normals for a model of {n} particles",
                positions.len(),
                normals.len()
            )));
        }
        let pack = |v: &[Vec3]| v.iter().map(|p| p.extend(0.0).to_array()).collect::<Vec<[f32; 4]>>();
        ctx.queue().write_buffer(&self.positions, 0, bytemuck::cast_slice(&pack(positions)));
        ctx.queue().write_buffer(&self.normals, 0, bytemuck::cast_slice(&pack(normals)));
        Ok(())
    }

    /// The buffers, for [`Renderer::draw`].
    pub fn buffers(&self) -> ClothBuffers<'_> {
        ClothBuffers { positions: &self.positions, normals: &self.normals, triangles: &self.triangles }
    }
}

/// Draws a model's frames into an off-screen image. See the [module documentation](self).
pub struct Renderer {
    ctx: Arc<GpuContext>,
    model: Arc<Model>,
    settings: RenderSettings,
    triangles: wgpu::RenderPipeline,
    lines: wgpu::RenderPipeline,
    overlay: wgpu::RenderPipeline,
    /// The layout of the overlay's colour (a uniform with a dynamic offset).
    colour_layout: wgpu::BindGroupLayout,
    /// Overlay lines between particles, drawn over everything: their index buffer (pairs of
    /// particles), the colours' uniform buffer and bind group, and the runs of one colour
    /// (index range, dynamic offset).
    overlay_lines: Option<OverlayLines>,
    view: wgpu::Buffer,
    view_group: wgpu::BindGroup,
    targets: Targets,
    /// Rope segments (pairs of particle indices) and how many indices.
    rope: Option<(wgpu::Buffer, u32)>,
    /// The level of detail of cloth grids: the stride s (1: every triangle) and, when s > 1,
    /// the coarse triangles' index buffer and index count ([`crate::lod`]).
    detail: (u32, Option<(wgpu::Buffer, u32)>),
    /// Where the ground is centred and how wide it is (m), and its grid spacing (m).
    ground: (Vec3, f32, f32),
    /// The colliders' poses of the last picture and their meshes' buffers (see `draw`).
    scenery: std::cell::RefCell<Option<(Vec<Pose>, Option<Scenery>)>>,
}

/// Vertex positions, normals and indices of the colliders and ground, and the index count.
type Scenery = (wgpu::Buffer, wgpu::Buffer, wgpu::Buffer, u32);

impl Renderer {
    /// A renderer of `model` on `ctx`'s device.
    ///
    /// # Errors
    /// [`RenderError::Input`] for a size outside 1–8192 or a sample count other than 1 or 4;
    /// [`RenderError::Device`] if the device rejects the pipeline or targets.
    pub fn new(ctx: Arc<GpuContext>, model: Arc<Model>, settings: RenderSettings) -> Result<Renderer, RenderError> {
        let (w, h) = (settings.width, settings.height);
        if !(1..=8192).contains(&w) || !(1..=8192).contains(&h) {
            return Err(RenderError::Input(format!("image size {w} × {h}: each side must be 1 to 8192 pixels")));
        }
        if settings.samples != 1 && settings.samples != 4 {
            return Err(RenderError::Input(format!("{} samples per pixel: must be 1 or 4", settings.samples)));
        }
        let device = ctx.device();
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let shader = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("hooke-render scene.wgsl"),
            source: wgpu::ShaderSource::Wgsl(include_str!("scene.wgsl").into()),
        });
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("hooke-render view"),
            entries: &[wgpu::BindGroupLayoutEntry {
                binding: 0,
                visibility: wgpu::ShaderStages::VERTEX_FRAGMENT,
                ty: wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Uniform,
                    has_dynamic_offset: false,
                    min_binding_size: None,
                },
                count: None,
            }],
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("hooke-render"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let vec4 = |location| wgpu::VertexBufferLayout {
            array_stride: 16,
            step_mode: wgpu::VertexStepMode::Vertex,
            attributes: match location {
                0 => &[wgpu::VertexAttribute { format: wgpu::VertexFormat::Float32x4, offset: 0, shader_location: 0 }],
                _ => &[wgpu::VertexAttribute { format: wgpu::VertexFormat::Float32x4, offset: 0, shader_location: 1 }],
            },
        };
        let depth_state = wgpu::DepthStencilState {
            format: DEPTH,
            depth_write_enabled: Some(true),
            depth_compare: Some(wgpu::CompareFunction::Less),
            stencil: wgpu::StencilState::default(),
            bias: wgpu::DepthBiasState::default(),
        };
        let multisample =
            wgpu::MultisampleState { count: settings.samples, mask: !0, alpha_to_coverage_enabled: false };
        let target = [Some(wgpu::ColorTargetState { format: FORMAT, blend: None, write_mask: wgpu::ColorWrites::ALL })];
        let colour_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("hooke-render overlay colour"),
            entries: &[wgpu::BindGroupLayoutEntry {
                binding: 0,
                visibility: wgpu::ShaderStages::FRAGMENT,
                ty: wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Uniform,
                    has_dynamic_offset: true,
                    min_binding_size: wgpu::BufferSize::new(16),
                },
                count: None,
            }],
        });
        let overlay_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("hooke-render overlay"),
            bind_group_layouts: &[Some(&layout), Some(&colour_layout)],
            immediate_size: 0,
        });
        let pipeline = |label, vs, fs, buffers: &[Option<wgpu::VertexBufferLayout>], topology, over: bool| {
            let mut depth_stencil = depth_state.clone();
            if over {
                depth_stencil.depth_write_enabled = Some(false);
                depth_stencil.depth_compare = Some(wgpu::CompareFunction::Always);
            }
            device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
                label: Some(label),
                layout: Some(if over { &overlay_layout } else { &pipeline_layout }),
                vertex: wgpu::VertexState {
                    module: &shader,
                    entry_point: Some(vs),
                    compilation_options: Default::default(),
                    buffers,
                },
                primitive: wgpu::PrimitiveState { topology, cull_mode: None, ..Default::default() },
                depth_stencil: Some(depth_stencil),
                multisample,
                fragment: Some(wgpu::FragmentState {
                    module: &shader,
                    entry_point: Some(fs),
                    compilation_options: Default::default(),
                    targets: &target,
                }),
                multiview_mask: None,
                cache: None,
            })
        };
        let triangles = pipeline(
            "hooke-render triangles",
            "vs",
            "fs",
            &[Some(vec4(0)), Some(vec4(1))],
            wgpu::PrimitiveTopology::TriangleList,
            false,
        );
        let overlay = pipeline(
            "hooke-render overlay",
            "vs_overlay",
            "fs_overlay",
            &[Some(vec4(0))],
            wgpu::PrimitiveTopology::LineList,
            true,
        );
        let lines = pipeline(
            "hooke-render lines",
            "vs_line",
            "fs_line",
            &[Some(vec4(0))],
            wgpu::PrimitiveTopology::LineList,
            false,
        );
        let view = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("hooke-render view"),
            size: size_of::<ViewUniform>() as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let view_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("hooke-render view"),
            layout: &layout,
            entries: &[wgpu::BindGroupEntry { binding: 0, resource: view.as_entire_binding() }],
        });
        let targets = Targets::new(device, w, h, settings.samples);
        let rope: Vec<u32> = model
            .bodies()
            .iter()
            .filter(|b| matches!(b.kind, BodyKind::Rope))
            .flat_map(|b| (b.particles.start..b.particles.end.saturating_sub(1)).flat_map(|p| [p, p + 1]))
            .collect();
        let rope = (!rope.is_empty()).then(|| {
            let buffer = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("hooke-render rope segments"),
                contents: bytemuck::cast_slice(&rope),
                usage: wgpu::BufferUsages::INDEX,
            });
            (buffer, rope.len() as u32)
        });
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(RenderError::Device(e.to_string()));
        }
        let (lo, hi) = scene_bounds(&model);
        let size = (hi - lo).length().max(1e-3);
        // Grid lines every power of ten that gives 5–50 lines across the scene.
        let spacing = 10f32.powf((size / 5.0).log10().floor());
        let detail = level_of_detail(device, &model, &settings);
        Ok(Renderer {
            ctx,
            model,
            settings,
            triangles,
            lines,
            overlay,
            colour_layout,
            overlay_lines: None,
            view,
            view_group,
            targets,
            rope,
            detail,
            ground: ((lo + hi) * 0.5, 4.0 * size, spacing),
            scenery: std::cell::RefCell::new(None),
        })
    }

    /// The stride at which cloth grids are drawn: 1 for every triangle, s for every s-th row
    /// and column of particles ([`RenderSettings::level_of_detail`], [`crate::lod`]).
    pub fn cloth_stride(&self) -> u32 {
        self.detail.0
    }

    /// Lines drawn over everything from the next [`Renderer::draw`] on, one per segment
    /// (particle a, particle b, linear RGB colour) — a viewer's constraints, say — between the
    /// particles' positions in the buffers each draw is given, so they follow the cloth with
    /// no read-back; an empty slice removes them. Drawn in the order given (later over
    /// earlier), one draw per run of equal colours. Segments naming a particle the model does
    /// not have are left out.
    pub fn set_overlay(&mut self, segments: &[(u32, u32, Vec3)]) {
        let n = self.model.particle_count() as u32;
        let segments: Vec<&(u32, u32, Vec3)> = segments.iter().filter(|s| s.0 < n && s.1 < n).collect();
        if segments.is_empty() {
            self.overlay_lines = None;
            return;
        }
        let indices: Vec<u32> = segments.iter().flat_map(|s| [s.0, s.1]).collect();
        // Runs of one colour: (first index, index count, colour).
        let mut runs: Vec<(u32, u32, Vec3)> = Vec::new();
        for (k, s) in segments.iter().enumerate() {
            match runs.last_mut() {
                Some(run) if run.2 == s.2 => run.1 += 2,
                _ => runs.push((2 * k as u32, 2, s.2)),
            }
        }
        let device = self.ctx.device();
        let stride = device.limits().min_uniform_buffer_offset_alignment.max(16) as usize;
        let mut colours = vec![0u8; stride * runs.len()];
        for (k, run) in runs.iter().enumerate() {
            colours[k * stride..k * stride + 16].copy_from_slice(bytemuck::cast_slice(&run.2.extend(1.0).to_array()));
        }
        let index = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("hooke-render overlay segments"),
            contents: bytemuck::cast_slice(&indices),
            usage: wgpu::BufferUsages::INDEX,
        });
        let colour = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("hooke-render overlay colours"),
            contents: &colours,
            usage: wgpu::BufferUsages::UNIFORM,
        });
        let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("hooke-render overlay colour"),
            layout: &self.colour_layout,
            entries: &[wgpu::BindGroupEntry {
                binding: 0,
                resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer: &colour,
                    offset: 0,
                    size: wgpu::BufferSize::new(16),
                }),
            }],
        });
        let runs = runs.iter().enumerate().map(|(k, r)| (r.0..r.0 + r.1, (k * stride) as u32)).collect();
        self.overlay_lines = Some(OverlayLines { index, _colour: colour, group, runs });
    }

    /// The settings it was made with (and the size of the last [`Renderer::resize`]).
    pub fn settings(&self) -> &RenderSettings {
        &self.settings
    }

    /// Changes the image size to `width × height` pixels (each clamped to 1–8192), making new
    /// targets; the image view changes with it ([`Renderer::image_view`]).
    pub fn resize(&mut self, width: u32, height: u32) {
        let (w, h) = (width.clamp(1, 8192), height.clamp(1, 8192));
        if (w, h) != (self.settings.width, self.settings.height) {
            self.targets = Targets::new(self.ctx.device(), w, h, self.settings.samples);
            self.settings.width = w;
            self.settings.height = h;
            self.detail = level_of_detail(self.ctx.device(), &self.model, &self.settings);
        }
    }

    /// The image as a texture of gamma-encoded values — an `Rgba8Unorm` view of the sRGB
    /// image, single-sampled, `TEXTURE_BINDING` usage — to show it in a user interface without
    /// reading it back: egui, which blends in gamma space, samples it as it samples its own
    /// textures.
    pub fn ui_view(&self) -> &wgpu::TextureView {
        &self.targets.ui_view
    }

    /// Draws the model with its particles and normals in `cloth`, the colliders at `poses`
    /// (one per collider; missing ones at rest), seen by `camera`, into the image (submitted
    /// to the queue; read it with [`Renderer::read_rgba`]).
    pub fn draw(&self, cloth: ClothBuffers<'_>, poses: &[Pose], camera: &Camera) {
        let s = &self.settings;
        let device = self.ctx.device();
        let queue = self.ctx.queue();
        let p = &s.palette;
        let colour = |c: Vec3| c.extend(1.0).to_array();
        let light = Vec3::new(0.35, 1.0, 0.55).normalize();
        let uniform = ViewUniform {
            view_projection: camera.view_projection(s.width as f32 / s.height as f32).to_cols_array_2d(),
            light: light.extend(0.0).to_array(),
            eye: camera.eye.extend(1.0).to_array(),
            cloth_front: colour(p.cloth_front),
            cloth_back: colour(p.cloth_back),
            collider: colour(p.collider),
            ground: colour(p.ground),
            grid_line: colour(p.grid_line),
            rope: colour(p.rope),
            grid: Vec4::new(self.ground.2, 0.0, 0.0, 0.0).to_array(),
        };
        queue.write_buffer(&self.view, 0, bytemuck::bytes_of(&uniform));
        // The colliders' and ground's meshes, made again only when a collider has moved.
        let mut cache = self.scenery.borrow_mut();
        if cache.as_ref().is_none_or(|(p, _)| p.as_slice() != poses) {
            let mut mesh = meshes::colliders(&self.model, poses, self.ground.0, self.ground.1);
            keep(&mut mesh, s.colliders, s.ground);
            *cache = Some((poses.to_vec(), upload(device, &mesh)));
        }
        let scenery = cache.as_ref().and_then(|(_, buffers)| buffers.as_ref());
        let mut encoder =
            device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("hooke-render") });
        {
            let background =
                wgpu::Color { r: p.background.x as f64, g: p.background.y as f64, b: p.background.z as f64, a: 1.0 };
            let t = &self.targets;
            let (view, resolve) = match &t.msaa {
                Some(msaa) => (msaa, Some(&t.image_view)),
                None => (&t.image_view, None),
            };
            let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some("hooke-render scene"),
                color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                    view,
                    depth_slice: None,
                    resolve_target: resolve,
                    ops: wgpu::Operations { load: wgpu::LoadOp::Clear(background), store: wgpu::StoreOp::Store },
                })],
                depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                    view: &t.depth,
                    depth_ops: Some(wgpu::Operations { load: wgpu::LoadOp::Clear(1.0), store: wgpu::StoreOp::Discard }),
                    stencil_ops: None,
                }),
                timestamp_writes: None,
                occlusion_query_set: None,
                multiview_mask: None,
            });
            pass.set_bind_group(0, &self.view_group, &[]);
            pass.set_pipeline(&self.triangles);
            let (triangles, cloth_indices) = match &self.detail.1 {
                Some((coarse, count)) => (coarse, *count),
                None => (cloth.triangles, 3 * self.model.triangles().len() as u32),
            };
            if cloth_indices > 0 {
                pass.set_vertex_buffer(0, cloth.positions.slice(..));
                pass.set_vertex_buffer(1, cloth.normals.slice(..));
                pass.set_index_buffer(triangles.slice(..), wgpu::IndexFormat::Uint32);
                pass.draw_indexed(0..cloth_indices, 0, 0..1);
            }
            if let Some((positions, normals, indices, count)) = scenery {
                pass.set_vertex_buffer(0, positions.slice(..));
                pass.set_vertex_buffer(1, normals.slice(..));
                pass.set_index_buffer(indices.slice(..), wgpu::IndexFormat::Uint32);
                pass.draw_indexed(0..*count, 0, 0..1);
            }
            if let Some((segments, count)) = &self.rope {
                pass.set_pipeline(&self.lines);
                pass.set_vertex_buffer(0, cloth.positions.slice(..));
                pass.set_index_buffer(segments.slice(..), wgpu::IndexFormat::Uint32);
                pass.draw_indexed(0..*count, 0, 0..1);
            }
            if let Some(o) = &self.overlay_lines {
                pass.set_pipeline(&self.overlay);
                pass.set_vertex_buffer(0, cloth.positions.slice(..));
                pass.set_index_buffer(o.index.slice(..), wgpu::IndexFormat::Uint32);
                for (range, offset) in &o.runs {
                    pass.set_bind_group(1, &o.group, &[*offset]);
                    pass.draw_indexed(range.clone(), 0, 0..1);
                }
            }
        }
        queue.submit([encoder.finish()]);
    }

    /// The last image drawn: `width × height` pixels, row by row from the top, 4 bytes each
    /// (RGBA, sRGB). One read-back from the device.
    ///
    /// # Errors
    /// [`RenderError::Device`] if the read-back fails.
    pub fn read_rgba(&self) -> Result<Vec<u8>, RenderError> {
        let (w, h) = (self.settings.width, self.settings.height);
        let device = self.ctx.device();
        let row = (4 * w).div_ceil(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT) * wgpu::COPY_BYTES_PER_ROW_ALIGNMENT;
        let staging = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("hooke-render read-back"),
            size: row as u64 * h as u64,
            usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::MAP_READ,
            mapped_at_creation: false,
        });
        let mut encoder =
            device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("hooke-render read") });
        encoder.copy_texture_to_buffer(
            wgpu::TexelCopyTextureInfo {
                texture: &self.targets.image,
                mip_level: 0,
                origin: wgpu::Origin3d::ZERO,
                aspect: wgpu::TextureAspect::All,
            },
            wgpu::TexelCopyBufferInfo {
                buffer: &staging,
                layout: wgpu::TexelCopyBufferLayout { offset: 0, bytes_per_row: Some(row), rows_per_image: Some(h) },
            },
            wgpu::Extent3d { width: w, height: h, depth_or_array_layers: 1 },
        );
        self.ctx.queue().submit([encoder.finish()]);
        let (tx, rx) = std::sync::mpsc::channel();
        staging.map_async(wgpu::MapMode::Read, .., move |r| {
            let _ = tx.send(r);
        });
        device.poll(wgpu::PollType::wait_indefinitely()).map_err(|e| RenderError::Device(e.to_string()))?;
        rx.recv().map_err(|e| RenderError::Device(e.to_string()))?.map_err(|e| RenderError::Device(e.to_string()))?;
        let mapped = staging.get_mapped_range(..).map_err(|e| RenderError::Device(e.to_string()))?;
        let mut out = Vec::with_capacity((4 * w * h) as usize);
        for y in 0..h as usize {
            out.extend_from_slice(&mapped[y * row as usize..y * row as usize + 4 * w as usize]);
        }
        drop(mapped);
        staging.unmap();
        Ok(out)
    }

    /// The clip-space transform the image was drawn with for `camera` (to project points).
    pub fn view_projection(&self, camera: &Camera) -> Mat4 {
        camera.view_projection(self.settings.width as f32 / self.settings.height as f32)
    }
}

/// The overlay's buffers ([`Renderer::set_overlay`]).
struct OverlayLines {
    /// Pairs of particle indices.
    index: wgpu::Buffer,
    /// The colours, one per run, `min_uniform_buffer_offset_alignment` apart (kept alive for
    /// the bind group).
    _colour: wgpu::Buffer,
    group: wgpu::BindGroup,
    /// Each run of one colour: its index range and its colour's offset.
    runs: Vec<(std::ops::Range<u32>, u32)>,
}

/// The render targets of one image size.
struct Targets {
    /// The multisampled colour target (with 4 samples), resolved into `image`.
    msaa: Option<wgpu::TextureView>,
    image: wgpu::Texture,
    image_view: wgpu::TextureView,
    /// The image's bytes read as gamma-encoded values ([`Renderer::ui_view`]).
    ui_view: wgpu::TextureView,
    depth: wgpu::TextureView,
}

impl Targets {
    fn new(device: &wgpu::Device, w: u32, h: u32, samples: u32) -> Targets {
        let extent = wgpu::Extent3d { width: w, height: h, depth_or_array_layers: 1 };
        let texture = |label, samples, format, usage| {
            device.create_texture(&wgpu::TextureDescriptor {
                label: Some(label),
                size: extent,
                mip_level_count: 1,
                sample_count: samples,
                dimension: wgpu::TextureDimension::D2,
                format,
                usage,
                // The image and its multisampled target may also be viewed as UI_FORMAT.
                view_formats: if format == FORMAT { &[UI_FORMAT] } else { &[] },
            })
        };
        let attachment = wgpu::TextureUsages::RENDER_ATTACHMENT;
        let usage = attachment | wgpu::TextureUsages::COPY_SRC | wgpu::TextureUsages::TEXTURE_BINDING;
        let image = texture("hooke-render image", 1, FORMAT, usage);
        let msaa = (samples > 1)
            .then(|| texture("hooke-render msaa", samples, FORMAT, attachment).create_view(&Default::default()));
        let depth = texture("hooke-render depth", samples, DEPTH, attachment).create_view(&Default::default());
        let image_view = image.create_view(&Default::default());
        let ui_view = image.create_view(&wgpu::TextureViewDescriptor { format: Some(UI_FORMAT), ..Default::default() });
        Targets { msaa, image, image_view, ui_view, depth }
    }
}

/// The stride and coarse index buffer of `settings`' picture ([`Renderer::cloth_stride`]).
fn level_of_detail(
    device: &wgpu::Device,
    model: &Model,
    settings: &RenderSettings,
) -> (u32, Option<(wgpu::Buffer, u32)>) {
    if !settings.level_of_detail {
        return (1, None);
    }
    let budget = lod::triangle_budget(settings.width as u64 * settings.height as u64);
    let s = lod::stride(model, budget);
    if s == 1 {
        return (1, None);
    }
    let triangles = lod::triangles(model, s);
    let buffer = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("hooke-render coarse cloth"),
        contents: bytemuck::cast_slice(&triangles),
        usage: wgpu::BufferUsages::INDEX,
    });
    (s, Some((buffer, 3 * triangles.len() as u32)))
}

/// Drops the collider or ground triangles not asked for (by their material).
fn keep(mesh: &mut HostMesh, colliders: bool, ground: bool) {
    if colliders && ground {
        return;
    }
    let wanted = |v: u32| {
        let material = mesh.normals[v as usize][3];
        if material > 1.5 { ground } else { colliders }
    };
    let indices: Vec<u32> = mesh.indices.chunks_exact(3).filter(|t| wanted(t[0])).flatten().copied().collect();
    mesh.indices = indices;
}

/// The mesh in vertex and index buffers, or `None` when it has no triangles.
fn upload(device: &wgpu::Device, mesh: &HostMesh) -> Option<Scenery> {
    if mesh.indices.is_empty() {
        return None;
    }
    let buffer = |label, contents: &[u8], usage| {
        device.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some(label), contents, usage })
    };
    Some((
        buffer("hooke-render scenery positions", bytemuck::cast_slice(&mesh.positions), wgpu::BufferUsages::VERTEX),
        buffer("hooke-render scenery normals", bytemuck::cast_slice(&mesh.normals), wgpu::BufferUsages::VERTEX),
        buffer("hooke-render scenery indices", bytemuck::cast_slice(&mesh.indices), wgpu::BufferUsages::INDEX),
        mesh.indices.len() as u32,
    ))
}
