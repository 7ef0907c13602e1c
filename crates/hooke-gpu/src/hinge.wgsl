// The arithmetic of one dihedral-bending projection (hooke's `DihedralBending`, projected by the
// shared XPBD update of solver/xpbd/projection.rs), without bindings: included by the sweep of
// device memory (`dihedral.wgsl`) and by the sweep of workgroup memory (`local_sweep.wgsl`).
// Every operation is the CPU's, in its order, so that both round alike.

// A hinge, 28 bytes (`DihedralBending`): the edge x₀x₁, the wings x₂ (triangle x₀x₁x₂) and x₃
// (triangle x₁x₀x₃), the rest angle θ₀ (rad), the compliance α (rad²/J), the damping time τ (s).
struct Hinge {
    p0: u32,
    p1: u32,
    p2: u32,
    p3: u32,
    rest_angle: f32,
    compliance: f32,
    damping: f32,
}

// C = θ − θ₀ wrapped to (−π, π] and its gradients at positions relative to x₀ (`dihedral_angle`
// and `DihedralBending::evaluate`); `ok` is false for a degenerate hinge.
struct Angle4 {
    ok: bool,
    value: f32,
    g0: vec3<f32>,
    g1: vec3<f32>,
    g2: vec3<f32>,
    g3: vec3<f32>,
}

fn hinge_angle(x1: vec3<f32>, x2: vec3<f32>, x3: vec3<f32>, rest: f32) -> Angle4 {
    let e = x1;
    let a = x2;
    let b = x3;
    let n1 = cross3(e, a);
    let n2 = cross3(b, e);
    let l1 = dot3(n1, n1);
    let l2 = dot3(n2, n2);
    let le2 = dot3(e, e);
    var out = Angle4(false, 0.0, vec3<f32>(0.0), vec3<f32>(0.0), vec3<f32>(0.0), vec3<f32>(0.0));
    if !(l1 > 1e-24f && l2 > 1e-24f && le2 > 1e-18f) {
        return out;
    }
    let le = sqrt(le2);
    let inv_le = 1.0 / le;
    let m = cross3(n1, n2);
    let theta = atan2_hooke(dot3(m, e) * inv_le, dot3(n1, n2));
    let g1 = n1 * (1.0 / l1);
    let g2 = n2 * (1.0 / l2);
    let grad2 = g1 * le;
    let grad3 = g2 * le;
    let a1 = dot3(a - e, e) * inv_le;
    let b1 = dot3(b - e, e) * inv_le;
    let a0 = dot3(a, e) * inv_le;
    let b0 = dot3(b, e) * inv_le;
    let grad0 = opaque3(g1 * a1) + opaque3(g2 * b1);
    let grad1 = -opaque3(g1 * a0) - opaque3(g2 * b0);
    var c = theta - rest;
    if c > 3.1415927f {
        c = c - 6.2831855f;
    } else if c <= -3.1415927f {
        c = c + 6.2831855f;
    }
    out.ok = true;
    out.value = c;
    out.g0 = -grad0;
    out.g1 = -grad1;
    out.g2 = -grad2;
    out.g3 = -grad3;
    return out;
}

// One hinge's projection from the start positions q (w = inverse mass) and the displacements d
// of its four particles and its λ so far: Δλ and the gradients to move each particle by
// (d += g w Δλ); `moves` is false for a degenerate or immovable hinge.
struct HingeStep {
    moves: bool,
    delta: f32,
    g0: vec3<f32>,
    g1: vec3<f32>,
    g2: vec3<f32>,
    g3: vec3<f32>,
}

fn hinge_step(
    c: Hinge,
    q0: vec4<f32>,
    q1: vec4<f32>,
    q2: vec4<f32>,
    q3: vec4<f32>,
    d0: vec3<f32>,
    d1: vec3<f32>,
    d2: vec3<f32>,
    d3: vec3<f32>,
    lam: f32,
) -> HingeStep {
    var out = HingeStep(false, 0.0, vec3<f32>(0.0), vec3<f32>(0.0), vec3<f32>(0.0), vec3<f32>(0.0));
    // Relative to x₀: at the start of the substep, and now.
    let s1 = q1.xyz - q0.xyz;
    let s2 = q2.xyz - q0.xyz;
    let s3 = q3.xyz - q0.xyz;
    let now = hinge_angle(s1 + (d1 - d0), s2 + (d2 - d0), s3 + (d3 - d0), c.rest_angle);
    if !now.ok {
        return out;
    }
    // The gradients at the start of the substep unless the hinge turned by more than 25°.
    var g0 = now.g0;
    var g1 = now.g1;
    var g2 = now.g2;
    var g3 = now.g3;
    let start = hinge_angle(s1, s2, s3, c.rest_angle);
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
        dt += dot3(start.g3, now.g3);
        ss += dot3(start.g3, start.g3);
        nn += dot3(now.g3, now.g3);
        if dt > 0.0 && dt * dt >= COS2_TURN * (ss * nn) {
            g0 = start.g0;
            g1 = start.g1;
            g2 = start.g2;
            g3 = start.g3;
        }
    }
    var weight = 0.0f;
    weight += q0.w * dot3(g0, g0);
    weight += q1.w * dot3(g1, g1);
    weight += q2.w * dot3(g2, g2);
    weight += q3.w * dot3(g3, g3);
    if weight == 0.0 {
        return out;
    }
    var rate = 0.0f;
    rate += dot3(g0, d0);
    rate += dot3(g1, d1);
    rate += dot3(g2, d2);
    rate += dot3(g3, d3);
    let delta = xpbd_delta(now.value, weight, rate, lam, c.compliance, c.damping);
    out.moves = true;
    out.delta = delta;
    out.g0 = g0;
    out.g1 = g1;
    out.g2 = g2;
    out.g3 = g3;
    return out;
}
