"""Execution engines beyond one process: run a per-record :class:`ppt.stages.base.Stage` on a cluster or
in local worker processes.

    shards.py    input shards (globs, directories, JSONL/Parquet), output shard names, the output directory
    readonly.py  the cache as workers see it: read-only, a missing table fails before the job
    recipes.py   picklable stage recipes (a worker builds its own stage from one)
    ray.py       the Ray Data backend (``pip install 'ppt-private-prompts[ray]'``)
    pool.py      local worker processes (``--workers N``): StagePool, run_stage_in_workers
    _forkserver.py  imported by the pool's fork server only (stdin/stdout let go, quiet orphaned workers)

Nothing here imports Ray at module level, so ``--engine local`` never needs it.
"""
