// Jacobi distance-constraint solve, one dispatch per iteration over particles (gather, no
// atomics). Dispatched by jacobi.rs, whose module documentation derives the update.
//
// Thread p reads the previous iterate (d_in, lambda_in), recomputes the XPBD Δλ of every
// constraint around it from that iterate — always in the constraint's own i→j orientation and
// with the arithmetic of distance.wgsl, so that both endpoints compute the same Δλ bit for bit —
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
        let step = distance_step(c, pi, pj, d_in[c.i].xyz, d_in[c.j].xyz, lam);
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
