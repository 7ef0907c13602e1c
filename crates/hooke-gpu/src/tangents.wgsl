// Per-vertex UV tangents on the GPU. Dispatched by tangents.rs after the normals.
//
// accumulate: each triangle adds A·∂x/∂u — its area times the derivative of position along
// the texture coordinate u, ∂x/∂u = (t₂e₁ − t₁e₂)/r with e₁,₂ the edges from vertex 0,
// (s₁,₂, t₁,₂) their UV differences and r = s₁t₂ − s₂t₁ (Lengyel 2001) — to its three vertices,
// in fixed point with atomicAdd as in normals.wgsl. Triangles with a (nearly) zero UV area are
// skipped. finish: Gram–Schmidt against the vertex normal, t ← t − n(n·t), normalised (0 when
// nothing is left), and the accumulator is cleared for the next frame.

@group(0) @binding(0) var<storage, read> position: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> triangles: array<u32>;
@group(0) @binding(2) var<storage, read> uv: array<vec2<f32>>;
@group(0) @binding(3) var<storage, read_write> accumulator: array<atomic<i32>>;
@group(0) @binding(4) var<storage, read> normal: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> tangent: array<vec4<f32>>;

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
    let e1 = position[i1].xyz - x0;
    let e2 = position[i2].xyz - x0;
    let d1 = uv[i1] - uv[i0];
    let d2 = uv[i2] - uv[i0];
    let r = d1.x * d2.y - d2.x * d1.y;
    if abs(r) <= 1e-12 * ((abs(d1.x) + abs(d1.y)) * (abs(d2.x) + abs(d2.y))) {
        return;
    }
    let c = cross3(e1, e2);
    let area = 0.5 * sqrt(dot3(c, c));
    let dxdu = (e1 * d2.y - e2 * d1.y) * (area / r);
    let lim = vec3<f32>(P.tangent_clamp);
    let q = vec3<i32>(round(clamp(dxdu * P.tangent_scale, -lim, lim)));
    for (var k = 0u; k < 3u; k++) {
        let v = triangles[3u * t + k];
        atomicAdd(&accumulator[3u * v], q.x);
        atomicAdd(&accumulator[3u * v + 1u], q.y);
        atomicAdd(&accumulator[3u * v + 2u], q.z);
    }
}

@compute @workgroup_size(64)
fn finish(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
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
    let n = normal[i].xyz;
    let t = s - n * dot3(n, s);
    let len2 = dot3(t, t);
    var out = vec3<f32>(0.0);
    if len2 > 0.0 {
        out = t * inverseSqrt(len2);
    }
    tangent[i] = vec4<f32>(out, 0.0);
}
