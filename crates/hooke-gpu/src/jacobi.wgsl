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

// Per-dispatch constants (`JacobiSlot` in jacobi.rs), bound at @group(2) with a dynamic offset.
struct Sweep {
    // 1 on the first iteration of a substep: λ starts from 0.
    first: u32,
    // Relaxation ω.
    relaxation: f32,
    _pad0: u32,
    _pad1: u32,
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
            lambda_out[ci] = lam + tr * step.len;
            acc += corr * pi.w;
        } else {
            acc -= corr * pj.w;
        }
    }
    d_out[p] = vec4<f32>(dp + acc, 0.0);
}

@compute @workgroup_size(64)
fn copy_back(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let p = thread_index(gid, nwg);
    if p >= P.particle_count {
        return;
    }
    d_out[p] = d_in[p];
}
