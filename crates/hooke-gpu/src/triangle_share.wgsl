// A particle's share of the corrections of the triangles around it (hooke's
// `collision/triangle_contact.rs`, `gather`), for `triangle_contact.wgsl`'s and
// `triangle_gather.wgsl`'s gathers: each touching virtual particle's correction, weighted by
// the particle's inverse mass against those of the points it lies between, and the mean of
// those taken. The module binds `position`, `displacement` and `delta`.

struct Share {
    sum: vec3<f32>,
    count: u32,
}

fn touches(v: vec3<f32>) -> bool {
    return any(v != vec3<f32>(0.0));
}

// `share` with the corrections of the triangle in `slot` (corners `corners`) at its `corner`.
fn add_share(share: Share, slot: u32, corner: u32, corners: vec3<u32>) -> Share {
    var out = share;
    let wc = vec3<f32>(position[corners.x].w, position[corners.y].w, position[corners.z].w);
    let d0 = delta[4u * slot].xyz;
    if touches(d0) {
        let s = (wc.x + wc.y) + wc.z;
        out.sum = out.sum + opaque3(d0 * (3.0 * wc[corner] / s));
        out.count += 1u;
    }
    // The midpoints of the two edges through this corner.
    for (var h = 0u; h < 2u; h++) {
        let q = select((corner + 2u) % 3u, corner, h == 0u);
        let dq = delta[4u * slot + 1u + q].xyz;
        if touches(dq) {
            let s = wc[q] + wc[(q + 1u) % 3u];
            out.sum = out.sum + opaque3(dq * (2.0 * wc[corner] / s));
            out.count += 1u;
        }
    }
    return out;
}

// Whether particle p (a gather's thread) takes a share: it exists and is free (w > 0).
fn takes_share(p: u32) -> bool {
    return p < P.particle_count && position[p].w > 0.0;
}

// Particle p moved by the mean of its share, if any.
fn apply_share(p: u32, share: Share) {
    if share.count > 0u {
        let d = displacement[p];
        displacement[p] = vec4<f32>(d.xyz + share.sum / f32(share.count), d.w);
    }
}
