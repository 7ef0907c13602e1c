// Bending of rope joints, one dispatch per colour (hooke's `RopeBending`, projected by the
// shared XPBD update of solver/xpbd/projection.rs). Dispatched by rope_bending.rs. Every
// operation is the CPU's, in its order, so that both round alike.

// A joint, 24 bytes (`RopeBending`): particles x₀, x₁ (the joint), x₂; the compliance α
// (rad²/J) and the damping time τ (s).
struct Joint {
    p0: u32,
    p1: u32,
    p2: u32,
    compliance: f32,
    damping: f32,
    _pad: u32,
}

@group(0) @binding(0) var<storage, read> position: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> displacement: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> constraints: array<Joint>;
@group(0) @binding(3) var<storage, read_write> lambda: array<f32>;
@group(2) @binding(0) var<uniform> colour: Colour;

@compute @workgroup_size(64)
fn solve(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = thread_index(gid, nwg);
    if k >= colour.count {
        return;
    }
    solve_one(colour.start + k);
}

// Projects constraint ci (of the colour being swept; λ from 0 when `colour.first` is set).
fn solve_one(ci: u32) {
    let c = constraints[ci];
    var lam = 0.0f;
    if colour.first == 0u {
        lam = lambda[ci];
    }
    let q0 = position[c.p0];
    let q1 = position[c.p1];
    let q2 = position[c.p2];
    let d0 = displacement[c.p0].xyz;
    let d1 = displacement[c.p1].xyz;
    let d2 = displacement[c.p2].xyz;
    let s1 = q1.xyz - q0.xyz;
    let s2 = q2.xyz - q0.xyz;
    let now = joint_angle(s1 + (d1 - d0), s2 + (d2 - d0));
    if !now.ok {
        lambda[ci] = lam;
        return;
    }
    // The gradients at the start of the substep unless the joint turned by more than 25°.
    var g0 = now.g0;
    var g1 = now.g1;
    var g2 = now.g2;
    let start = joint_angle(s1, s2);
    if start.ok {
        var dt = 0.0f;
        var ss = 0.0f;
        var nn = 0.0f;
        dt += dot3(start.g0, now.g0);
        ss += dot3(start.g0, start.g0);
        nn += dot3(now.g0, now.g0);
        dt += dot3(start.g1, now.g1);
        ss += dot3(start.g1, start.g1);
        nn += dot3(now.g1, now.g1);
        dt += dot3(start.g2, now.g2);
        ss += dot3(start.g2, start.g2);
        nn += dot3(now.g2, now.g2);
        if dt > 0.0 && dt * dt >= COS2_TURN * (ss * nn) {
            g0 = start.g0;
            g1 = start.g1;
            g2 = start.g2;
        }
    }
    var weight = 0.0f;
    weight += q0.w * dot3(g0, g0);
    weight += q1.w * dot3(g1, g1);
    weight += q2.w * dot3(g2, g2);
    if weight == 0.0 {
        lambda[ci] = lam;
        return;
    }
    var rate = 0.0f;
    rate += dot3(g0, d0);
    rate += dot3(g1, d1);
    rate += dot3(g2, d2);
    let delta = xpbd_delta(now.value, weight, rate, lam, c.compliance, c.damping);
    if P.method != 1u {
        lam = lam + delta;
    }
    lambda[ci] = lam;
    displacement[c.p0] = vec4<f32>(d0 + g0 * (q0.w * delta), 0.0);
    displacement[c.p1] = vec4<f32>(d1 + g1 * (q1.w * delta), 0.0);
    displacement[c.p2] = vec4<f32>(d2 + g2 * (q2.w * delta), 0.0);
}
