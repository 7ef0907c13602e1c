// Aerodynamic drag and lift per triangle (article §1.4), then gathered per particle.
// Dispatched by aerodynamics.rs at the start of every substep; the formulas are those of
// hooke's `forces/aerodynamics.rs`, in the same operation order.

@group(0) @binding(0) var<storage, read> position: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> velocity: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> triangles: array<u32>;
@group(0) @binding(3) var<storage, read_write> triangle_force: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> particle_triangle_offsets: array<u32>;
@group(0) @binding(5) var<storage, read> particle_triangles: array<u32>;
@group(0) @binding(6) var<storage, read_write> force: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read> worlds: array<vec4<u32>>;

// A third of the force on triangle t (N, xyz) and of its drag rate κ (kg/s, w), i.e. its
// share per vertex, in the wind of the world of its first vertex.
@compute @workgroup_size(64)
fn triangle_forces(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = thread_index(gid, nwg);
    if t >= P.triangle_count {
        return;
    }
    let i0 = triangles[3u * t];
    let i1 = triangles[3u * t + 1u];
    let i2 = triangles[3u * t + 2u];
    let x0 = position[i0].xyz;
    let c = cross3(position[i1].xyz - x0, position[i2].xyz - x0);
    let len = sqrt(dot3(c, c));
    var f = vec3<f32>(0.0);
    var rate = 0.0;
    if len > 1e-20 {
        let n = c / len;
        let area = 0.5 * len;
        var wind = P.wind;
        if P.world_count > 1u {
            wind = world_wind(world_of(i0));
        }
        let v_rel = (velocity[i0].xyz + velocity[i1].xyz + velocity[i2].xyz) * (1.0 / 3.0) - wind;
        let vn = dot3(v_rel, n);
        let k = 0.5 * P.air_density * area;
        let q = -k;
        f = n * (q * P.drag_coefficient * abs(vn) * vn);
        let drag_rate = P.drag_coefficient * abs(vn);
        rate = k * drag_rate;
        if P.lift_coefficient != 0.0 {
            let speed2 = dot3(v_rel, v_rel);
            if speed2 > 1e-20 {
                let speed = sqrt(speed2);
                f = f + (n * speed2 - v_rel * vn) * (q * P.lift_coefficient * vn / speed);
                rate = k * (drag_rate + P.lift_coefficient * speed);
            }
        }
    }
    triangle_force[t] = vec4<f32>(f, rate) * (1.0 / 3.0);
}

// f_i and c_i = Σ over the triangles around i of their shares of force and drag rate, in the
// model's order (as the CPU sums them); then the limited force f_i / (1 + h w_i c_i) of
// hooke's `forces::aerodynamics::limited_force`, with w_i the particle's inverse mass (0 when
// pinned).
@compute @workgroup_size(64)
fn gather(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = thread_index(gid, nwg);
    if i >= P.particle_count {
        return;
    }
    var s = vec4<f32>(0.0);
    for (var k = particle_triangle_offsets[i]; k < particle_triangle_offsets[i + 1u]; k++) {
        s = s + triangle_force[particle_triangles[k]];
    }
    let w = position[i].w;
    force[i] = vec4<f32>(s.xyz / (1.0 + P.h * w * s.w), 0.0);
}
