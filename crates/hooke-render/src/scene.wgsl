// The scene shader of hooke-render (renderer.rs): cloth, colliders and ground in one lit
// triangle pipeline, ropes in a line pipeline. Vertices come from two Float32x4 vertex buffers
// — position (w ignored: the solver keeps the inverse mass there) and normal, whose w selects
// the material: 0 cloth (the solver's normal buffer has w = 0), 1 collider, 2 ground.

struct View {
    view_projection: mat4x4<f32>,
    // Unit direction towards the light (xyz).
    light: vec4<f32>,
    // Camera position (xyz, m).
    eye: vec4<f32>,
    cloth_front: vec4<f32>,
    cloth_back: vec4<f32>,
    collider: vec4<f32>,
    ground: vec4<f32>,
    grid_line: vec4<f32>,
    rope: vec4<f32>,
    // x: grid spacing (m).
    grid: vec4<f32>,
}

@group(0) @binding(0) var<uniform> view: View;

struct Varying {
    @builtin(position) clip: vec4<f32>,
    @location(0) world: vec3<f32>,
    @location(1) normal: vec3<f32>,
    @location(2) @interpolate(flat) material: u32,
}

@vertex
fn vs(@location(0) position: vec4<f32>, @location(1) normal: vec4<f32>) -> Varying {
    var out: Varying;
    out.clip = view.view_projection * vec4<f32>(position.xyz, 1.0);
    out.world = position.xyz;
    out.normal = normal.xyz;
    out.material = u32(normal.w + 0.5);
    return out;
}

// Grid lines every `view.grid.x` metres in the plane's two axes across its normal: 1 on a
// line, 0 between, antialiased over a pixel.
fn grid_line(world: vec3<f32>, n: vec3<f32>) -> f32 {
    let a = abs(n);
    var uv = world.xz;
    if a.x >= a.y && a.x >= a.z {
        uv = world.yz;
    } else if a.z >= a.y {
        uv = world.xy;
    }
    let g = uv / view.grid.x;
    let w = max(fwidth(g), vec2<f32>(1e-6));
    let d = abs(fract(g - 0.5) - 0.5) / w;
    // Lines fade out where cells shrink below about 4 pixels (no moiré in the distance).
    let fade = clamp(1.0 - 4.0 * max(w.x, w.y), 0.0, 1.0);
    return (1.0 - clamp(min(d.x, d.y), 0.0, 1.0)) * fade;
}

@fragment
fn fs(v: Varying, @builtin(front_facing) front: bool) -> @location(0) vec4<f32> {
    let length2 = dot(v.normal, v.normal);
    var n = vec3<f32>(0.0, 1.0, 0.0);
    if length2 > 0.0 {
        n = v.normal * inverseSqrt(length2);
    }
    var base = view.collider.rgb;
    if v.material == 0u {
        // Two-sided: the back of the cloth is lit from its own side, in its own colour.
        base = view.cloth_front.rgb;
        if !front {
            n = -n;
            base = view.cloth_back.rgb;
        }
    } else if v.material == 2u {
        base = mix(view.ground.rgb, view.grid_line.rgb, grid_line(v.world, n));
    }
    let to_eye = normalize(view.eye.xyz - v.world);
    let diffuse = max(dot(n, view.light.xyz), 0.0);
    let half_way = normalize(view.light.xyz + to_eye);
    let specular = 0.15 * pow(max(dot(n, half_way), 0.0), 32.0) * f32(diffuse > 0.0);
    return vec4<f32>(base * (0.25 + 0.75 * diffuse) + vec3<f32>(specular), 1.0);
}

// Overlay lines (constraints shown by a viewer), drawn over everything: the particles' own
// positions, in pairs picked by the index buffer; one linear colour per draw.
@group(1) @binding(0) var<uniform> overlay_colour: vec4<f32>;

@vertex
fn vs_overlay(@location(0) position: vec4<f32>) -> @builtin(position) vec4<f32> {
    return view.view_projection * vec4<f32>(position.xyz, 1.0);
}

@fragment
fn fs_overlay() -> @location(0) vec4<f32> {
    return vec4<f32>(overlay_colour.rgb, 1.0);
}

@vertex
fn vs_line(@location(0) position: vec4<f32>) -> @builtin(position) vec4<f32> {
    return view.view_projection * vec4<f32>(position.xyz, 1.0);
}

@fragment
fn fs_line() -> @location(0) vec4<f32> {
    return vec4<f32>(view.rope.rgb, 1.0);
}
