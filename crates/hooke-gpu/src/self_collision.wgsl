// Particle contacts (self-collision), one Jacobi pass per substep after the constraint sets
// (self_collision.rs; hooke's `collision/self_collision.rs`, operation for operation and in the
// same order, so that both round alike): each member gathers its own averaged correction from
// the candidates the spatial hash lists, then adds it to its displacement.

@group(0) @binding(0) var<storage, read> position: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> displacement: array<vec4<f32>>;
// Rest position (xyz) and collision radius (w) of every particle.
@group(0) @binding(2) var<storage, read> rest: array<vec4<f32>>;
// Body index (low 20 bits) and number of contacts in the last substep (high 12 bits, at most
// 4095) of every particle.
@group(0) @binding(3) var<storage, read_write> tag: array<u32>;
@group(0) @binding(4) var<storage, read> info: HashInfo;
@group(0) @binding(5) var<storage, read> table: array<u32>;
// Correction (xyz) and number of contacts (w, as bits) of each member, then each hash entry's
// point (position, radius) in the table's order.
@group(0) @binding(6) var<storage, read_write> correction: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read_write> health: Health;

// Fixed-point units per metre (hooke's `FIXED_POINT`, 2²⁸).
const FIXED: f32 = 268435456.0;

// Adds v, in fixed point (truncated towards zero, saturating), to the 64-bit words (low, high).
fn fixed_add(low: ptr<function, vec3<u32>>, high: ptr<function, vec3<u32>>, v: vec3<f32>) {
    let t = vec3<i32>(v * FIXED);
    let u = bitcast<vec3<u32>>(t);
    let sum = *low + u;
    let carry = select(vec3<u32>(0u), vec3<u32>(1u), sum < *low);
    *high = *high + select(vec3<u32>(0u), vec3<u32>(0xffffffffu), t < vec3<i32>(0)) + carry;
    *low = sum;
}

// One word in metres: as an i32 when it fits (rounding once), else f32(high)·2³² + f32(low).
fn fixed_word(low: u32, high: u32) -> f32 {
    let small = (high == 0u && low < 0x80000000u) || (high == 0xffffffffu && low >= 0x80000000u);
    if small {
        return f32(bitcast<i32>(low)) / FIXED;
    }
    return (f32(bitcast<i32>(high)) * 4294967296.0 + f32(low)) / FIXED;
}

fn fixed_value(low: vec3<u32>, high: vec3<u32>) -> vec3<f32> {
    return vec3<f32>(fixed_word(low.x, high.x), fixed_word(low.y, high.y), fixed_word(low.z, high.z));
}

@compute @workgroup_size(64)
fn gather(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = thread_index(gid, nwg);
    if k >= info.member_count {
        return;
    }
    let base = info.table_size + 1u;
    let i = table[base + info.member_count + k] & 0x7fffffffu;
    let pi = position[i];
    let wi = pi.w;
    if wi <= 0.0 {
        correction[k] = vec4<f32>(0.0);
        return;
    }
    let di4 = displacement[i];
    let xi = (pi + di4).xyz;
    let rest_i = rest[i];
    let ri = rest_i.w;
    let tag_i = tag[i];
    let bi = tag_i & 0xfffffu;
    let ni = tag_i >> 20u;
    let x0i = pi.xyz;
    let di = di4.xyz;
    let relax = info.depenetration_speed * P.h;
    // The sum in fixed point (hooke's `FixedSum`): 64-bit words as (low, high) u32 pairs.
    var low = vec3<u32>(0u);
    var high = vec3<u32>(0u);
    var count = 0u;
    let reach = ri + info.max_radius;
    let lo = cell_of(xi - vec3<f32>(reach), info.inv_cell);
    let hi = cell_of(xi + vec3<f32>(reach), info.inv_cell);
    // Every cell the box touches (cells one contact distance wide: 3 per axis, 4 where rounding
    // puts the box's ends across borders), each bucket's entries of that cell only. The order
    // differs from the CPU's (its cells are twice as wide); the fixed-point sum does not care.
    for (var cz = lo.z; cz <= hi.z; cz++) {
    for (var cy = lo.y; cy <= hi.y; cy++) {
    for (var cx = lo.x; cx <= hi.x; cx++) {
        let cell = vec3<i32>(cx, cy, cz);
        let b = bucket_of(cell, info.table_size);
        let stop = table[b + 1u];
        for (var s = table[b]; s < stop; s++) {
            let point = correction[info.member_count + s];
            if any(cell_of(point.xyz, info.inv_cell) != cell) {
                continue;
            }
            var delta = xi - point.xyz;
            let dist2 = dot3(delta, delta);
            let t = ri + point.w;
            if dist2 >= t * t {
                continue;
            }
            let j = table[base + s];
            if j == i {
                continue;
            }
            let pj = position[j];
            let dj4 = displacement[j];
            let rest_j = rest[j];
            let tag_j = tag[j];
            let bj = tag_j & 0xfffffu;
            // Particles of two worlds never touch (the world of each body is in its record).
            if info.friction[bi].z != info.friction[bj].z {
                continue;
            }
            let rd = rest_i.xyz - rest_j.xyz;
            if bi == bj && dot3(rd, rd) < t * t {
                continue;
            }
            // The contact normal: along the pair now; for coincident particles along the pair
            // at rest, else at the substep's start, else ±y by index (antisymmetric).
            let dist = sqrt(dist2);
            let start = x0i - pj.xyz;
            if dot3(delta, delta) <= 0.0 {
                if dot3(rd, rd) > 0.0 {
                    delta = rd;
                } else if dot3(start, start) > 0.0 {
                    delta = start;
                } else if i < j {
                    delta = vec3<f32>(0.0, 1.0, 0.0);
                } else {
                    delta = vec3<f32>(0.0, -1.0, 0.0);
                }
            }
            let n = delta / sqrt(dot3(delta, delta));
            let wj = pj.w;
            let dist0 = sqrt(dot3(start, start));
            var goal = t;
            if dist0 < t {
                goal = min(t, dist0 + relax);
            }
            count = count + 1u;
            if goal <= dist {
                continue;
            }
            let depth = goal - dist;
            // The same share on both sides of the pair: momentum is kept.
            let split = f32(max(max(ni, tag_j >> 20u), 1u));
            let share = wi / (wi + wj) / split;
            fixed_add(&low, &high, n * (depth * share));
            let rel = di - dj4.xyz;
            let tangential = rel - n * dot3(rel, n);
            let fi = info.friction[bi];
            let fj = info.friction[bj];
            let f = vec2<f32>(0.5 * (fi.x + fj.x), 0.5 * (fi.y + fj.y));
            fixed_add(&low, &high, coulomb(f.x, f.y, tangential, depth) * share);
        }
    }
    }
    }
    correction[k] = vec4<f32>(fixed_value(low, high), bitcast<f32>(count));
}

@compute @workgroup_size(64)
fn apply(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = thread_index(gid, nwg);
    if k >= info.member_count {
        return;
    }
    let c = correction[k];
    let count = bitcast<u32>(c.w);
    let i = table[info.table_size + 1u + info.member_count + k] & 0x7fffffffu;
    tag[i] = (tag[i] & 0xfffffu) | (min(count, 4095u) << 20u);
    if count == 0u {
        return;
    }
    displacement[i] = displacement[i] + vec4<f32>(c.xyz, 0.0);
    if P.last_substep != 0u {
        atomicAdd(&health.particle_contacts, 1u);
    }
}
