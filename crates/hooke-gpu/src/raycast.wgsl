// Picking: the nearest triangle a ray hits (hooke's `picking::pick`, the same operations in
// the same order). Dispatched by raycast.rs on mouse-down only, never per frame.
//
// nearest: each triangle's Möller–Trumbore hit distance t ≥ 0; atomicMin of its bits into
//   hit[0] (non-negative floats order as their bits).
// which: each triangle whose t equals the minimum writes triangle·4 + corner with atomicMin
//   into hit[1] (the lowest triangle wins, as on the CPU); the corner is the one of largest
//   barycentric weight.

@group(0) @binding(0) var<storage, read> position: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> triangles: array<u32>;
// origin (xyz), direction (xyz).
@group(0) @binding(2) var<storage, read> ray: array<vec4<f32>>;
// [distance bits, triangle·4 + corner], reset to u32::MAX before a cast.
@group(0) @binding(3) var<storage, read_write> hit: array<atomic<u32>>;

// (t, u, v) of the hit, or t = −1 for a miss (hooke's `ray_triangle`).
fn ray_triangle(t: u32) -> vec3<f32> {
    let a = position[triangles[3u * t]].xyz;
    let b = position[triangles[3u * t + 1u]].xyz;
    let c = position[triangles[3u * t + 2u]].xyz;
    let origin = ray[0].xyz;
    let direction = ray[1].xyz;
    let miss = vec3<f32>(-1.0, 0.0, 0.0);
    let e1 = b - a;
    let e2 = c - a;
    let p = cross3(direction, e2);
    let det = dot3(e1, p);
    if det == 0.0 || !finite1(det) {
        return miss;
    }
    let s = origin - a;
    let u = dot3(s, p) / det;
    if !(u >= 0.0 && u <= 1.0) {
        return miss;
    }
    let q = cross3(s, e1);
    let v = dot3(direction, q) / det;
    if v < 0.0 || u + v > 1.0 {
        return miss;
    }
    let d = dot3(e2, q) / det;
    if !(d >= 0.0) {
        return miss;
    }
    return vec3<f32>(d, u, v);
}

@compute @workgroup_size(64)
fn nearest(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = thread_index(gid, nwg);
    if t >= P.triangle_count {
        return;
    }
    let h = ray_triangle(t);
    if h.x >= 0.0 {
        atomicMin(&hit[0], bitcast<u32>(h.x));
    }
}

@compute @workgroup_size(64)
fn which(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = thread_index(gid, nwg);
    if t >= P.triangle_count {
        return;
    }
    let h = ray_triangle(t);
    if h.x >= 0.0 && bitcast<u32>(h.x) == atomicLoad(&hit[0]) {
        let w = 1.0 - h.y - h.z;
        var corner = 2u;
        if w >= h.y && w >= h.z {
            corner = 0u;
        } else if h.y >= h.z {
            corner = 1u;
        }
        atomicMin(&hit[1], 4u * t + corner);
    }
}
