// Where the parts of the particle contacts' buffers start (shared by spatial_hash.wgsl,
// contact_lists.wgsl and self_collision.wgsl, each of which declares `info`; spatial_hash.wgsl
// describes the table).

// Where the table's parts start (spatial_hash.wgsl describes the table): the members, then,
// with neighbour lists, each member's list length and the lists (entry e of member k at
// lists_at() + e·M + k, so that a warp's threads read one entry each from consecutive words).
fn members_at() -> u32 {
    return info.table_size + 1u + info.member_count;
}

fn list_lengths_at() -> u32 {
    return members_at() + info.member_count;
}

fn lists_at() -> u32 {
    return list_lengths_at() + info.member_count;
}

// Words of `counters` after the hash's counts and cursors: the lists' flags and tallies.
// STALE: a member has moved too far since the last build (bit 0), or relative to the reference
// member (bit 1; stale when both are set), a spell of cells has ended (4), none was made yet
// (8); OVERFLOW: the
// last build had a member with more candidates than the capacity; BUILDS and OVERFLOWED: the
// builds made and the members whose list overflowed in them, summed since the lists were made
// (the solver reads them with its health record); CELLS: substeps left before lists are tried
// again after an overflow or lists that went stale too soon; AGE: substeps since the last list
// build; PERIOD: the length of the next such spell of cells (doubled after each failed try).
const STALE: u32 = 0u;
const OVERFLOW: u32 = 1u;
const BUILDS: u32 = 2u;
const OVERFLOWED: u32 = 3u;
const CELLS: u32 = 4u;
const AGE: u32 = 5u;
const PERIOD: u32 = 6u;

fn flags_at() -> u32 {
    return 2u * info.table_size + 1u;
}

// Where the work buffer's parts start: M corrections, then M entry points in the table's
// order; with neighbour lists, then each member's position at the last build (M), then each
// particle's current position and radius (N; members only).
fn built_at() -> u32 {
    return 2u * info.member_count;
}

fn current_at() -> u32 {
    return 3u * info.member_count;
}

// The optional speed clamp of particle i (hooke's `SelfCollision::solve`): its substep
// displacement capped at 0.2 × its contact distance 2r. Applied by the hash's `count` without
// neighbour lists, by `check` (contact_lists.wgsl) with them; each including file declares
// `displacement` (read-write) and `rest`.
fn speed_clamp(i: u32) {
    let d = displacement[i].xyz;
    let len = sqrt(dot3(d, d));
    let cap = 0.4 * rest[i].w;
    if len > cap {
        displacement[i] = vec4<f32>(d * (cap / len), 0.0);
    }
}
