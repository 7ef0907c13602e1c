"""Run a `hooke batch` manifest over a Ray cluster: one Ray task per shard, through the Python
bindings, then the dataset index.

    python examples/python/ray_batch.py MANIFEST OUT [SHARDS]

Ray schedules the shards (`ray.init()` joins the cluster of RAY_ADDRESS, or starts a local
one); hooke only runs them. Each task is `hooke.run_batch(..., shard=(i, n), resume=True)`, so a
task that Ray retries after a lost worker skips the samples already complete.
"""

import sys

import ray

import hooke


@ray.remote(max_retries=2)
def run_shard(manifest: str, out: str, index: int, count: int) -> list:
    """Bakes the samples of shard index/count into `out`; returns their records."""
    return hooke.run_batch(manifest, out=out, shard=(index, count), resume=True)


def main(manifest: str, out: str, shards: int) -> list:
    ray.init()
    try:
        done = ray.get([run_shard.remote(manifest, out, i, shards) for i in range(shards)])
    finally:
        ray.shutdown()
    for i, records in enumerate(done):
        failed = [r for r in records if r["status"] != "ok"]
        print(f"shard {i}/{shards}: {len(records)} samples run, {len(failed)} failed")
    index = hooke.write_index(out)
    print(f"{out}/index.jsonl lists {len(index)} samples")
    return index


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) == 4 else 3)
