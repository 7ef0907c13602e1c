// Per-vertex normals on the GPU (article §6). Dispatched by normals.rs at the end of a frame.
//
// accumulate: each triangle adds its area-weighted face normal (x₁−x₀)×(x₂−x₀) = 2A·n to its
// three vertices. Float atomics are an optional feature, so the sum is done in fixed point:
// each component is scaled by `normal_scale`, rounded to i32 and added with atomicAdd, which
// makes the result independent of the order threads arrive in (integer addition is
// associative). Each contribution is clamped so that a vertex sum cannot overflow.
// normalise: n_i = s_i/‖s_i‖ (0 for a particle without triangles), and the accumulator is
// cleared for the next frame.

@group(0) @binding(0) var<storage, read> position: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> triangles: array<u32>;
@group(0) @binding(2) var<storage, read_write> accumulator: array<atomic<i32>>;
@group(0) @binding(3) var<storage, read_write> normal: array<vec4<f32>>;

@compute @workgroup_size(64)
fn accumulate(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = thread_index(gid, nwg);
    if t >= P.triangle_count {
        return;
    }
    let i0 = triangles[3u * t];
    let i1 = triangles[3u * t + 1u];
    let i2 = triangles[3u * t + 2u];
    let x0 = position[i0].xyz;
    let c = cross3(position[i1].xyz - x0, position[i2].xyz - x0);
    let lim = vec3<f32>(P.normal_clamp);
    // A NaN position gives a NaN normal; clamp turns it into a bounded (meaningless) value
    // rather than undefined behaviour of the conversion; the health check reports the NaN.
    let q = vec3<i32>(round(clamp(c * P.normal_scale, -lim, lim)));
    for (var k = 0u; k < 3u; k++) {
        let v = triangles[3u * t + k];
        atomicAdd(&accumulator[3u * v], q.x);
        atomicAdd(&accumulator[3u * v + 1u], q.y);
        atomicAdd(&accumulator[3u * v + 2u], q.z);
    }
}

@compute @workgroup_size(64)
fn normalise(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = thread_index(gid, nwg);
    if i >= P.particle_count {
        return;
    }
    let s = vec3<f32>(
        f32(atomicLoad(&accumulator[3u * i])),
        f32(atomicLoad(&accumulator[3u * i + 1u])),
        f32(atomicLoad(&accumulator[3u * i + 2u])),
    );
    atomicStore(&accumulator[3u * i], 0);
    atomicStore(&accumulator[3u * i + 1u], 0);
    atomicStore(&accumulator[3u * i + 2u], 0);
    let len2 = dot3(s, s);
    var n = vec3<f32>(0.0);
    if len2 > 0.0 {
        n = s * inverseSqrt(len2);
    }
    normal[i] = vec4<f32>(n, 0.0);
}
