// Collision with analytic colliders and Coulomb friction (article §4.2–4.3, §5.3 "Collision").
// Dispatched by collide.rs, once per substep after the constraint sweeps. The shapes, their
// placements and signed distances are in collider_shapes.wgsl (prepended); the friction rule is
// `coulomb` in common.wgsl.

@group(0) @binding(0) var<storage, read> position: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> displacement: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> radius: array<f32>;
@group(0) @binding(5) var<storage, read_write> health: Health;
@group(0) @binding(7) var<storage, read> worlds: array<vec4<u32>>;

// The first fraction s ∈ [0, 1] of the straight path p0 → p1 at which a particle of radius r
// touches the collider, by sphere tracing; −1 when the path stays clear (hooke's `sweep`).
fn sweep(c: Collider, m: Placement, rotated: bool, p0: vec3<f32>, p1: vec3<f32>, r: f32) -> f32 {
    let path = p1 - p0;
    let length = sqrt(dot3(path, path));
    if length == 0.0 {
        return -1.0;
    }
    let tolerance = max(1e-6, 1e-3 * r);
    let span = growth_bound(c) * length;
    var s = 0.0;
    for (var k = 0u; k < 64u; k++) {
        let gap = distance_at(c, m, rotated, p0 + path * s).w - r;
        if gap <= tolerance {
            return s;
        }
        s = s + gap / span;
        if s >= 1.0 {
            return -1.0;
        }
    }
    // Out of steps (a grazing path): the rest of it sampled at 16 even points, as the CPU.
    let reached = s;
    var clear = s;
    for (var k = 1u; k <= 16u; k++) {
        let t = reached + (1.0 - reached) * (f32(k) / 16.0);
        if distance_at(c, m, rotated, p0 + path * t).w - r <= tolerance {
            return clear;
        }
        clear = t;
    }
    return -1.0;
}

@compute @workgroup_size(64)
fn collide(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = thread_index(gid, nwg);
    if i >= P.particle_count {
        return;
    }
    let x = position[i];
    if x.w <= 0.0 {
        return;
    }
    let x0 = x.xyz;
    var d = displacement[i].xyz;
    let r = radius[i];
    var deepest = 0.0;
    // The colliders of the particle's world.
    var within = vec2<u32>(0u, P.collider_count);
    if P.world_count > 1u {
        within = world_colliders(world_of(i));
    }
    for (var k = within.x; k < within.y; k++) {
        let m = placements[P.substep * P.collider_count + k];
        // Broad phase (hooke's `ColliderBroadPhase`): a collider whose swept box misses the
        // particle's path box cannot touch it; skipping it changes nothing.
        if out_of_reach(m, x0, x0 + d, r) {
            continue;
        }
        let c = colliders[k];
        let rotated = m.translation_end.w != 0.0;
        let p1 = x0 + d;
        var sd = distance_at(c, m, rotated, p1);
        // Tunnelling: started outside, the path entered the solid, and it did not end on the
        // near side — put back at the first contact along the path (hooke's `resolve_particle`).
        let p0 = x0 + surface_at(c, m, rotated, x0);
        let path = p1 - p0;
        let length = sqrt(dot3(path, path));
        let reach = growth_bound(c) * length;
        if (sd.w >= r || dot3(sd.xyz, path) > 0.0) && reach > sd.w {
            let phi0 = distance_at(c, m, rotated, p0).w;
            if phi0 > 0.0 && reach > phi0 + max(sd.w, 0.0) && sweep(c, m, rotated, p0, p1, 0.0) >= 0.0 {
                let first = sweep(c, m, rotated, p0, p1, r);
                if first >= 0.0 {
                    d = (p0 + path * first) - x0;
                    sd = distance_at(c, m, rotated, x0 + d);
                }
            }
        }
        let n = sd.xyz;
        let depth = r - sd.w;
        if depth > 0.0 {
            d = push_out(c, m, rotated, x0, d, n, depth);
            deepest = max(deepest, depth);
        }
    }
    displacement[i] = vec4<f32>(d, 0.0);
    if deepest > 0.0 && P.last_substep != 0u {
        atomicAdd(&health.contacts, 1u);
    }
}
