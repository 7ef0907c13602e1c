// The gather of triangle contact (`triangle_contact.wgsl`) where every triangle of a model of
// one world takes part, dispatched by triangle_contact.rs: each particle takes its share of
// the corrections of the triangles around it through the model's own lists (the triangle
// lists of the normals, in the same order as the CPU's), its corner in each found by its
// index, so nothing is made for the contact on the host.

@group(0) @binding(0) var<storage, read> position: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> displacement: array<vec4<f32>>;
// The model's triangles, three corners each.
@group(0) @binding(2) var<storage, read> triangles: array<u32>;
// The corrections, 4 per triangle, as `triangle_contact.wgsl` writes them.
@group(0) @binding(3) var<storage, read> delta: array<vec4<f32>>;
// The triangles around each particle (CSR: offsets, particle count + 1, and triangles).
@group(0) @binding(4) var<storage, read> around_offsets: array<u32>;
@group(0) @binding(5) var<storage, read> around: array<u32>;

@compute @workgroup_size(64)
fn gather_all(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let p = thread_index(gid, nwg);
    if !takes_share(p) {
        return;
    }
    var share = Share(vec3<f32>(0.0), 0u);
    for (var e = around_offsets[p]; e < around_offsets[p + 1u]; e++) {
        let t = around[e];
        let corners = vec3<u32>(triangles[3u * t], triangles[3u * t + 1u], triangles[3u * t + 2u]);
        // The first corner at p, as the CPU's lists take it.
        var corner = 0u;
        if corners.x != p {
            if corners.y == p {
                corner = 1u;
            } else if corners.z == p {
                corner = 2u;
            }
        }
        share = add_share(share, t, corner, corners);
    }
    apply_share(p, share);
}
