// Distance-constraint projection, one dispatch per colour (article §3.3, §5.2–5.4).
// Dispatched by distance.rs. The arithmetic is that of hooke's CPU kernel
// (`solver/distance.rs`, `project_one`), operation for operation, so that both round alike.

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
    solve_one(colour.start + k);
}

// Projects constraint ci (of the colour being swept; λ from 0 when `colour.first` is set).
fn solve_one(ci: u32) {
    let c = constraints[ci];
    var lam = 0.0;
    if colour.first == 0u {
        lam = lambda[ci];
    }
    let pi = position[c.i];
    let pj = position[c.j];
    let di = displacement[c.i].xyz;
    let dj = displacement[c.j].xyz;
    let step = distance_step(c, pi, pj, di, dj, lam);
    if !step.moves {
        lambda[ci] = lam;
        return;
    }
    if P.method != 1u {
        lam = lam + step.t * step.len;
    }
    lambda[ci] = lam;
    let corr = step.x * step.t;
    displacement[c.i] = vec4<f32>(di + corr * pi.w, 0.0);
    displacement[c.j] = vec4<f32>(dj - corr * pj.w, 0.0);
}
