// Long-range attachments (tethers), one thread per tethered particle: hooke's
// `tethers::project`, operation for operation. Dispatched by tethers.rs once per iteration,
// after the constraint sets. Each thread writes only its own particle and reads pinned ones.

// One particle's tethers, 24 bytes (`hooke::tethers::Tether`).
struct Tether {
    particle: u32,
    count: u32,
    pin0: u32,
    pin1: u32,
    length0: f32,
    length1: f32,
}

@group(0) @binding(0) var<storage, read> position: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> displacement: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> tethers: array<Tether>;
// `count`: the number of tethered particles.
@group(2) @binding(0) var<uniform> colour: Colour;

// One tether: the particle moved back onto the sphere of radius `length` around pin q, along
// the direction at the start of the substep unless the pair turned by more than 25°.
fn pull(xp: vec3<f32>, dp: vec3<f32>, q: u32, length: f32) -> vec3<f32> {
    let start = xp - position[q].xyz;
    let v = start + (dp - displacement[q].xyz);
    let s2 = dot3(start, start);
    let v2 = dot3(v, v);
    let dist = sqrt(v2);
    let excess = dist - length;
    if excess > 0.0 && dist > 0.0 {
        let dt = dot3(start, v);
        var u = v;
        var u2 = v2;
        if s2 > 0.0 && dt > 0.0 && dt * dt >= COS2_TURN * (s2 * v2) {
            u = start;
            u2 = s2;
        }
        return dp - u * (excess / sqrt(u2));
    }
    return dp;
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
