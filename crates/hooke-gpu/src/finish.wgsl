// End of a substep: v = d/h, x⁰ ← x⁰ + d, d ← 0. Dispatched by finish.rs.

@group(0) @binding(0) var<storage, read_write> position: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> displacement: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> velocity: array<vec4<f32>>;

@compute @workgroup_size(64)
fn finish(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = thread_index(gid, nwg);
    if i >= P.particle_count {
        return;
    }
    let x = position[i];
    let d = displacement[i].xyz;
    velocity[i] = vec4<f32>(d * P.inv_h, 0.0);
    position[i] = vec4<f32>(x.xyz + d, x.w);
    displacement[i] = vec4<f32>(0.0);
}
