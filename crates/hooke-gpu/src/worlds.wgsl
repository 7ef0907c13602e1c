// Worlds (issue #13): independent scenes packed into one model and solved by the same
// dispatches (hooke's `World`; worlds.rs writes the buffer). Prepended to the kernels that read
// a world's gravity, wind or colliders; each of them declares
//     var<storage, read> worlds: array<vec4<u32>>
// at a binding of its own. For W = P.world_count worlds it holds, per world k,
//     worlds[2k]     = (end of its particle range, first collider, end of its colliders, 0)
//     worlds[2k + 1] = its gravity (m/s², xyz as bits)
// and after them the wind of every world at every substep s: worlds[2W + sW + k] (m/s, xyz as
// bits). With one world the kernels take gravity and wind from `P` and never read the buffer.

// The world of particle i: the first world whose particle range ends after i (worlds hold
// consecutive ranges), by binary search.
fn world_of(i: u32) -> u32 {
    var lo = 0u;
    var hi = P.world_count - 1u;
    while lo < hi {
        let mid = (lo + hi) / 2u;
        if worlds[2u * mid].x > i {
            hi = mid;
        } else {
            lo = mid + 1u;
        }
    }
    return lo;
}

// Gravity (m/s²) of world k.
fn world_gravity(k: u32) -> vec3<f32> {
    return bitcast<vec3<f32>>(worlds[2u * k + 1u].xyz);
}

// The colliders of world k: indices [x, y) into the model's colliders.
fn world_colliders(k: u32) -> vec2<u32> {
    return worlds[2u * k].yz;
}

// Wind (m/s) of world k at this substep.
fn world_wind(k: u32) -> vec3<f32> {
    return bitcast<vec3<f32>>(worlds[(2u + P.substep) * P.world_count + k].xyz);
}
