// Prediction (article §5.3 "Integrate") and pins. Dispatched by predict.rs.
//
// Per frame:   reset_w (every particle) then pin_begin (every pin).
// Per substep: predict (every particle) then pin_predict (every pin); from the second
// substep on, without aerodynamics, finish_predict in place of the previous substep's finish
// and this one's predict.

struct Pin {
    particle: u32,
    has_target: u32,
    _pad: vec2<u32>,
    goal: vec4<f32>,
    start: vec4<f32>,
}

@group(0) @binding(0) var<storage, read_write> position: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> displacement: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> velocity: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> inv_mass: array<f32>;
@group(0) @binding(4) var<storage, read_write> pins: array<Pin>;
@group(0) @binding(5) var<storage, read> force: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read> worlds: array<vec4<u32>>;

// w ← the model's inverse mass: pins of the previous frame are released.
@compute @workgroup_size(64)
fn reset_w(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = thread_index(gid, nwg);
    if i >= P.particle_count {
        return;
    }
    position[i].w = inv_mass[i];
}

// A pinned particle gets w = 0 (article §3.2); its start of frame is recorded and, without a
// target, it is held where it is.
@compute @workgroup_size(64)
fn pin_begin(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = thread_index(gid, nwg);
    if k >= P.pin_count {
        return;
    }
    let p = pins[k].particle;
    let x = position[p];
    position[p] = vec4<f32>(x.xyz, 0.0);
    pins[k].start = vec4<f32>(x.xyz, 0.0);
    if pins[k].has_target == 0u {
        pins[k].goal = vec4<f32>(x.xyz, 0.0);
    }
}

// v ← v·e^{−c h} + h (g + w f), d ← h v for free particles, with g the gravity of the
// particle's world; d ← 0 for pinned ones.
@compute @workgroup_size(64)
fn predict(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = thread_index(gid, nwg);
    if i >= P.particle_count {
        return;
    }
    let w = position[i].w;
    if w > 0.0 {
        let v = predicted(i, velocity[i].xyz, w);
        velocity[i] = vec4<f32>(v, 0.0);
        displacement[i] = vec4<f32>(v * P.h, 0.0);
    } else {
        displacement[i] = vec4<f32>(0.0);
    }
}

// The predicted velocity v e^{−c h} + h (g + w f) of free particle i (inverse mass w > 0) from
// its velocity v.
fn predicted(i: u32, v: vec3<f32>, w: f32) -> vec3<f32> {
    var g = P.gravity;
    if P.world_count > 1u {
        g = world_gravity(world_of(i));
    }
    var a = g;
    if P.aero != 0u {
        a = g + force[i].xyz * w;
    }
    return v * P.decay + a * P.h;
}

// The end of a substep (`finish.wgsl`: v = d/h, x⁰ ← x⁰ + d) and `predict` of the next one in
// one pass, each operation as there, bound with the next substep's slot (h is the same for every
// substep of a frame). Recorded where nothing comes between the two (no aerodynamics).
@compute @workgroup_size(64)
fn finish_predict(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = thread_index(gid, nwg);
    if i >= P.particle_count {
        return;
    }
    let x = position[i];
    let d = displacement[i].xyz;
    let end = d * P.inv_h;
    position[i] = vec4<f32>(x.xyz + d, x.w);
    let w = x.w;
    if w > 0.0 {
        let v = predicted(i, end, w);
        velocity[i] = vec4<f32>(v, 0.0);
        displacement[i] = vec4<f32>(v * P.h, 0.0);
    } else {
        velocity[i] = vec4<f32>(end, 0.0);
        displacement[i] = vec4<f32>(0.0);
    }
}

// A pinned particle moves linearly from its start of frame to its target over the substeps:
// d = lerp(start, target, (s+1)/n) − x⁰, with glam's lerp a(1−s) + b s.
@compute @workgroup_size(64)
fn pin_predict(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = thread_index(gid, nwg);
    if k >= P.pin_count {
        return;
    }
    let pin = pins[k];
    // Shader compilers may rewrite a·p + b·q (factor it, or fuse it into a fused multiply-add;
    // Mesa's lavapipe does), which rounds differently from the CPU: `opaque` makes both
    // products be rounded on their own, as on the CPU. 1 − s comes from the CPU too.
    let goal = opaque3(pin.start.xyz * P.one_minus_frac) + opaque3(pin.goal.xyz * P.frac);
    displacement[pin.particle] = vec4<f32>(goal - position[pin.particle].xyz, 0.0);
}
