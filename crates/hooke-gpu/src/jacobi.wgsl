// Jacobi distance-constraint solve, one dispatch per iteration over particles (gather, no
// atomics). Dispatched by jacobi.rs, whose module documentation derives the update.
//
// Thread p reads the previous iterate (d_in, lambda_in), recomputes the XPBD Δλ of every
// constraint around it from that iterate — always in the constraint's own i→j orientation and
// with one function (`blended_step` below: common.wgsl's `distance_update` along a unit
// direction that goes continuously from the pair at the start of the substep to the pair now as
// it turns), so that both endpoints compute the same Δλ bit for bit —
// and writes its new displacement d_out[p] = d_in[p] ± Σ ω wₚ ∇C Δλ. Only the endpoint i of a
// constraint writes lambda_out[c] = λ + ωΔλ, so every λ is written by exactly one thread.
// `copy_back` copies d_in to d_out (after an odd number of iterations the result is in the
// second buffer).
//
// Chebyshev acceleration (chebyshev.rs): where the weight ω_k ≠ 1 the new iterate is
// yᵏ⁻¹ + ω_k (ŷ − yᵏ⁻¹) with ŷ the Jacobi iterate above and yᵏ⁻¹ the one before the previous.
// For λ, which only this solve changes, that is what the output buffer holds when the
// iteration starts, so the owner reads its constraint's old value before overwriting it. For
// the displacements it is written in increments, yᵏ⁺¹ = yᵏ + sᵏ with sᵏ = ω_k Δᵏ + (ω_k − 1) sᵏ⁻¹
// (Δᵏ the Jacobi correction, sᵏ⁻¹ this solve's own step of the last iteration, kept in `step`):
// the same iterates when this solve is alone, but the corrections the other sets make between
// iterations (tethers, bending) are not extrapolated with it — extrapolating a tether's
// correction over-corrects it. Particles that no constraint of this solve touches (w = 0, or
// only rope constraints, which the direct rope solver takes) are not extrapolated.

// cos² of the turns (3° and 10°) between which the direction of a constraint goes from the
// pair at the start of the substep to the pair now.
const COS2_START: f32 = 0.9972609;
const COS2_NOW: f32 = 0.9698463;

// `distance_step` (common.wgsl) with the direction blended continuously instead of switched.
// The sweeps project a pair along its direction at the start of the substep (which conserves
// angular momentum) until it has turned by 25°, then along its direction now. Under
// Chebyshev's extrapolation that switch, made and unmade from one iteration to the next where
// a fold runs through the cloth, blew up a 64² cloth hung by two corners at 10 substeps × 8
// iterations (and the 128² demo at 20 × 8), which plain Jacobi and Gauss–Seidel held. Here
// the unit direction is the start one up to a turn of 3° in the substep, the one now from 10°
// (or past 90°, or where the pair started at one point), and between them their normalised
// blend, with a smoothstep weight in cos² of the turn. A pair at one point now is skipped (as
// the sweeps skip it unless it is still aligned with its start to within 25°). Taking the pair
// now everywhere also held that cloth but braked a spinning sheet by 8 % in a second; a blend
// between 15° and 35° kept the sheet's angular momentum but did not hold the cloth (measured on
// the scenes of tests/gpu/jacobi.rs and docs/BENCHMARKS.md, not kept as tests).
fn blended_step(c: Constraint, pi: vec4<f32>, pj: vec4<f32>, di: vec3<f32>, dj: vec3<f32>, lam: f32) -> DistanceStep {
    let wsum = pi.w + pj.w;
    let x0 = pi.xyz - pj.xyz;
    let x = x0 + (di - dj);
    let l02 = dot(x0, x0);
    let len2 = dot(x, x);
    if wsum == 0.0 || len2 < 1e-18 {
        return DistanceStep(x, 0.0, 0.0, false);
    }
    let len = sqrt(len2);
    let l0 = sqrt(l02);
    let along = dot(x0, x);
    var now = 1.0;
    if l02 >= 1e-18 && along > 0.0 {
        let cos2 = along * along / (l02 * len2);
        now = smoothstep(0.0, 1.0, (COS2_START - cos2) / (COS2_START - COS2_NOW));
    }
    var u = x / len;
    if now < 1.0 {
        u = normalize(x0 / l0 * (1.0 - now) + u * now);
    }
    return distance_update(c, u, 1.0, 1.0, len, l0, lam, wsum);
}

// Per-dispatch constants (`JacobiSlot` in jacobi.rs), bound at @group(2) with a dynamic offset.
struct Sweep {
    // 1 on the first iteration of a substep: λ starts from 0.
    first: u32,
    // Relaxation ω.
    relaxation: f32,
    // Chebyshev weight ω_k of this iteration (chebyshev.rs); 1: plain Jacobi.
    weight: f32,
    // 1 on the second iteration: the iterate before the previous one has λ = 0.
    prev_zero: u32,
}

@group(0) @binding(0) var<storage, read> position: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> d_in: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> d_out: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> constraints: array<Constraint>;
@group(0) @binding(4) var<storage, read> lambda_in: array<f32>;
@group(0) @binding(5) var<storage, read_write> lambda_out: array<f32>;
// CSR adjacency: words 0..=n are offsets (already shifted past the offsets themselves), then
// one constraint index per (particle, incident constraint), in increasing constraint order.
@group(0) @binding(6) var<storage, read> adjacency: array<u32>;
// This solve's own step sᵏ of each particle in the last iteration (xyz).
@group(0) @binding(7) var<storage, read_write> step: array<vec4<f32>>;
@group(2) @binding(0) var<uniform> sweep: Sweep;

@compute @workgroup_size(64)
fn solve(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let p = thread_index(gid, nwg);
    if p >= P.particle_count {
        return;
    }
    let dp = d_in[p].xyz;
    var acc = vec3<f32>(0.0);
    let end = adjacency[p + 1u];
    for (var e = adjacency[p]; e < end; e++) {
        let ci = adjacency[e];
        let c = constraints[ci];
        let owner = c.i == p;
        var lam = 0.0;
        if sweep.first == 0u {
            lam = lambda_in[ci];
        }
        let pi = position[c.i];
        let pj = position[c.j];
        let step = blended_step(c, pi, pj, d_in[c.i].xyz, d_in[c.j].xyz, lam);
        if !step.moves {
            if owner {
                lambda_out[ci] = lam;
            }
            continue;
        }
        // ωΔλ/‖x‖: the relaxed step, applied to λ and to both endpoints alike.
        let tr = sweep.relaxation * step.t;
        let corr = step.x * tr;
        if owner {
            var lam_new = lam + tr * step.len;
            if sweep.weight != 1.0 {
                var lam_prev = lambda_out[ci];
                if sweep.prev_zero == 1u {
                    lam_prev = 0.0;
                }
                lam_new = lam_prev + sweep.weight * (lam_new - lam_prev);
            }
            lambda_out[ci] = lam_new;
            acc += corr * pi.w;
        } else {
            acc -= corr * pj.w;
        }
    }
    var d_new = dp + acc;
    if end > adjacency[p] && position[p].w > 0.0 {
        if sweep.weight != 1.0 {
            let s = sweep.weight * acc + (sweep.weight - 1.0) * step[p].xyz;
            d_new = dp + s;
            step[p] = vec4<f32>(s, 0.0);
        } else {
            step[p] = vec4<f32>(acc, 0.0);
        }
    }
    d_out[p] = vec4<f32>(d_new, 0.0);
}

@compute @workgroup_size(64)
fn copy_back(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let p = thread_index(gid, nwg);
    if p >= P.particle_count {
        return;
    }
    d_out[p] = d_in[p];
}
