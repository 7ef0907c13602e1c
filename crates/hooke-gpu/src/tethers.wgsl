// Long-range attachments (tethers), one thread per tethered particle: hooke's
// `tethers::project`, operation for operation. Dispatched by tethers.rs once per iteration,
// after the constraint sets. Each thread writes only its own particle and reads pinned ones.

@group(0) @binding(0) var<storage, read> position: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> displacement: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> tethers: array<Tether>;
// `count`: the number of tethered particles.
@group(2) @binding(0) var<uniform> colour: Colour;

// One tether to pin q.
fn pull(xp: vec3<f32>, dp: vec3<f32>, q: u32, length: f32) -> vec3<f32> {
    return tether_pull(xp - position[q].xyz, dp, displacement[q].xyz, length);
}

@compute @workgroup_size(64)
fn solve(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = thread_index(gid, nwg);
    if k >= colour.count {
        return;
    }
    let t = tethers[k];
    let xp = position[t.particle].xyz;
    var dp = displacement[t.particle].xyz;
    if t.count > 0u {
        dp = pull(xp, dp, t.pin0, t.length0);
    }
    if t.count > 1u {
        dp = pull(xp, dp, t.pin1, t.length1);
    }
    displacement[t.particle] = vec4<f32>(dp, 0.0);
}
