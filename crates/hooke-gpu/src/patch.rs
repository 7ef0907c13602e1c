//! A torn model's constraint records patched on the device from the old model's, instead of
//! uploaded whole.
//!
//! A tear at 512² changes a few thousand of about a million distance constraints and hinges,
//! but shifts the rest within their colours ([`hooke::model::ConstraintSet`] keeps each
//! colour contiguous), so the new records are mostly the old ones at other indices. The tear
//! names those runs ([`hooke::tearing::Torn::copied`]); here each run is first compared with
//! the old model's records, on the host — the device buffer holds exactly those — and only
//! its matching records are copied, buffer to buffer on the device, so a run that does not
//! hold costs an upload, never a wrong record. The records outside the runs go up in one
//! upload and are copied into place from it.
//!
//! The per-particle and per-triangle lists (inverse masses, radii, triangles, texture
//! coordinates, the triangles around each particle) change only at split particles, and the
//! copies come at the end of their body: they are kept the same way, from runs at the same
//! index ([`same_index`]) or, for the triangles around each particle, row by row
//! ([`csr_runs`]), each checked byte for byte before it is copied.

use crate::buffers::STORAGE;
use bytemuck::Pod;
use hooke::model::CopiedRun;
use rayon::prelude::*;
use wgpu::util::DeviceExt;

/// Runs are compared in pieces of at most this many records (for the threads to share).
const PIECE: u32 = 1 << 14;

/// The parts of `copied` whose records of `old` (the old set's, as on the device) and `data`
/// (the new set's) are the same bytes: each run cut at the records that differ, runs that
/// reach beyond either set dropped. Sorted by their index in the new set.
pub(crate) fn verified<T: Pod + Sync>(data: &[T], old: &[T], copied: &[CopiedRun]) -> Vec<CopiedRun> {
    let fits = |r: &&CopiedRun| {
        (r.from as u64 + r.len as u64) <= old.len() as u64 && (r.to as u64 + r.len as u64) <= data.len() as u64
    };
    let pieces: Vec<CopiedRun> = copied
        .iter()
        .filter(fits)
        .flat_map(|r| {
            (0..r.len).step_by(PIECE as usize).map(move |d| CopiedRun {
                from: r.from + d,
                to: r.to + d,
                len: PIECE.min(r.len - d),
            })
        })
        .collect();
    let mut kept: Vec<CopiedRun> = pieces
        .par_iter()
        .flat_map_iter(|r| {
            r.parts(|d| {
                bytemuck::bytes_of(&old[(r.from + d) as usize]) == bytemuck::bytes_of(&data[(r.to + d) as usize])
            })
        })
        .collect();
    kept.sort_unstable_by_key(|r| r.to);
    kept
}

/// The index ranges of `0..len` that no run of `runs` (sorted by `to`) covers.
pub(crate) fn gaps(runs: &[CopiedRun], len: u32) -> Vec<std::ops::Range<u32>> {
    let mut out = Vec::new();
    let mut at = 0u32;
    for r in runs {
        if r.to > at {
            out.push(at..r.to);
        }
        at = at.max(r.to + r.len);
    }
    if at < len {
        out.push(at..len);
    }
    out
}

/// The run of the records at the same index in a list of `old` records and one of `new`
/// (their common length; none where either is empty): where a tear changes a per-particle
/// or per-triangle list only at split particles and adds the copies at the end, most of it.
pub(crate) fn same_index(old: usize, new: usize) -> Vec<CopiedRun> {
    let len = old.min(new).min(u32::MAX as usize) as u32;
    if len == 0 { Vec::new() } else { vec![CopiedRun { from: 0, to: 0, len }] }
}

/// The runs of a CSR list (`old_offsets` and `new_offsets`: one per row plus one) where a row
/// below both row counts has as many entries in both: its old entries at their new offset,
/// consecutive rows in one run. (For a torn model's triangles around each particle: every
/// particle that was not split keeps its list.)
pub(crate) fn csr_runs(old_offsets: &[u32], new_offsets: &[u32]) -> Vec<CopiedRun> {
    let rows = old_offsets.len().min(new_offsets.len()).saturating_sub(1);
    let mut runs: Vec<CopiedRun> = Vec::new();
    for p in 0..rows {
        let (from, to) = (old_offsets[p], new_offsets[p]);
        let len = old_offsets[p + 1].saturating_sub(from);
        if len == 0 || len != new_offsets[p + 1].saturating_sub(to) {
            continue;
        }
        match runs.last_mut() {
            Some(r) if r.from + r.len == from && r.to + r.len == to => r.len += len,
            _ => runs.push(CopiedRun { from, to, len }),
        }
    }
    runs
}

/// A storage buffer holding `data`, as [`crate::buffers::storage_with`] makes it (with the
/// `extra` usages), with the records of the runs `copied` that hold (see [`verified`]) copied
/// by `encoder` from `old_buffer`, which holds `old`; the others uploaded. Where the runs hold
/// less than half the records, everything is uploaded. `encoder` must be submitted before the
/// buffer is used.
#[allow(clippy::too_many_arguments)]
pub(crate) fn storage_patched<T: Pod + Sync>(
    device: &wgpu::Device,
    encoder: &mut wgpu::CommandEncoder,
    label: &str,
    data: &[T],
    old: &[T],
    old_buffer: &wgpu::Buffer,
    copied: &[CopiedRun],
    extra: wgpu::BufferUsages,
) -> wgpu::Buffer {
    let size = size_of::<T>() as u64;
    let runs = if old_buffer.size() >= old.len() as u64 * size { verified(data, old, copied) } else { Vec::new() };
    let held: u64 = runs.iter().map(|r| r.len as u64).sum();
    if data.is_empty() || 2 * held < data.len() as u64 || !size.is_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT) {
        return crate::buffers::storage_with(device, label, data, extra);
    }
    let buffer = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: (data.len() as u64 * size).max(16),
        usage: STORAGE | extra,
        mapped_at_creation: false,
    });
    for r in &runs {
        encoder.copy_buffer_to_buffer(
            old_buffer,
            r.from as u64 * size,
            &buffer,
            r.to as u64 * size,
            r.len as u64 * size,
        );
    }
    let gaps = gaps(&runs, data.len() as u32);
    let mut fresh: Vec<u8> = Vec::new();
    for g in &gaps {
        fresh.extend_from_slice(bytemuck::cast_slice(&data[g.start as usize..g.end as usize]));
    }
    if !fresh.is_empty() {
        let upload = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("hooke patch upload"),
            contents: &fresh,
            usage: wgpu::BufferUsages::COPY_SRC,
        });
        let mut at = 0;
        for g in &gaps {
            let bytes = (g.end - g.start) as u64 * size;
            encoder.copy_buffer_to_buffer(&upload, at, &buffer, g.start as u64 * size, bytes);
            at += bytes;
        }
    }
    // (Any byte not written — padding up to 16 bytes for records shorter than that — wgpu
    // zeroes before the first use.)
    buffer
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(from: u32, to: u32, len: u32) -> CopiedRun {
        CopiedRun { from, to, len }
    }

    /// A run is cut at the records that differ, and dropped where it reaches beyond a set;
    /// the gaps are what no run covers.
    #[test]
    fn runs_hold_only_where_the_records_match() {
        let old: Vec<[u32; 2]> = (0..10).map(|k| [k, k]).collect();
        // The new set: old 2..8 shifted to 0..6, with new index 3 changed; then two new records.
        let mut data: Vec<[u32; 2]> = (2..8).map(|k| [k, k]).collect();
        data[3] = [99, 99];
        data.extend([[7, 7], [8, 8]]);
        let runs = verified(&data, &old, &[run(2, 0, 6), run(9, 7, 5)]);
        assert_eq!(runs, vec![run(2, 0, 3), run(6, 4, 2)]);
        assert_eq!(gaps(&runs, data.len() as u32), vec![3..4, 6..8]);
        // A run given wrong (off by one) keeps nothing.
        assert!(verified(&data, &old, &[run(3, 0, 6)]).is_empty());
        // Pieces: a run longer than a piece is cut into pieces and still holds whole.
        let long: Vec<[u32; 2]> = (0..3 * PIECE + 5).map(|k| [k, 1]).collect();
        let held: u32 = verified(&long, &long, &[run(0, 0, long.len() as u32)]).iter().map(|r| r.len).sum();
        assert_eq!(held, long.len() as u32);
        assert_eq!(gaps(&[], 4), vec![0..4]);
    }

    /// A CSR list's runs: every row of the same length in both, at its old and new offsets,
    /// consecutive rows in one run; rows that changed length, and rows beyond either list,
    /// in none. The same-index run is the common length.
    #[test]
    fn a_lists_rows_of_the_same_length_are_its_runs() {
        // Old rows of 2, 3, 1, 2, 2 entries; new: row 1 lost an entry (a split particle), a
        // sixth row added.
        let old = [0, 2, 5, 6, 8, 10];
        let new = [0, 2, 4, 5, 7, 9, 12];
        assert_eq!(csr_runs(&old, &new), vec![run(0, 0, 2), run(5, 4, 5)]);
        assert_eq!(csr_runs(&old, &old), vec![run(0, 0, 10)]);
        assert_eq!(same_index(5, 7), vec![run(0, 0, 5)]);
        assert!(same_index(0, 7).is_empty());
    }
}
