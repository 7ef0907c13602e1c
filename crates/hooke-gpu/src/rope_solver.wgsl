// The direct rope solver: the CPU's solve (`hooke::solver::xpbd::direct_rope`), operation for
// operation and in its order, so that both round alike, split into four kernels that
// `rope_solver.rs` dispatches once per iteration:
//
// - `rows`, a thread per row: the row's gradients, D_k and b_k, and its band row cleared;
// - `assemble`, a thread per row: D + J W Jᵀ's row (the diagonal and the band left of it),
//   summed over the row's particles in increasing order, as the CPU's particle loop does;
// - `band`, a workgroup per rope: the sequential part, LDLᵀ with the forward substitution and
//   then the diagonal and back substitution, over a window of rows, run by one thread on rows
//   the workgroup stages in workgroup memory;
// - `apply`, a thread per row and per particle: λ += Δλ (and the tension limit's peak), and
//   d += W Jᵀ Δλ.
//
// Only `band` loops along a rope. A device whose shaders stop a long loop early (Mesa's
// llvmpipe ends an invocation's loops after 65 535 iterations in all) gets it over windows of
// rows, one dispatch each (`GpuContext::loop_budget`).

@group(0) @binding(0) var<storage, read> position: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> displacement: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> lambda: array<f32>;
@group(0) @binding(3) var<storage, read_write> lambda_joint: array<f32>;
// The ropes' layout (`rope_solver.rs`, `Layout`): 8 header words (ropes, rows, rope particles,
// where the rows start, where the particle records start); per rope ROPE words (first row,
// row count, band width b, where its band starts in `scratch`); the rows, ROW words each (kind
// 0 distance / 1 joint, its index, particles a, b, c, then as f32 bits: rest length,
// compliance (stretch), compliance in compression, damping time; then the row's band start in
// `scratch`, b, 0, its particles in increasing order as (particle record << 2 | slot), three
// words, and their count); the particle records, 4 words each (particle, first touch, end of
// its touches, 0); the touches, 2 words each from word 0 (row, slot), each particle's rows in
// increasing order.
@group(0) @binding(4) var<storage, read> topology: array<u32>;
// Per row (all ropes): gradients (9 each), then D (1 each), then the right-hand side (1 each,
// Δλ after the solve); then each rope's band, b words per row.
@group(0) @binding(5) var<storage, read_write> scratch: array<f32>;
// The largest T(wᵢ + wⱼ)/L (1/s²) of a segment in tension this frame, T = −λ/h², as f32 bits
// (non-negative, so ordered as u32): the tension limit's (hooke's `stability`), cleared by the
// host at the start of each frame.
@group(0) @binding(6) var<storage, read_write> tension: array<atomic<u32>>;
// `rows` and `apply` use `first`: 1 on the first iteration of a substep, where λ starts from 0.
// `band` uses `start` and `count` as its window of rows and `first` as its phase: bit 0 the
// factorisation and forward substitution, bit 1 the diagonal and back substitution.
@group(2) @binding(0) var<uniform> colour: Colour;

const HEADER: u32 = 8u;
const ROPE: u32 = 4u;

const ROW: u32 = 16u;

fn grad_at(row: u32, slot: u32) -> vec3<f32> {
    let g = 9u * row + 3u * slot;
    return vec3<f32>(scratch[g], scratch[g + 1u], scratch[g + 2u]);
}

fn set_grad(row: u32, slot: u32, v: vec3<f32>) {
    let g = 9u * row + 3u * slot;
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

// Where D and the right-hand side start in `scratch`.
fn diag_at() -> u32 {
    return 9u * topology[1];
}

fn rhs_at() -> u32 {
    return 10u * topology[1];
}

// Row g: C, gradients, D_g and b_g (λ from the last iteration, or 0 on the first); its band row
// cleared.
@compute @workgroup_size(64)
fn rows(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let g = thread_index(gid, nwg);
    if g >= topology[1] {
        return;
    }
    let w = topology[3] + ROW * g;
    let diag = diag_at() + g;
    let rhs = rhs_at() + g;
    for (var k = 0u; k < topology[w + 10u]; k++) {
        scratch[topology[w + 9u] + k] = 0.0;
    }
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
        set_grad(g, 0u, vec3<f32>(0.0));
        set_grad(g, 1u, vec3<f32>(0.0));
        set_grad(g, 2u, vec3<f32>(0.0));
        scratch[diag] = 0.0;
        scratch[rhs] = 0.0;
        return;
    }
    set_grad(g, 0u, e.g0);
    set_grad(g, 1u, e.g1);
    set_grad(g, 2u, e.g2);
    if P.method == 1u {
        scratch[diag] = 0.0;
        scratch[rhs] = -(P.pbd_stiffness * e.value);
        return;
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
    // The damping's rate (`ParticleConstraint::damping_rate`): a segment's change of length
    // over the substep, C − (‖x⁰‖ − L₀); a joint's ∇C·d.
    var rate = 0.0f;
    if kind == 0u {
        let d0 = vec3<f32>(0.0) - s1;
        rate = e.value - (sqrt(dot3(d0, d0)) - rest);
    } else {
        rate += dot3(e.g0, da);
        rate += dot3(e.g1, db);
        rate += dot3(e.g2, dc);
    }
    let scale = 1.0 / (1.0 + gamma);
    scratch[diag] = alpha * scale;
    scratch[rhs] = (-e.value - alpha * lam - gamma * rate) * scale;
}

// Row g of D + J W Jᵀ: for each of its particles p in increasing order (skipping pinned ones),
// D_g += w_p ∇_pC_g·∇_pC_g and, for each earlier row l that p touches, (g, l) += w_p ∇_pC_g·∇_pC_l
// — each entry's terms in the order of the CPU's loop over particles.
@compute @workgroup_size(64)
fn assemble(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let g = thread_index(gid, nwg);
    if g >= topology[1] {
        return;
    }
    let w = topology[3] + ROW * g;
    let band = topology[w + 9u];
    let b = topology[w + 10u];
    let diag = diag_at() + g;
    for (var s = 0u; s < topology[w + 15u]; s++) {
        let entry = topology[w + 12u + s];
        let record = topology[4] + 4u * (entry >> 2u);
        let wp = position[topology[record]].w;
        if wp == 0.0 {
            continue;
        }
        let ga = grad_at(g, entry & 3u);
        scratch[diag] += wp * dot3(ga, ga);
        for (var a = topology[record + 1u]; a < topology[record + 2u]; a++) {
            let l = topology[2u * a];
            if l >= g {
                break;
            }
            let gb = grad_at(l, topology[2u * a + 1u]);
            scratch[band + (l + b - g)] += wp * dot3(ga, gb);
        }
    }
}

// The widest band held in registers (`band`'s fast path).
const Q: u32 = 4u;
// Rows staged in workgroup memory at a time, and the workgroup that stages them.
const STAGE: u32 = 512u;
const BAND_THREADS: u32 = 64u;

// A stage of rows of a rope with b ≤ Q: each row's band entries (Q per row, aligned right:
// entry x is column r − Q + x), D and the right-hand side.
var<workgroup> stage_band: array<vec4<f32>, STAGE>;
var<workgroup> stage_diag: array<f32, STAGE>;
var<workgroup> stage_rhs: array<f32, STAGE>;

// Row r's b entries of the band in memory, aligned right in a vec4.
fn band_row(band: u32, b: u32, r: u32) -> vec4<f32> {
    var out = vec4<f32>(0.0);
    for (var t = 0u; t < b; t++) {
        out[Q - b + t] = scratch[band + r * b + t];
    }
    return out;
}

// Rows [c0, c1) into the stage, by the workgroup's threads.
fn stage_in(lid: u32, c0: u32, c1: u32, b: u32, band: u32, diag: u32, rhs: u32) {
    for (var t = lid; t < c1 - c0; t += BAND_THREADS) {
        stage_band[t] = band_row(band, b, c0 + t);
        stage_diag[t] = scratch[diag + c0 + t];
        stage_rhs[t] = scratch[rhs + c0 + t];
    }
}

// The stage back to rows [c0, c1).
fn stage_out(lid: u32, c0: u32, c1: u32, b: u32, band: u32, diag: u32, rhs: u32) {
    for (var t = lid; t < c1 - c0; t += BAND_THREADS) {
        let v = stage_band[t];
        for (var e = 0u; e < b; e++) {
            scratch[band + (c0 + t) * b + e] = v[Q - b + e];
        }
        scratch[diag + c0 + t] = stage_diag[t];
        scratch[rhs + c0 + t] = stage_rhs[t];
    }
}

// The last Q rows' D, y and L rows (slot s is row k − Q + s), or the next Q rows' Δλ and L
// rows (slot s is row k + 1 + s), carried in registers from row to row and stage to stage.
struct Carry {
    d: vec4<f32>,
    x: vec4<f32>,
    l0: vec4<f32>,
    l1: vec4<f32>,
    l2: vec4<f32>,
    l3: vec4<f32>,
}

// Slot s of the carried L rows.
fn set_carried_row(c: ptr<function, Carry>, s: u32, l: vec4<f32>) {
    switch s {
        case 0u: { (*c).l0 = l; }
        case 1u: { (*c).l1 = l; }
        case 2u: { (*c).l2 = l; }
        default: { (*c).l3 = l; }
    }
}

// L_kj = v / D_j, or 0 for a singular row j.
fn pivot(v: f32, d: f32) -> f32 {
    if d > 0.0 {
        return v / d;
    }
    return 0.0;
}

// `band`'s first phase for b ≤ Q over the staged rows [c0, c1) (k from c0): the operations of
// `factor_any`, in its order, with the rows they carry in registers. Written out slot by slot
// (column j = k − Q + slot, from slot Q − min(k, b)): a loop over the slots would index the
// registers dynamically, which puts them in memory.
fn factor_stage(c0: u32, c1: u32, b: u32, carry: ptr<function, Carry>) {
    var dw = (*carry).d;
    var yw = (*carry).x;
    var l0 = (*carry).l0;
    var l1 = (*carry).l1;
    var l2 = (*carry).l2;
    var l3 = (*carry).l3;
    for (var k = c0; k < c1; k++) {
        var row = stage_band[k - c0];
        var dk = stage_diag[k - c0];
        let first = Q - min(k, b);
        if first == 0u {
            row.x = pivot(row.x, dw.x);
            dk -= row.x * row.x * dw.x;
        }
        if first <= 1u {
            var v = row.y;
            if first == 0u {
                v -= row.x * l1.w * dw.x;
            }
            row.y = pivot(v, dw.y);
            dk -= row.y * row.y * dw.y;
        }
        if first <= 2u {
            var v = row.z;
            if first == 0u {
                v -= row.x * l2.z * dw.x;
            }
            if first <= 1u {
                v -= row.y * l2.w * dw.y;
            }
            row.z = pivot(v, dw.z);
            dk -= row.z * row.z * dw.z;
        }
        if first <= 3u {
            var v = row.w;
            if first == 0u {
                v -= row.x * l3.y * dw.x;
            }
            if first <= 1u {
                v -= row.y * l3.z * dw.y;
            }
            if first <= 2u {
                v -= row.z * l3.w * dw.z;
            }
            row.w = pivot(v, dw.w);
            dk -= row.w * row.w * dw.w;
        }
        var y = stage_rhs[k - c0];
        if !(dk > 1e-30f) {
            dk = 0.0;
            y = 0.0;
        }
        if first == 0u {
            y -= row.x * yw.x;
        }
        if first <= 1u {
            y -= row.y * yw.y;
        }
        if first <= 2u {
            y -= row.z * yw.z;
        }
        if first <= 3u {
            y -= row.w * yw.w;
        }
        stage_band[k - c0] = row;
        stage_diag[k - c0] = dk;
        stage_rhs[k - c0] = y;
        dw = vec4<f32>(dw.yzw, dk);
        yw = vec4<f32>(yw.yzw, y);
        l0 = l1;
        l1 = l2;
        l2 = l3;
        l3 = row;
    }
    *carry = Carry(dw, yw, l0, l1, l2, l3);
}

// `band`'s second phase for b ≤ Q over the staged rows [c0, c1), from the last back: the
// operations of `back_any`, in its order, written out slot by slot (row j = k + 1 + slot up to
// k + b and below m; L(j, k) is its entry Q − 1 − slot).
fn back_stage(c0: u32, c1: u32, m: u32, b: u32, carry: ptr<function, Carry>) {
    var xw = (*carry).x;
    var n0 = (*carry).l0;
    var n1 = (*carry).l1;
    var n2 = (*carry).l2;
    var n3 = (*carry).l3;
    for (var kk = c0; kk < c1; kk++) {
        let k = c1 - 1u - (kk - c0);
        var v = pivot(stage_rhs[k - c0], stage_diag[k - c0]);
        if b > 0u && k + 1u < m {
            v -= n0.w * xw.x;
        }
        if b > 1u && k + 2u < m {
            v -= n1.z * xw.y;
        }
        if b > 2u && k + 3u < m {
            v -= n2.y * xw.z;
        }
        if b > 3u && k + 4u < m {
            v -= n3.x * xw.w;
        }
        stage_rhs[k - c0] = v;
        xw = vec4<f32>(v, xw.xyz);
        n3 = n2;
        n2 = n1;
        n1 = n0;
        n0 = stage_band[k - c0];
    }
    *carry = Carry(vec4<f32>(0.0), xw, n0, n1, n2, n3);
}

// `band`'s first phase for any b: row by row the LDLᵀ factorisation (L's strict lower band
// over the band, D over the diagonal) and the forward substitution L y = b.
fn factor_any(start: u32, end: u32, b: u32, band: u32, diag: u32, rhs: u32) {
    for (var k = start; k < end; k++) {
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
        var v = scratch[rhs + k];
        for (var j = lo; j < k; j++) {
            v -= scratch[band + k * b + (j + b - k)] * scratch[rhs + j];
        }
        scratch[rhs + k] = v;
    }
}

// `band`'s second phase for any b: from the window's last row back, the diagonal and back
// substitution Lᵀ Δλ = D⁻¹ y, Δλ left in the right-hand side.
fn back_any(start: u32, end: u32, m: u32, b: u32, band: u32, diag: u32, rhs: u32) {
    for (var kk = start; kk < end; kk++) {
        let k = end - 1u - (kk - start);
        var v = 0.0f;
        if scratch[diag + k] > 0.0 {
            v = scratch[rhs + k] / scratch[diag + k];
        }
        let last = min(k + b + 1u, m);
        for (var j = k + 1u; j < last; j++) {
            v -= scratch[band + j * b + (k + b - j)] * scratch[rhs + j];
        }
        scratch[rhs + k] = v;
    }
}

// One rope's banded solve over the window of rows [start, start + count), a workgroup per
// rope: with phase bit 0 the factorisation and forward substitution, with bit 1 the diagonal
// and back substitution. For bands of width up to Q the workgroup stages STAGE rows at a time
// in workgroup memory, where one thread runs the sequential recurrence, the rows it carries in
// registers: no dependent read of device memory on the sequential path. Wider bands run in
// device memory on one thread.
@compute @workgroup_size(BAND_THREADS)
fn band(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let rope = wid.x + wid.y * nwg.x;
    if rope >= topology[0] {
        return;
    }
    let h = HEADER + ROPE * rope;
    let m = topology[h + 1u];
    let start = min(colour.start, m);
    let end = start + min(colour.count, m - start);
    let b = topology[h + 2u];
    let band = topology[h + 3u];
    let diag = diag_at() + topology[h];
    let rhs = rhs_at() + topology[h];
    let phase = colour.first;
    if b > Q {
        if lid == 0u {
            if (phase & 1u) != 0u {
                factor_any(start, end, b, band, diag, rhs);
            }
            if (phase & 2u) != 0u {
                back_any(start, end, m, b, band, diag, rhs);
            }
        }
        return;
    }
    if (phase & 1u) != 0u {
        var carry = Carry(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
        if lid == 0u {
            for (var s = 0u; s < Q; s++) {
                if start + s >= Q {
                    let r = start + s - Q;
                    carry.d[s] = scratch[diag + r];
                    carry.x[s] = scratch[rhs + r];
                    set_carried_row(&carry, s, band_row(band, b, r));
                }
            }
        }
        for (var c0 = start; c0 < end; c0 += STAGE) {
            let c1 = min(c0 + STAGE, end);
            stage_in(lid, c0, c1, b, band, diag, rhs);
            workgroupBarrier();
            if lid == 0u {
                factor_stage(c0, c1, b, &carry);
            }
            workgroupBarrier();
            stage_out(lid, c0, c1, b, band, diag, rhs);
            workgroupBarrier();
        }
        // The second phase's stages start from the end, so a thread may read back rows
        // another wrote: make this phase's writes to device memory visible to the workgroup.
        storageBarrier();
    }
    if (phase & 2u) != 0u {
        var carry = Carry(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
        if lid == 0u {
            for (var s = 0u; s < Q; s++) {
                if end + s < m {
                    carry.x[s] = scratch[rhs + end + s];
                    set_carried_row(&carry, s, band_row(band, b, end + s));
                }
            }
        }
        // Stages from the window's end back.
        let stages = (end - start + STAGE - 1u) / STAGE;
        for (var q = 0u; q < stages; q++) {
            let c1 = end - q * STAGE;
            let c0 = max(start, c1 - min(STAGE, c1));
            stage_in(lid, c0, c1, b, band, diag, rhs);
            workgroupBarrier();
            if lid == 0u {
                back_stage(c0, c1, m, b, &carry);
            }
            workgroupBarrier();
            stage_out(lid, c0, c1, b, band, diag, rhs);
            workgroupBarrier();
        }
    }
}

// Thread t: for row t, λ += Δλ (from 0 on the first iteration) and the largest T(wᵢ + wⱼ)/L of
// a segment in tension (`direct_rope.rs`: −λ/h² (wᵢ + wⱼ)/L, in its order); for rope particle
// t, d += w Σ ∇C Δλ over its rows in increasing order.
@compute @workgroup_size(64)
fn apply(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = thread_index(gid, nwg);
    let rhs = rhs_at();
    if t < topology[1] && P.method != 1u {
        let w = topology[3] + ROW * t;
        let index = topology[w + 1u];
        var lam = 0.0f;
        if topology[w] == 0u {
            if colour.first == 0u {
                lam = lambda[index];
            }
            lam = lam + scratch[rhs + t];
            lambda[index] = lam;
            if lam < 0.0 {
                let wsum = position[topology[w + 2u]].w + position[topology[w + 3u]].w;
                let rate = -lam * P.inv_h2 * wsum / bitcast<f32>(topology[w + 5u]);
                // Not NaN (a broken state is the health check's to report).
                if rate > 0.0 {
                    atomicMax(&tension[0], bitcast<u32>(rate));
                }
            }
        } else {
            if colour.first == 0u {
                lam = lambda_joint[index];
            }
            lambda_joint[index] = lam + scratch[rhs + t];
        }
    }
    if t < topology[2] {
        let record = topology[4] + 4u * t;
        let p = topology[record];
        let w = position[p].w;
        if w == 0.0 {
            return;
        }
        var step = vec3<f32>(0.0);
        for (var a = topology[record + 1u]; a < topology[record + 2u]; a++) {
            let r = topology[2u * a];
            step += grad_at(r, topology[2u * a + 1u]) * scratch[rhs + r];
        }
        let d = displacement[p].xyz;
        displacement[p] = vec4<f32>(d + step * w, 0.0);
    }
}
