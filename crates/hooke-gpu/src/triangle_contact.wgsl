// Contact of cloth triangles with colliders through virtual particles (hooke's
// `collision/triangle_contact.rs`, issue #10 item 4), dispatched by triangle_contact.rs after
// collide.wgsl in every substep: `push` moves each listed triangle's centroid and edge
// midpoints out of the colliders (with friction) and stores the corrections; `gather` gives
// each particle the mean of its share of the corrections around it (`triangle_share.wgsl`).
// Same operations, in the same order, as the CPU. Where every triangle of a model of one
// world takes part, `push_all` reads the corners from the model's own triangles (bound at
// `contact`'s place) and `triangle_gather.wgsl` gathers through the model's own lists, so
// nothing is made for them on the host.

@group(0) @binding(0) var<storage, read> position: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> displacement: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> radius: array<f32>;
// [0] slots S, then per slot its triangle's corners and the colliders of its world (first,
// end: 5 words per slot), then the per-particle CSR offsets (particle count + 1) and entries
// (slot << 2 | corner). For `push_all`: the model's triangles, three corners each.
@group(0) @binding(5) var<storage, read> contact: array<u32>;
// The corrections, 4 per slot: centroid, then the midpoints of edges 0–1, 1–2, 2–0.
@group(0) @binding(7) var<storage, read_write> delta: array<vec4<f32>>;

// Words per slot in `contact`.
const SLOT_WORDS: u32 = 5u;

// hooke's `project_point`: the correction of a virtual particle of radius r, at x0 at the
// start of the substep and moved by d since, against the colliders [within.x, within.y).
fn project_point(x0: vec3<f32>, d: vec3<f32>, r: f32, within: vec2<u32>) -> vec3<f32> {
    var moved = d;
    for (var k = within.x; k < within.y; k++) {
        let m = placements[P.substep * P.collider_count + k];
        let q = x0 + moved;
        if out_of_reach(m, q, q, r) {
            continue;
        }
        let c = colliders[k];
        let rotated = m.translation_end.w != 0.0;
        let sd = distance_at(c, m, rotated, q);
        let n = sd.xyz;
        let depth = r - sd.w;
        if depth > 0.0 {
            moved = push_out(c, m, rotated, x0, moved, n, depth);
        }
    }
    return moved - d;
}

// hooke's `clear_of_colliders`: whether no virtual particle of the triangle with corners at
// x0, x1, x2 (current positions) and largest corner radius r can touch a collider — each
// collider within reach is farther from the centroid than r plus its growth bound times the
// largest distance from it to an edge midpoint, with rounding to spare. Then the four projections would find nothing.
fn clear_of_colliders(x0: vec3<f32>, x1: vec3<f32>, x2: vec3<f32>, r: f32, within: vec2<u32>) -> bool {
    let centroid = (x0 + x1 + x2) / 3.0;
    let m01 = (x0 + x1) * 0.5 - centroid;
    let m12 = (x1 + x2) * 0.5 - centroid;
    let m20 = (x2 + x0) * 0.5 - centroid;
    let reach = sqrt(max(dot3(m01, m01), max(dot3(m12, m12), dot3(m20, m20))));
    let big = max(abs(x0), max(abs(x1), abs(x2)));
    let spare = 1e-5 + 1e-6 * max(big.x, max(big.y, big.z));
    let lo = min(x0, min(x1, x2));
    let hi = max(x0, max(x1, x2));
    for (var k = within.x; k < within.y; k++) {
        let m = placements[P.substep * P.collider_count + k];
        if out_of_reach(m, lo, hi, r) {
            continue;
        }
        let c = colliders[k];
        if distance_at(c, m, m.translation_end.w != 0.0, centroid).w <= r + growth_bound(c) * reach + spare {
            return false;
        }
    }
    return true;
}

// The corrections of the virtual particles of the triangle in `slot`, with corners i, j, k,
// against the colliders [within.x, within.y).
fn push_slot(slot: u32, i: u32, j: u32, k: u32, within: vec2<u32>) {
    let a = position[i].xyz;
    let b = position[j].xyz;
    let c = position[k].xyz;
    let da = displacement[i].xyz;
    let db = displacement[j].xyz;
    let dc = displacement[k].xyz;
    let ra = radius[i];
    let rb = radius[j];
    let rc = radius[k];
    if clear_of_colliders(a + da, b + db, c + dc, max(ra, max(rb, rc)), within) {
        for (var q = 0u; q < 4u; q++) {
            delta[4u * slot + q] = vec4<f32>(0.0);
        }
        return;
    }
    delta[4u * slot] = vec4<f32>(project_point((a + b + c) / 3.0, (da + db + dc) / 3.0, (ra + rb + rc) / 3.0, within), 0.0);
    delta[4u * slot + 1u] = vec4<f32>(project_point((a + b) * 0.5, (da + db) * 0.5, (ra + rb) * 0.5, within), 0.0);
    delta[4u * slot + 2u] = vec4<f32>(project_point((b + c) * 0.5, (db + dc) * 0.5, (rb + rc) * 0.5, within), 0.0);
    delta[4u * slot + 3u] = vec4<f32>(project_point((c + a) * 0.5, (dc + da) * 0.5, (rc + ra) * 0.5, within), 0.0);
}

@compute @workgroup_size(64)
fn push(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let slot = thread_index(gid, nwg);
    if slot >= contact[0] {
        return;
    }
    let at = 1u + SLOT_WORDS * slot;
    push_slot(slot, contact[at], contact[at + 1u], contact[at + 2u], vec2<u32>(contact[at + 3u], contact[at + 4u]));
}

// Every triangle of a model of one world, in its slot: `contact` holds the model's triangles.
@compute @workgroup_size(64)
fn push_all(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let slot = thread_index(gid, nwg);
    if slot >= P.triangle_count {
        return;
    }
    let at = 3u * slot;
    push_slot(slot, contact[at], contact[at + 1u], contact[at + 2u], vec2<u32>(0u, P.collider_count));
}

@compute @workgroup_size(64)
fn gather(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let p = thread_index(gid, nwg);
    if !takes_share(p) {
        return;
    }
    let slots = contact[0];
    let offsets = 1u + SLOT_WORDS * slots;
    let entries = offsets + P.particle_count + 1u;
    var share = Share(vec3<f32>(0.0), 0u);
    for (var e = contact[offsets + p]; e < contact[offsets + p + 1u]; e++) {
        let entry = contact[entries + e];
        let slot = entry >> 2u;
        let at = 1u + SLOT_WORDS * slot;
        share = add_share(share, slot, entry & 3u, vec3<u32>(contact[at], contact[at + 1u], contact[at + 2u]));
    }
    apply_share(p, share);
}
