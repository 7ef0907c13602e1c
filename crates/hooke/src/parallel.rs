//! Parallel helpers the engine's passes share.

use rayon::prelude::*;

/// `f` applied to every index of `range` in parallel, keeping the `Some` results in index
/// order: the order a sequential `filter_map` gives. The range is cut into blocks of `block`
/// indices (at least 1), each filtered on its own thread and the blocks' results joined — an
/// unindexed parallel filter collects through a linked list of pieces instead, which cost
/// 3–4 ms per list of a 512² cloth on a 16-thread host (docs/BENCHMARKS.md, Tearing).
pub fn filter_map_ordered<T, F>(range: std::ops::Range<u32>, block: u32, f: F) -> Vec<T>
where
    T: Copy + Send + Sync,
    F: Fn(u32) -> Option<T> + Sync,
{
    let block = block.max(1);
    let starts: Vec<u32> = range.clone().step_by(block as usize).collect();
    let blocks: Vec<Vec<T>> = starts
        .into_par_iter()
        .map(|first| (first..range.end.min(first.saturating_add(block))).filter_map(&f).collect())
        .collect();
    let pieces: Vec<&[T]> = blocks.iter().map(Vec::as_slice).collect();
    crate::model::concat(&pieces)
}

#[cfg(test)]
mod tests {
    /// The blocks joined give a sequential filter's result, in order, for block sizes that cut
    /// the range unevenly and that exceed it (fails if a block's tail or a block is dropped).
    #[test]
    fn blocks_give_the_sequential_filter_in_order() {
        let keep = |k: u32| (k.is_multiple_of(3) || k % 7 == 1).then_some(k * 2);
        let expected: Vec<u32> = (5..10_007).filter_map(keep).collect();
        for block in [1, 2, 64, 4096, 1 << 20] {
            assert_eq!(super::filter_map_ordered(5..10_007, block, keep), expected, "block {block}");
        }
        assert!(super::filter_map_ordered(4..4, 8, keep).is_empty());
    }
}
