// Distance-constraint projection, one dispatch per colour (article §3.3, §5.2–5.4).
// Dispatched by distance.rs. The arithmetic is that of hooke's CPU kernel
// (`solver/distance.rs`, `project_one`), operation for operation, so that both round alike.

// The colour being swept: constraints start..start+count; `first` is set on the first
// iteration of a substep, where λ starts from 0.
struct Colour {
    start: u32,
    count: u32,
    first: u32,
    _pad: u32,
}

@group(0) @binding(0) var<storage, read> position: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> displacement: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> constraints: array<Constraint>;
@group(0) @binding(3) var<storage, read_write> lambda: array<f32>;
@group(2) @binding(0) var<uniform> colour: Colour;

@compute @workgroup_size(64)
fn solve(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = thread_index(gid, nwg);
    if k >= colour.count {
        return;
    }
    let ci = colour.start + k;
    let c = constraints[ci];
    var lam = 0.0;
    if colour.first == 0u {
        lam = lambda[ci];
    }
    let pi = position[c.i];
    let pj = position[c.j];
    let di = displacement[c.i].xyz;
    let dj = displacement[c.j].xyz;
    let wi = pi.w;
    let wj = pj.w;
    let wsum = wi + wj;
    // xᵢ − xⱼ = (xᵢ⁰ − xⱼ⁰) + (dᵢ − dⱼ): the precision note of the CPU solver.
    let x = (pi.xyz - pj.xyz) + (di - dj);
    let len2 = x.x * x.x + x.y * x.y + x.z * x.z;
    if wsum == 0.0 || len2 < 1e-18 {
        lambda[ci] = lam;
        return;
    }
    let len = sqrt(len2);
    let cval = len - c.rest_length;
    var t: f32;
    if P.method == 1u {
        // PBD: Δλ = −s C/(wᵢ + wⱼ), written as t = Δλ/‖x‖.
        t = -(P.pbd_stiffness * cval) / (wsum * len);
    } else {
        // XPBD with damping γ = τ/h: t = (−(C + α̃λ)‖x‖ − γ x·Δ) / (((1+γ)(wᵢ+wⱼ) + α̃)‖x‖²).
        var alpha = c.compliance_compression;
        if cval >= 0.0 {
            alpha = c.compliance_stretch;
        }
        alpha = alpha * P.inv_h2;
        var gamma = 0.0;
        if alpha > 0.0 {
            gamma = c.damping * P.inv_h;
        }
        let delta = di - dj;
        let xd = x.x * delta.x + x.y * delta.y + x.z * delta.z;
        let numer = -(cval + alpha * lam) * len - gamma * xd;
        let denom = ((1.0 + gamma) * wsum + alpha) * len2;
        t = numer / denom;
        lam = lam + t * len;
    }
    lambda[ci] = lam;
    let corr = x * t;
    displacement[c.i] = vec4<f32>(di + corr * wi, 0.0);
    displacement[c.j] = vec4<f32>(dj - corr * wj, 0.0);
}
