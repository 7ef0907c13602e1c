// Dihedral bending of cloth hinges, one dispatch per colour (hooke's `DihedralBending`, projected
// by the shared XPBD update of solver/xpbd/projection.rs). Dispatched by dihedral.rs. Every
// operation is the CPU's, in its order, so that both round alike.

@group(0) @binding(0) var<storage, read> position: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> displacement: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> constraints: array<Hinge>;
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
    let q3 = position[c.p3];
    let d0 = displacement[c.p0].xyz;
    let d1 = displacement[c.p1].xyz;
    let d2 = displacement[c.p2].xyz;
    let d3 = displacement[c.p3].xyz;
    let step = hinge_step(c, q0, q1, q2, q3, d0, d1, d2, d3, lam);
    if !step.moves {
        lambda[ci] = lam;
        return;
    }
    let delta = step.delta;
    if P.method != 1u {
        lam = lam + delta;
    }
    lambda[ci] = lam;
    displacement[c.p0] = vec4<f32>(d0 + step.g0 * (q0.w * delta), 0.0);
    displacement[c.p1] = vec4<f32>(d1 + step.g1 * (q1.w * delta), 0.0);
    displacement[c.p2] = vec4<f32>(d2 + step.g2 * (q2.w * delta), 0.0);
    displacement[c.p3] = vec4<f32>(d3 + step.g3 * (q3.w * delta), 0.0);
}
