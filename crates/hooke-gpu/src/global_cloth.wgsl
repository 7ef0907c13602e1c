// The global cloth solve on the GPU (`global_cloth.rs`): each iteration, every distance
// constraint of a cloth left out of the Gauss–Seidel colours and (under `global-hinges`) its
// hinges are solved together on XPBD's linearised system, as hooke's CPU global solve does
// (`hooke::solver::xpbd::global_cloth`), but in the particles' unknowns instead of the rows':
//
//   (J W Jᵀ + D) Δλ = b   ⇔   (M + Jᵀ D⁻¹ J) Δx = Jᵀ D⁻¹ b,  Δλ = D⁻¹ (b − J Δx),  Δx = W Jᵀ Δλ
//
// (the push-through identity; D = α̃/(1 + γ) is positive, the host refuses a rigid cloth). The
// matrix on the right is a cloth's stiffness with its masses, 3 × 3 blocks between particles
// that share a row, and its condition number is about 1 + 4h²k/m, k the stiffest row's
// stiffness in particle space (a hinge's B/L², which grows with the resolution): an LDLᵀ
// (Cholesky) factorisation in f32 solves it. The host orders each cloth's particles so that the
// matrix is banded (the narrowest of reverse Cuthill–McKee's and a grid's rows' and columns'
// orders) and refuses a cloth whose band is too wide.
//
// Six dispatches per iteration:
// - `rows`, a thread per row: its gradients (at the start of the substep unless it turned by
//   more than 25°, the shared update's rule), 1/D_k and b_k = (−C − α̃λ − γΔC)/(1 + γ);
// - `assemble`, a thread per particle: its three rows of the band (its diagonal block, m I +
//   Σ ∇C ∇Cᵀ/D, and its blocks with the particles before it) and of the right-hand side; a
//   pinned particle (w = 0) gets the identity and 0, so that it does not move;
// - `factor`, a workgroup per cloth: the band's LDLᵀ, column by column (the trailing update
//   shared by the threads);
// - `substitute`, a workgroup per cloth: L D z = r, then Lᵀ Δx = z;
// - `apply`, a thread per row and per particle: λ += Δλ (and the tension limit's peak) and
//   d += Δx;
// - `turns`, a thread per row: the turn limit's rate.
// The band is assembled and factorised at every iteration (a factorisation reused while a
// row's compliance switched between its stretch and compression values overshot; see
// `global_cloth.rs`).

@group(0) @binding(0) var<storage, read> position: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> displacement: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> lambda: array<f32>;
@group(0) @binding(3) var<storage, read_write> lambda_hinge: array<f32>;
// The cloths' layout (`global_cloth.rs`, `Layout`): HEADER words (cloths, rows, particles,
// where the rows start, where the particles start, where the touches start, where the band
// pairs start); per cloth SYS words (its first particle slot, particle count, scalar band width
// bs, where its band, right-hand side and forward solution start in `scratch`); the rows, ROW
// words each (kind 0 distance / 1 hinge, its index in its set, its particles as particle slots
// (two or four), their count, its cloth, then as f32 bits: rest length or angle, compliance
// (stretch), compliance in compression, damping time); the particle slots, PART words each
// (particle, first touch, end of its touches, cloth); the touches, 2 words each (row, slot in
// the row); the band's pairs (i << 16 | j, 1 ≤ j ≤ i ≤ bs, by i then j).
@group(0) @binding(4) var<storage, read> topology: array<u32>;
// Per row ROW_SCRATCH floats (gradients of its four slots, 1/D, b); then each cloth's band
// (3n rows of bs + 1 entries: row r holds columns r − bs … r), right-hand side (Δx after the
// solve) and forward solution y (3n each).
@group(0) @binding(5) var<storage, read_write> scratch: array<f32>;
// The largest T(wᵢ + wⱼ)/L (1/s²) of a distance row in tension this frame, T = −λ/h², as f32
// bits (the tension limit's, `hooke::solver::xpbd::stability`).
@group(0) @binding(6) var<storage, read_write> tension: array<atomic<u32>>;
// `first`: 1 on the first iteration of a substep (λ from 0); `start` and `count`: the window
// of columns `factor` works on.
@group(2) @binding(0) var<uniform> colour: Colour;

const HEADER: u32 = 8u;
const SYS: u32 = 8u;
const ROW: u32 = 12u;
const PART: u32 = 4u;
const ROW_SCRATCH: u32 = 16u;
// The turn limit's margin, sin φ per substep (`hooke::solver::xpbd::stability::TURN_MARGIN`).
const TURN_MARGIN: f32 = 0.1;

fn particle_of(part: u32) -> u32 {
    return topology[topology[4] + PART * part];
}

fn grad_at(row: u32, slot: u32) -> vec3<f32> {
    let g = ROW_SCRATCH * row + 3u * slot;
    return vec3<f32>(scratch[g], scratch[g + 1u], scratch[g + 2u]);
}

fn set_grad(row: u32, slot: u32, v: vec3<f32>) {
    let g = ROW_SCRATCH * row + 3u * slot;
    scratch[g] = v.x;
    scratch[g + 1u] = v.y;
    scratch[g + 2u] = v.z;
}


@compute @workgroup_size(64)
fn rows(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let r = thread_index(gid, nwg);
    if r >= topology[1] {
        return;
    }
    let w = topology[3] + ROW * r;
    let kind = topology[w];
    let index = topology[w + 1u];
    let at = ROW_SCRATCH * r;
    for (var e = 0u; e < 14u; e++) {
        scratch[at + e] = 0.0;
    }
    var lam = 0.0f;
    if colour.first == 0u {
        if kind == 0u {
            lam = lambda[index];
        } else {
            lam = lambda_hinge[index];
        }
    }
    let p0 = particle_of(topology[w + 2u]);
    let p1 = particle_of(topology[w + 3u]);
    let q0 = position[p0];
    let q1 = position[p1];
    let d0 = displacement[p0].xyz;
    let d1 = displacement[p1].xyz;
    let rest = bitcast<f32>(topology[w + 8u]);
    var compliance = bitcast<f32>(topology[w + 9u]);
    var value = 0.0f;
    var rate = 0.0f;
    var g0 = vec3<f32>(0.0);
    var g1 = vec3<f32>(0.0);
    var g2 = vec3<f32>(0.0);
    var g3 = vec3<f32>(0.0);
    if kind == 0u {
        if q0.w + q1.w == 0.0 {
            return;
        }
        let x0 = q0.xyz - q1.xyz;
        let x = x0 + (d0 - d1);
        let l02 = dot3(x0, x0);
        let len2 = dot3(x, x);
        let dt = dot3(x0, x);
        var u = x;
        var u2 = len2;
        if l02 >= 1e-18 && dt > 0.0 && dt * dt >= COS2_TURN * (l02 * len2) {
            u = x0;
            u2 = l02;
        }
        if u2 < 1e-18 {
            return;
        }
        let n = u / sqrt(u2);
        value = sqrt(len2) - rest;
        rate = value - (sqrt(l02) - rest);
        g0 = n;
        g1 = -n;
        var stretched = lam < 0.0;
        if lam == 0.0 {
            stretched = value >= 0.0;
        }
        if !stretched {
            compliance = bitcast<f32>(topology[w + 10u]);
        }
    } else {
        let p2 = particle_of(topology[w + 4u]);
        let p3 = particle_of(topology[w + 5u]);
        let q2 = position[p2];
        let q3 = position[p3];
        let d2 = displacement[p2].xyz;
        let d3 = displacement[p3].xyz;
        let s1 = q1.xyz - q0.xyz;
        let s2 = q2.xyz - q0.xyz;
        let s3 = q3.xyz - q0.xyz;
        let now = hinge_angle(s1 + (d1 - d0), s2 + (d2 - d0), s3 + (d3 - d0), rest);
        if !now.ok {
            return;
        }
        g0 = now.g0;
        g1 = now.g1;
        g2 = now.g2;
        g3 = now.g3;
        let start = hinge_angle(s1, s2, s3, rest);
        if start.ok {
            let dt = dot3(start.g0, now.g0) + dot3(start.g1, now.g1) + dot3(start.g2, now.g2) + dot3(start.g3, now.g3);
            let ss = dot3(start.g0, start.g0) + dot3(start.g1, start.g1) + dot3(start.g2, start.g2)
                + dot3(start.g3, start.g3);
            let nn = dot3(now.g0, now.g0) + dot3(now.g1, now.g1) + dot3(now.g2, now.g2) + dot3(now.g3, now.g3);
            if dt > 0.0 && dt * dt >= COS2_TURN * (ss * nn) {
                g0 = start.g0;
                g1 = start.g1;
                g2 = start.g2;
                g3 = start.g3;
            }
        }
        let weight = q0.w * dot3(g0, g0) + q1.w * dot3(g1, g1) + q2.w * dot3(g2, g2) + q3.w * dot3(g3, g3);
        if weight == 0.0 {
            return;
        }
        value = now.value;
        rate = dot3(g0, d0) + dot3(g1, d1) + dot3(g2, d2) + dot3(g3, d3);
    }
    let alpha = compliance * P.inv_h2;
    if !(alpha > 0.0) {
        return;
    }
    let gamma = bitcast<f32>(topology[w + 11u]) * P.inv_h;
    set_grad(r, 0u, g0);
    set_grad(r, 1u, g1);
    set_grad(r, 2u, g2);
    set_grad(r, 3u, g3);
    scratch[at + 12u] = (1.0 + gamma) / alpha;
    scratch[at + 13u] = (-value - alpha * lam - gamma * rate) / (1.0 + gamma);
}

// Particle slot t's three rows of the band and of the right-hand
// side: m I + Σ_k ∇_tC_k ∇_qC_kᵀ/D_k for each particle q ≤ t of its rows (the lower triangle
// only within its own block), and Σ_k ∇_tC_k b_k/D_k. A pinned particle (w = 0): the identity
// and 0; its columns in the others' rows stay 0.
@compute @workgroup_size(64)
fn assemble(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = thread_index(gid, nwg);
    if t >= topology[2] {
        return;
    }
    let pw = topology[4] + PART * t;
    let sw = HEADER + SYS * topology[pw + 3u];
    let first = topology[sw];
    let bs = topology[sw + 2u];
    let band = topology[sw + 3u];
    let rhs = topology[sw + 4u];
    let width = bs + 1u;
    let lp = t - first;
    for (var e = 0u; e < 3u * width; e++) {
        scratch[band + 3u * lp * width + e] = 0.0;
    }
    let wp = position[topology[pw]].w;
    if wp == 0.0 {
        for (var a = 0u; a < 3u; a++) {
            scratch[rhs + 3u * lp + a] = 0.0;
            scratch[band + (3u * lp + a) * width + bs] = 1.0;
        }
        return;
    }
    for (var a = 0u; a < 3u; a++) {
        scratch[band + (3u * lp + a) * width + bs] = 1.0 / wp;
    }
    var r = vec3<f32>(0.0);
    let touches = topology[5];
    for (var a = topology[pw + 1u]; a < topology[pw + 2u]; a++) {
        let row = topology[touches + 2u * a];
        let slot = topology[touches + 2u * a + 1u];
        let s = scratch[ROW_SCRATCH * row + 12u];
        if s == 0.0 {
            continue;
        }
        let g = grad_at(row, slot);
        r += g * (s * scratch[ROW_SCRATCH * row + 13u]);
        let rw = topology[3] + ROW * row;
        for (var u = 0u; u < topology[rw + 6u]; u++) {
            let q = topology[rw + 2u + u];
            if q > t || (q != t && position[particle_of(q)].w == 0.0) {
                continue;
            }
            let gq = grad_at(row, u) * s;
            let lq = q - first;
            for (var i = 0u; i < 3u; i++) {
                let rr = 3u * lp + i;
                for (var j = 0u; j < 3u; j++) {
                    let cc = 3u * lq + j;
                    if cc <= rr {
                        scratch[band + rr * width + (cc + bs - rr)] += g[i] * gq[j];
                    }
                }
            }
        }
    }
    scratch[rhs + 3u * lp] = r.x;
    scratch[rhs + 3u * lp + 1u] = r.y;
    scratch[rhs + 3u * lp + 2u] = r.z;
}

// Entry (row, column) of cloth `band`'s band (column ≤ row, row − column ≤ bs).
fn entry_at(band: u32, width: u32, row: u32, column: u32) -> u32 {
    return band + row * width + (column + width - 1u - row);
}

// The band's LDLᵀ in place over columns [c0, c1) of cloth `cloth` (a window; the whole band
// in one dispatch where the device has no loop budget), by `threads` threads: column k stays
// as it is (its entries below the diagonal are L_ik·D_k, its diagonal D_k), and the trailing
// block's pairs are updated, A_ij −= A_ik A_jk / D_k, shared by the threads — which read only
// column k, settled before the barrier that ended column k − 1, so one barrier per column.
fn factor_columns(cloth: u32, lid: u32, threads: u32) {
    let sw = HEADER + SYS * cloth;
    let n3 = 3u * topology[sw + 1u];
    let bs = topology[sw + 2u];
    let band = topology[sw + 3u];
    let width = bs + 1u;
    let pairs = bs * (bs + 1u) / 2u;
    let table = topology[6];
    let c1 = min(n3, colour.start + min(colour.count, n3));
    for (var k = colour.start; k < c1; k++) {
        let inv_d = 1.0 / scratch[entry_at(band, width, k, k)];
        for (var p = lid; p < pairs; p += threads) {
            let ij = topology[table + p];
            let a = k + (ij >> 16u);
            let b = k + (ij & 0xffffu);
            if a < n3 {
                let at = entry_at(band, width, a, b);
                let lb = scratch[entry_at(band, width, b, k)] * inv_d;
                scratch[at] = scratch[at] - scratch[entry_at(band, width, a, k)] * lb;
            }
        }
        storageBarrier();
    }
}

// L z' = r with L unit lower (L_ik = A_ik/D_k), z = D⁻¹ z' (in the cloth's forward region), then
// Lᵀ Δx = z (Δx over r), by `threads` threads: each row's value read by every thread once the
// row is settled, and the column below (above) it updated, one thread per entry.
fn substitute_rows(cloth: u32, lid: u32, threads: u32) {
    let sw = HEADER + SYS * cloth;
    let n3 = 3u * topology[sw + 1u];
    let bs = topology[sw + 2u];
    let band = topology[sw + 3u];
    let rhs = topology[sw + 4u];
    let y = topology[sw + 5u];
    let width = bs + 1u;
    for (var k = 0u; k < n3; k++) {
        let inv_d = 1.0 / scratch[entry_at(band, width, k, k)];
        let yk = scratch[rhs + k];
        if lid == 0u {
            scratch[y + k] = yk * inv_d;
        }
        for (var i = lid + 1u; i <= bs; i += threads) {
            if k + i < n3 {
                scratch[rhs + k + i] = scratch[rhs + k + i] - scratch[entry_at(band, width, k + i, k)] * inv_d * yk;
            }
        }
        storageBarrier();
    }
    for (var m = 0u; m < n3; m++) {
        let k = n3 - 1u - m;
        let xk = scratch[y + k];
        if lid == 0u {
            scratch[rhs + k] = xk;
        }
        for (var i = lid + 1u; i <= bs; i += threads) {
            if k >= i {
                let l = scratch[entry_at(band, width, k, k - i)] / scratch[entry_at(band, width, k - i, k - i)];
                scratch[y + k - i] = scratch[y + k - i] - l * xk;
            }
        }
        storageBarrier();
    }
}

// A workgroup per cloth. The wide workgroups suit a GPU; the narrow ones a CPU adapter
// (llvmpipe runs a workgroup's invocations eight to a SIMD group and switches between the
// groups at every barrier: at 256 invocations the barriers, two per column, were most of the
// time).
@compute @workgroup_size(256)
fn factor(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    factor_columns(wid.x, lid, 256u);
}

@compute @workgroup_size(8)
fn factor_narrow(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    factor_columns(wid.x, lid, 8u);
}

@compute @workgroup_size(128)
fn substitute(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    substitute_rows(wid.x, lid, 128u);
}

@compute @workgroup_size(8)
fn substitute_narrow(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    substitute_rows(wid.x, lid, 8u);
}

// Δx of particle slot t (after `substitute`).
fn step_of(t: u32) -> vec3<f32> {
    let sw = HEADER + SYS * topology[topology[4] + PART * t + 3u];
    let at = topology[sw + 4u] + 3u * (t - topology[sw]);
    return vec3<f32>(scratch[at], scratch[at + 1u], scratch[at + 2u]);
}

@compute @workgroup_size(64)
fn apply(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = thread_index(gid, nwg);
    if t < topology[1] {
        let w = topology[3] + ROW * t;
        let s = scratch[ROW_SCRATCH * t + 12u];
        if s != 0.0 {
            var jx = 0.0f;
            for (var u = 0u; u < topology[w + 6u]; u++) {
                jx += dot3(grad_at(t, u), step_of(topology[w + 2u + u]));
            }
            let delta = s * (scratch[ROW_SCRATCH * t + 13u] - jx);
            let index = topology[w + 1u];
            var lam = 0.0f;
            if topology[w] == 0u {
                if colour.first == 0u {
                    lam = lambda[index];
                }
                lam = lam + delta;
                lambda[index] = lam;
                if lam < 0.0 {
                    let wsum = position[particle_of(topology[w + 2u])].w + position[particle_of(topology[w + 3u])].w;
                    let rate = -lam * P.inv_h2 * wsum / bitcast<f32>(topology[w + 8u]);
                    if rate > 0.0 {
                        atomicMax(&tension[0], bitcast<u32>(rate));
                    }
                }
            } else {
                if colour.first == 0u {
                    lam = lambda_hinge[index];
                }
                lambda_hinge[index] = lam + delta;
            }
        } else if colour.first == 1u {
            // A row left out this iteration keeps λ = 0 from the substep's start.
            if topology[w] == 0u {
                lambda[topology[w + 1u]] = 0.0;
            } else {
                lambda_hinge[topology[w + 1u]] = 0.0;
            }
        }
    }
    if t < topology[2] {
        let p = topology[topology[4] + PART * t];
        if position[p].w == 0.0 {
            return;
        }
        let d = displacement[p].xyz;
        displacement[p] = vec4<f32>(d + step_of(t), 0.0);
    }
}

// The turn limit's rate (`hooke::solver::xpbd::stability`), after `apply`, a thread per row:
// sin²φ/(h·0.1)² of each distance row whose pair turned by φ since the start of the substep
// (a turn past 90° counts as sin φ = 1), as the CPU's global solve reports it after each
// solve; rows of two held particles are left out.
@compute @workgroup_size(64)
fn turns(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = thread_index(gid, nwg);
    if t >= topology[1] || P.method == 1u {
        return;
    }
    let w = topology[3] + ROW * t;
    if topology[w] != 0u {
        return;
    }
    let p = particle_of(topology[w + 2u]);
    let q = particle_of(topology[w + 3u]);
    let xp = position[p];
    let xq = position[q];
    if xp.w == 0.0 && xq.w == 0.0 {
        return;
    }
    let start = xq.xyz - xp.xyz;
    let now = start + (displacement[q].xyz - displacement[p].xyz);
    let c = cross3(start, now);
    var sin2 = dot3(c, c) / (dot3(start, start) * dot3(now, now));
    if dot3(start, now) < 0.0 {
        sin2 = 1.0;
    }
    let rate = sin2 * P.inv_h2 / (TURN_MARGIN * TURN_MARGIN);
    // Not NaN, not infinite (a pair at one point).
    if rate > 0.0 && rate < 3.0e38 {
        atomicMax(&tension[0], bitcast<u32>(rate));
    }
}
