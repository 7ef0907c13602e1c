// The direct rope solver: one thread per rope assembles and solves its banded system
// (J W Jᵀ + D) Δλ = b by LDLᵀ and applies Δλ. Dispatched by rope_solver.rs once per iteration;
// hooke's `solver/xpbd/direct_rope.rs` derives it, and every operation here is the CPU's, in
// its order, so that both round alike.

@group(0) @binding(0) var<storage, read> position: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> displacement: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> lambda: array<f32>;
@group(0) @binding(3) var<storage, read_write> lambda_joint: array<f32>;
// The ropes' layout (`rope_solver.rs`, `topology`): word 0 the number of ropes; then 8 words
// per rope (rows start, row count, band width, first particle, particle count, touch offsets
// start, scratch start, 0); the rows, ROW words each (kind 0 distance / 1 joint, its index,
// particles a, b, c, then as f32 bits: rest length, compliance (stretch), compliance in
// compression, damping time); per rope its particles' touch offsets (absolute, particle count
// + 1 each); the touches, 2 words each (row within the rope, slot).
@group(0) @binding(4) var<storage, read> topology: array<u32>;
// Per rope from its scratch start: gradients (9 per row), the band (b per row), the diagonal
// and the right-hand side (1 per row each).
@group(0) @binding(5) var<storage, read_write> scratch: array<f32>;
// The largest T(wᵢ + wⱼ)/L (1/s²) of a segment in tension this frame, T = −λ/h², as f32 bits
// (non-negative, so ordered as u32): the tension limit's (hooke's `stability`), cleared by the
// host at the start of each frame.
@group(0) @binding(6) var<storage, read_write> tension: array<atomic<u32>>;
// Only `first` is used: set on the first iteration of a substep, where λ starts from 0.
@group(2) @binding(0) var<uniform> colour: Colour;

const ROW: u32 = 12u;

fn grad_at(base: u32, row: u32, slot: u32) -> vec3<f32> {
    let g = base + 9u * row + 3u * slot;
    return vec3<f32>(scratch[g], scratch[g + 1u], scratch[g + 2u]);
}

fn set_grad(base: u32, row: u32, slot: u32, v: vec3<f32>) {
    let g = base + 9u * row + 3u * slot;
    scratch[g] = v.x;
    scratch[g + 1u] = v.y;
    scratch[g + 2u] = v.z;
}

// C and gradients of one row, as `direct_rope.rs`'s `evaluate`.
struct RowEval {
    ok: bool,
    value: f32,
    g0: vec3<f32>,
    g1: vec3<f32>,
    g2: vec3<f32>,
}

// `DistanceConstraint::evaluate` with x₁ relative to x₀ (so x₀ − x₁ = 0 − x₁).
fn distance_eval(x1: vec3<f32>, rest: f32) -> RowEval {
    var out = RowEval(false, 0.0, vec3<f32>(0.0), vec3<f32>(0.0), vec3<f32>(0.0));
    let d = vec3<f32>(0.0) - x1;
    let len = sqrt(dot3(d, d));
    if !(len >= 1e-9f) {
        return out;
    }
    let n = d / len;
    out.ok = true;
    out.value = len - rest;
    out.g0 = n;
    out.g1 = -n;
    return out;
}

fn eval_at(kind: u32, rest: f32, x1: vec3<f32>, x2: vec3<f32>) -> RowEval {
    if kind == 0u {
        return distance_eval(x1, rest);
    }
    let a = joint_angle(x1, x2);
    return RowEval(a.ok, a.value, a.g0, a.g1, a.g2);
}

// C now, with the gradients at the start of the substep unless the row turned by more than
// 25° (or was degenerate then).
fn row_eval(kind: u32, rest: f32, s1: vec3<f32>, s2: vec3<f32>, x1: vec3<f32>, x2: vec3<f32>) -> RowEval {
    var now = eval_at(kind, rest, x1, x2);
    if !now.ok {
        return now;
    }
    let start = eval_at(kind, rest, s1, s2);
    if !start.ok {
        return now;
    }
    var dt = 0.0f;
    var ss = 0.0f;
    var nn = 0.0f;
    dt += dot3(start.g0, now.g0);
    ss += dot3(start.g0, start.g0);
    nn += dot3(now.g0, now.g0);
    dt += dot3(start.g1, now.g1);
    ss += dot3(start.g1, start.g1);
    nn += dot3(now.g1, now.g1);
    if kind == 1u {
        dt += dot3(start.g2, now.g2);
        ss += dot3(start.g2, start.g2);
        nn += dot3(now.g2, now.g2);
    }
    if dt > 0.0 && dt * dt >= COS2_TURN * (ss * nn) {
        now.g0 = start.g0;
        now.g1 = start.g1;
        now.g2 = start.g2;
    }
    return now;
}

@compute @workgroup_size(64)
fn solve(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let rope = thread_index(gid, nwg);
    if rope >= topology[0] {
        return;
    }
    let h = 1u + 8u * rope;
    let rows = topology[h];
    let m = topology[h + 1u];
    let b = topology[h + 2u];
    let first = topology[h + 3u];
    let n = topology[h + 4u];
    let offsets = topology[h + 5u];
    let base = topology[h + 6u];
    let band = base + 9u * m;
    let diag = band + b * m;
    let rhs = diag + m;
    // Rows: gradients, D_k and b_k.
    for (var r = 0u; r < m; r++) {
        let w = rows + ROW * r;
        let kind = topology[w];
        let index = topology[w + 1u];
        let pa = topology[w + 2u];
        let pb = topology[w + 3u];
        let pc = topology[w + 4u];
        let rest = bitcast<f32>(topology[w + 5u]);
        var lam = 0.0f;
        if colour.first == 0u {
            if kind == 0u {
                lam = lambda[index];
            } else {
                lam = lambda_joint[index];
            }
        }
        let qa = position[pa];
        let qb = position[pb];
        let qc = position[pc];
        let da = displacement[pa].xyz;
        let db = displacement[pb].xyz;
        let dc = displacement[pc].xyz;
        let s1 = qb.xyz - qa.xyz;
        let s2 = qc.xyz - qa.xyz;
        let e = row_eval(kind, rest, s1, s2, s1 + (db - da), s2 + (dc - da));
        if !e.ok {
            set_grad(base, r, 0u, vec3<f32>(0.0));
            set_grad(base, r, 1u, vec3<f32>(0.0));
            set_grad(base, r, 2u, vec3<f32>(0.0));
            scratch[diag + r] = 0.0;
            scratch[rhs + r] = 0.0;
            continue;
        }
        set_grad(base, r, 0u, e.g0);
        set_grad(base, r, 1u, e.g1);
        set_grad(base, r, 2u, e.g2);
        if P.method == 1u {
            scratch[diag + r] = 0.0;
            scratch[rhs + r] = -(P.pbd_stiffness * e.value);
            continue;
        }
        var side = e.value;
        if lam != 0.0 {
            side = -lam;
        }
        var compliance = bitcast<f32>(topology[w + 6u]);
        if kind == 0u && !(side >= 0.0) {
            compliance = bitcast<f32>(topology[w + 7u]);
        }
        let alpha = compliance * P.inv_h2;
        var gamma = 0.0f;
        if alpha > 0.0 {
            gamma = bitcast<f32>(topology[w + 8u]) * P.inv_h;
        }
        var rate = 0.0f;
        rate += dot3(e.g0, da);
        rate += dot3(e.g1, db);
        if kind == 1u {
            rate += dot3(e.g2, dc);
        }
        let scale = 1.0 / (1.0 + gamma);
        scratch[diag + r] = alpha * scale;
        scratch[rhs + r] = (-e.value - alpha * lam - gamma * rate) * scale;
    }
    // D + J W Jᵀ: the lower band (entry (k, l) at band + k·b + (l + b − k)) and the diagonal.
    for (var k = 0u; k < b * m; k++) {
        scratch[band + k] = 0.0;
    }
    for (var p = 0u; p < n; p++) {
        let w = position[first + p].w;
        if w == 0.0 {
            continue;
        }
        let t0 = topology[offsets + p];
        let t1 = topology[offsets + p + 1u];
        for (var a = t0; a < t1; a++) {
            let ra = topology[2u * a];
            let ga = grad_at(base, ra, topology[2u * a + 1u]);
            scratch[diag + ra] += w * dot3(ga, ga);
            for (var c = t0; c < a; c++) {
                let rb = topology[2u * c];
                let gb = grad_at(base, rb, topology[2u * c + 1u]);
                var hi = rb;
                var lo = ra;
                if ra > rb {
                    hi = ra;
                    lo = rb;
                }
                scratch[band + hi * b + (lo + b - hi)] += w * dot3(ga, gb);
            }
        }
    }
    // LDLᵀ of the band, in place.
    for (var k = 0u; k < m; k++) {
        var lo = 0u;
        if k > b {
            lo = k - b;
        }
        for (var j = lo; j < k; j++) {
            var v = scratch[band + k * b + (j + b - k)];
            for (var i = lo; i < j; i++) {
                v -= scratch[band + k * b + (i + b - k)] * scratch[band + j * b + (i + b - j)] * scratch[diag + i];
            }
            var l = 0.0f;
            if scratch[diag + j] > 0.0 {
                l = v / scratch[diag + j];
            }
            scratch[band + k * b + (j + b - k)] = l;
            scratch[diag + k] -= l * l * scratch[diag + j];
        }
        if !(scratch[diag + k] > 1e-30f) {
            scratch[diag + k] = 0.0;
            scratch[rhs + k] = 0.0;
        }
    }
    // Forward, diagonal and back substitution.
    for (var k = 0u; k < m; k++) {
        var v = scratch[rhs + k];
        var lo = 0u;
        if k > b {
            lo = k - b;
        }
        for (var j = lo; j < k; j++) {
            v -= scratch[band + k * b + (j + b - k)] * scratch[rhs + j];
        }
        scratch[rhs + k] = v;
    }
    for (var k = 0u; k < m; k++) {
        if scratch[diag + k] > 0.0 {
            scratch[rhs + k] = scratch[rhs + k] / scratch[diag + k];
        } else {
            scratch[rhs + k] = 0.0;
        }
    }
    for (var kk = 0u; kk < m; kk++) {
        let k = m - 1u - kk;
        var v = scratch[rhs + k];
        let end = min(k + b + 1u, m);
        for (var j = k + 1u; j < end; j++) {
            v -= scratch[band + j * b + (k + b - j)] * scratch[rhs + j];
        }
        scratch[rhs + k] = v;
    }
    // λ += Δλ (from 0 on the first iteration), d += W Jᵀ Δλ; the largest T(wᵢ + wⱼ)/L of a
    // segment in tension (`direct_rope.rs`: −λ/h² (wᵢ + wⱼ)/L, in its order).
    if P.method != 1u {
        var peak = 0.0f;
        for (var r = 0u; r < m; r++) {
            let w = rows + ROW * r;
            let index = topology[w + 1u];
            if topology[w] == 0u {
                var lam = 0.0f;
                if colour.first == 0u {
                    lam = lambda[index];
                }
                lam = lam + scratch[rhs + r];
                lambda[index] = lam;
                if lam < 0.0 {
                    let wsum = position[topology[w + 2u]].w + position[topology[w + 3u]].w;
                    let rate = -lam * P.inv_h2 * wsum / bitcast<f32>(topology[w + 5u]);
                    if rate > peak {
                        peak = rate;
                    }
                }
            } else {
                var lam = 0.0f;
                if colour.first == 0u {
                    lam = lambda_joint[index];
                }
                lambda_joint[index] = lam + scratch[rhs + r];
            }
        }
        atomicMax(&tension[0], bitcast<u32>(peak));
    }
    for (var p = 0u; p < n; p++) {
        let w = position[first + p].w;
        if w == 0.0 {
            continue;
        }
        var step = vec3<f32>(0.0);
        for (var a = topology[offsets + p]; a < topology[offsets + p + 1u]; a++) {
            let r = topology[2u * a];
            step += grad_at(base, r, topology[2u * a + 1u]) * scratch[rhs + r];
        }
        let d = displacement[first + p].xyz;
        displacement[first + p] = vec4<f32>(d + step * w, 0.0);
    }
}
