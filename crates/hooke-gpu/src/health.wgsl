// Blow-up detection at the end of a frame (hooke's CPU checks the same after every frame).
// Dispatched by health.rs. Records the lowest index of a particle with a non-finite position
// or velocity, and of one faster than the limit, as particle_count − index through atomicMax
// (0 = none), and likewise the lowest structural constraint stretched beyond the strain limit,
// so a zero-cleared buffer means "healthy" and the record is sticky until cleared.

@group(0) @binding(0) var<storage, read> position: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> velocity: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> health: Health;
@group(0) @binding(3) var<storage, read> constraints: array<Constraint>;
@group(0) @binding(4) var<storage, read> structural: array<u32>;

@compute @workgroup_size(64)
fn check(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = thread_index(gid, nwg);
    if i >= P.particle_count {
        return;
    }
    let x = position[i].xyz;
    let v = velocity[i].xyz;
    if !finite3(x) || !finite3(v) {
        atomicMax(&health.nonfinite, P.particle_count - i);
    } else if dot3(v, v) > P.max_speed2 {
        atomicMax(&health.too_fast, P.particle_count - i);
    }
}

// Strain (‖xᵢ − xⱼ‖ − L₀)/L₀ of each structural constraint against the limit.
@compute @workgroup_size(64)
fn check_strain(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = thread_index(gid, nwg);
    if k >= P.structural_count {
        return;
    }
    let ci = structural[k];
    let c = constraints[ci];
    let d = position[c.i].xyz - position[c.j].xyz;
    let e = (sqrt(dot3(d, d)) - c.rest_length) / c.rest_length;
    if e > P.max_strain {
        atomicMax(&health.overstrained, arrayLength(&constraints) - ci);
    }
}

// Whether any distance constraint is stretched to within 10⁻⁴ of the lowest breaking strain
// of a cloth that tears (P.tear_flag_strain), the strain computed as hooke's
// `tearing::strained` does: ‖xᵢ − xⱼ‖/L₀ − 1. Every family and body is tested against that
// one bound, so the flag may be set where nothing tears (the host then checks exactly), but
// it is set wherever something does: a frame that leaves it clear needs no read-back.
@compute @workgroup_size(64)
fn check_tear(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = thread_index(gid, nwg);
    if k >= arrayLength(&constraints) {
        return;
    }
    let c = constraints[k];
    let d = position[c.i].xyz - position[c.j].xyz;
    if sqrt(dot3(d, d)) / c.rest_length - 1.0 > P.tear_flag_strain {
        atomicMax(&health.tear, 1u);
    }
}
