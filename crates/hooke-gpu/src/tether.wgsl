// The arithmetic of one long-range attachment (hooke's `tethers::project`, operation for
// operation), without bindings: included by the tether kernel (`tethers.wgsl`) and by the sweep
// of workgroup memory (`local_sweep.wgsl`).

// One particle's tethers, 24 bytes (`hooke::tethers::Tether`).
struct Tether {
    particle: u32,
    count: u32,
    pin0: u32,
    pin1: u32,
    length0: f32,
    length1: f32,
}

// One tether: the particle's displacement dp moved back onto the sphere of radius `length`
// around its pin (displacement dq; `start` = particle − pin at the start of the substep), along
// the direction at the start of the substep unless the pair turned by more than 25°.
fn tether_pull(start: vec3<f32>, dp: vec3<f32>, dq: vec3<f32>, length: f32) -> vec3<f32> {
    let v = start + (dp - dq);
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

