"""Run a per-record stream stage on a Ray cluster: Ray Data reads the shards, an actor pool runs the stage,
the driver writes the output shards in input order and applies --on-error exactly as ``run_stream`` does.

    run_stage_on_ray(args, SanitizeRecipe(...), output=..., options=RayOptions(address=...))

Why an actor pool: each actor builds its stage once (``prepare()``: space, tables, models; one GPU per
actor when the cluster has GPUs) and then only processes batches. Why it matches a local run byte for
byte: records are validated by the same ``parse_line``, numbered as one stream across the shards, and a
seeded stage draws each record's noise from (seed, id) alone, so sharding, the number of actors and
Ray's retries of a killed actor's batches cannot change a record (unseeded stages draw OS entropy, in
whichever actor runs them). Ray Data keeps input order (``preserve_order``), so the driver sees results
in input order, writes each record once, and stops at the first failure under ``--on-error fail``.
Workers open the cache read-only (:mod:`ppt.exec.readonly`); the driver checks it before the job.

Ray is imported only inside functions: ``pip install 'ppt-private-prompts[ray]'``. This module is the driver;
what runs on the workers (shard reading, the stage actor) is :mod:`ppt.exec.ray_workers`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, Any

from ppt.dist import pip_install, pip_install_static
from ppt.exec.ray_workers import (
    BAD_INPUT,
    OK,
    StageActor,
    _count_row,
    _read_row,
    count_rows,
    shard_rows,
)
from ppt.exec.ray_workers import FAILED as FAILED
from ppt.exec.readonly import read_only_cache
from ppt.exec.shards import (
    SUMMARY_NAME,
    InputShard,
    ShardWriter,
    prepare_output_dir,
    resolve_inputs,
)
from ppt.io import (
    ExitCode,
    PptError,
    StreamArgs,
    Terminated,
    error_stream,
    stdout_guard,
)
from ppt.io.records import ON_ERROR_MODES
from ppt.io.report import RunReport
from ppt.io.stream import _terminate_on_signals
from ppt.stages.base import Stage

INSTALL = pip_install_static("ray")  # from the package index; the error prints pip_install("ray") (a checkout's)
READ_TASKS = 4  # shards read at once


@dataclass
class RayOptions:
    address: str | None = None  # None: the cluster in RAY_ADDRESS, or a new local one
    actors: int | None = None  # None: one per GPU when the cluster has GPUs, else one per CPU
    num_gpus: float | None = None  # per actor; None: 1 when the cluster has GPUs and --device is not cpu
    num_cpus: float = 1.0  # per actor


def require_ray() -> Any:
    """The ``ray`` module, or PptError 78 with the install command."""
    try:
        import ray
        import ray.data
    except ImportError:
        raise PptError(
            "--engine ray needs Ray, which is not installed",
            ExitCode.CONFIG,
            hint=f"install it with: {pip_install('ray')}",
        ) from None
    return ray


def check_options(args: StreamArgs, options: RayOptions) -> None:
    if args.on_error not in ON_ERROR_MODES:
        raise PptError(
            f"unknown --on-error mode {args.on_error!r}", ExitCode.USAGE, hint="use one of: fail, skip, record"
        )
    if not isinstance(args.batch_size, int) or args.batch_size < 1:
        raise PptError(f"--batch-size must be >= 1 (got {args.batch_size})", ExitCode.USAGE)
    if options.actors is not None and options.actors < 1:
        raise PptError(f"--actors must be >= 1 (got {options.actors})", ExitCode.USAGE)
    if options.num_gpus is not None and options.num_gpus < 0:
        raise PptError("--gpus-per-actor must be >= 0", ExitCode.USAGE)


# ------------------------------------------------------------------------------------ the driver


class _Tally(RunReport):
    """Counts and stderr messages in run_stream's words (:class:`ppt.io.report.RunReport`), so a cluster
    run reads like a local one; plus per-shard counts for the summary file."""

    def __init__(self, opts: StreamArgs, desc: str, n_shards: int, err: IO[str]) -> None:
        super().__init__(opts, desc, err)
        self.per_shard = [{"ok": 0, "failed": 0} for _ in range(n_shards)]
        self.first_result: float | None = None  # when the first results arrived (actors up and running)

    def failure(self, shard: int, line_no: int, etype: str) -> None:
        self.count_failure(line_no, etype)
        self.per_shard[shard]["failed"] += 1


def _connect(ray: Any, address: str | None) -> bool:
    """Join ``address`` (or RAY_ADDRESS), or start a local cluster; True when this call started Ray."""
    if ray.is_initialized():
        return False
    # ppt owns stderr (its own summary and errors); the workers' logs stay in `ray logs`
    kwargs: dict[str, Any] = {
        "include_dashboard": False,
        "logging_level": logging.ERROR,
        "configure_logging": True,
        "log_to_driver": False,
    }
    env = {k: os.environ[k] for k in ("PPT_CACHE", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE") if k in os.environ}
    if env:  # workers read the same cache path (shared storage on a multi-node cluster)
        kwargs["runtime_env"] = {"env_vars": env}
    try:
        ray.init(address=address, **kwargs)
    except SystemExit:  # a SIGTERM during ray.init: the handler it installs exits with the signal's number
        raise Terminated(signal.SIGTERM) from None
    except (ConnectionError, RuntimeError, ValueError) as e:
        raise PptError(
            f"cannot connect to the Ray cluster at {address or os.environ.get('RAY_ADDRESS', 'a new local cluster')} "
            f"({type(e).__name__})",
            ExitCode.UNAVAILABLE,
            hint="start one with `ray start --head` and pass --ray-address HOST:6379, or omit it for a local cluster",
        ) from None
    return True


@contextlib.contextmanager
def _ray_session(ray: Any, address: str | None) -> Iterator[None]:
    """Ray joined (or a local cluster started, and shut down on the way out) with SIGTERM and SIGHUP
    raising Terminated throughout, as under ``run_stream`` (exit 143/129, the temp shards removed): the
    handlers go in again once Ray is up, over those ray.init installs (exit 15 after a C++ stack dump)."""
    with _terminate_on_signals():
        started = _connect(ray, address)
        with _terminate_on_signals():
            try:
                yield
            finally:
                if started:
                    ray.shutdown()


def _worker_error(exc: BaseException) -> PptError:
    """The PptError a worker raised (e.g. a table missing on its node), else a generic one that never
    quotes the worker's message (it could hold record text)."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, PptError):
            return cur
        cause = getattr(cur, "cause", None)
        cur = cause if isinstance(cause, BaseException) else (cur.__cause__ or cur.__context__)
    return PptError(
        f"the Ray job failed ({type(exc).__name__})",
        ExitCode.TEMPFAIL,
        hint="see the worker logs (`ray logs`); records are never echoed in this message",
    )


def _task_pool(ray: Any, size: int) -> dict[str, Any]:
    """At most ``size`` concurrent tasks, in this Ray's words (``compute=`` from 2.51, ``concurrency=`` before)."""
    strategy = getattr(ray.data, "TaskPoolStrategy", None)
    try:
        return {"compute": strategy(size=size)} if strategy is not None else {"concurrency": size}
    except TypeError:  # a TaskPoolStrategy without size
        return {"concurrency": size}


def _plan(ray: Any, args: StreamArgs, options: RayOptions) -> tuple[int, float]:
    """(actors, GPUs per actor) for this cluster."""
    resources = ray.cluster_resources()
    gpus = float(resources.get("GPU", 0))
    num_gpus = options.num_gpus
    if num_gpus is None:
        num_gpus = 1.0 if gpus >= 1 and args.device != "cpu" else 0.0
    actors = options.actors
    if actors is None:
        actors = int(gpus // num_gpus) if num_gpus else int(resources.get("CPU", 1) // max(options.num_cpus, 1e-9))
    return max(1, actors), num_gpus


def build_dataset(
    ray: Any,
    shards: list[InputShard],
    make_stage: Callable[[], Stage],
    args: StreamArgs,
    options: RayOptions,
    build_hint: str | None,
) -> tuple[Any, int, float]:
    """The lazy dataset of result rows, in input order, and the (actors, GPUs per actor) it runs on."""
    ctx = ray.data.DataContext.get_current()
    ctx.execution_options.preserve_order = True
    ctx.enable_progress_bars = False
    logging.getLogger("ray.data").setLevel(logging.ERROR)  # ppt owns stderr: its summary, not Ray's progress
    items = [{"shard": s.index, "path": s.path, "fmt": s.fmt} for s in shards]
    # reading takes no CPU slot of its own: the actors hold them all, and a read task waiting for one
    # would starve the pool (a deadlock on a small cluster)
    io = {"num_cpus": 0, **_task_pool(ray, min(READ_TASKS, len(items)))}
    counted = ray.data.from_items(items, override_num_blocks=len(items)).map(_count_row, **io).take_all()
    start = 0
    for row in sorted(counted, key=lambda r: r["shard"]):
        row["start"], start = start, start + int(row["rows"])
    lines = ray.data.from_items(sorted(counted, key=lambda r: r["shard"]), override_num_blocks=len(items)).flat_map(
        _read_row, **io
    )
    actors, num_gpus = _plan(ray, args, options)
    compute = ray.data.ActorPoolStrategy(size=actors)
    results = lines.map_batches(
        StageActor,
        fn_constructor_args=(make_stage, args, build_hint),
        batch_size=args.batch_size,
        batch_format="numpy",
        compute=compute,
        num_cpus=options.num_cpus,
        num_gpus=num_gpus or None,
    )  # Ray Data restarts a dead actor and retries its batches (max_restarts=-1, max_task_retries=-1)
    return results, actors, num_gpus


def run_stage_on_ray(
    args: StreamArgs,
    make_stage: Callable[[], Stage],
    *,
    options: RayOptions | None = None,
    desc: str = "records",
    build_hint: str | None = None,
    _stderr: IO[str] | None = None,
) -> int:
    """Run ``make_stage()`` over the shards named by ``args.input`` on Ray and write ``part-NNNNN.jsonl``
    shards plus ``summary.json`` into the directory ``args.output``; return the exit code a local
    ``run_stream`` gives on the same records (0, 1 some failed, 65 bad input under fail).

    ``make_stage`` must pickle (e.g. :class:`ppt.exec.recipes.SanitizeRecipe`); it is called once on the
    driver, whose ``prepare()`` checks that the cache holds every table (PptError 78 with ``build_hint``
    otherwise, before any record is read), and once per actor. Stages with an end-of-run summary are
    refused: their actors' summaries cannot be merged."""
    options = options or RayOptions()
    ray = require_ray()
    check_options(args, options)
    shards = resolve_inputs(args.input)
    if args.output in ("", "-"):
        prepare_output_dir(args.output)  # the usage error, before any table is loaded
    with stdout_guard(), read_only_cache(build_hint):  # a missing table fails here, before the job
        stage = make_stage()
        stage.prepare()
    if getattr(type(stage), "summary", Stage.summary) is not Stage.summary:
        raise PptError(
            f"{stage.name or type(stage).__name__} writes an end-of-run summary, which --engine ray cannot merge "
            "across actors yet",
            ExitCode.USAGE,
            hint="run it with --engine local",
        )
    signature = stage.signature()
    private = bool(args.private or getattr(stage, "private_output", False))
    del stage
    out_dir = prepare_output_dir(args.output)
    err = error_stream(_stderr)
    with _ray_session(ray, options.address):
        t0 = time.perf_counter()
        tally = _Tally(args, desc, len(shards), err)
        writer = ShardWriter(out_dir, len(shards), private=private)
        code: int | None = None
        try:
            results, actors, num_gpus = build_dataset(ray, shards, make_stage, args, options, build_hint)
            try:
                with warnings.catch_warnings():  # Ray Data's tuning advice is not the user's business here
                    warnings.filterwarnings("ignore", module=r"ray(\.|$)")
                    code = _drain(results, args, tally, writer)
            except PptError:
                raise
            except Exception as e:  # noqa: BLE001 - a Ray failure of any kind: report it without its text
                raise _worker_error(e) from None
            if code is None:
                tally.summary()
                code = int(ExitCode.SOME_FAILED if tally.failed else ExitCode.OK)
            names = writer.commit()
        except BaseException:
            writer.abort()
            raise
    _write_summary(
        out_dir,
        shards,
        names,
        tally,
        code,
        signature=signature,
        actors=actors,
        num_gpus=num_gpus,
        seconds=time.perf_counter() - t0,
        first_result_seconds=None if tally.first_result is None else tally.first_result - t0,
    )
    return code


_RAW_KEYS = (b'"keep_original"', b'"alignment_field"', b'"diagnostics_field"', b'"mapping_field"', b'"local_only"')


def _reveals_raw_line(line: bytes) -> bool:
    """:func:`ppt.io.stream.reveals_raw` of one output line (parsed only where a raw field's stamp key shows)."""
    if not any(k in line for k in _RAW_KEYS) and b'"restore"' not in line:
        return False
    from ppt.io.stream import reveals_raw

    try:
        return reveals_raw(json.loads(line))
    except ValueError:
        return False


def _drain(results: Any, args: StreamArgs, tally: _Tally, writer: ShardWriter) -> int | None:
    """Write result rows in input order; the exit code where --on-error fail stops, else None."""
    for batch in results.iter_batches(batch_size=None, batch_format="numpy"):
        if tally.first_result is None:
            tally.first_result = time.perf_counter()
        pending: dict[int, list[bytes]] = {}
        fatal = None
        for shard, line_no, status, out, etype, emsg in zip(
            batch["shard"], batch["line_no"], batch["status"], batch["out"], batch["etype"], batch["emsg"]
        ):
            shard = int(shard)
            if status == OK:
                pending.setdefault(shard, []).append(bytes(out))
                if not writer.private and _reveals_raw_line(pending[shard][-1]):
                    writer.mark_private()
                tally.ok += 1
                tally.per_shard[shard]["ok"] += 1
                continue
            tally.failure(shard, int(line_no), str(etype))
            if args.on_error == "fail":
                fatal = (int(line_no), str(etype), str(emsg), int(status))
                break
            if args.on_error == "record":
                pending.setdefault(shard, []).append(bytes(out))
        for shard, chunks in pending.items():
            writer.write(shard, b"".join(chunks))
        if fatal is not None:
            tally.fatal(*fatal[:3])
            return int(ExitCode.DATAERR if fatal[3] == BAD_INPUT else ExitCode.SOME_FAILED)
    return None


def _write_summary(
    out_dir: Any, shards: list[InputShard], names: list[str], tally: _Tally, code: int, **info: Any
) -> None:
    """``summary.json``: the counts and exit code (what the stderr summary says, for scripts), per shard too."""
    doc = {
        "engine": "ray",
        "exit_code": code,
        "ok": tally.ok,
        "failed": dict(tally.failed),
        "on_error": tally.opts.on_error,
        **{k: (round(v, 3) if isinstance(v, float) else v) for k, v in info.items()},
        "shards": [{"input": s.path, "output": n, **tally.per_shard[s.index]} for s, n in zip(shards, names)],
    }
    tmp = out_dir / f".{SUMMARY_NAME}.tmp"
    tmp.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n")
    os.replace(tmp, out_dir / SUMMARY_NAME)


__all__ = [
    "INSTALL",
    "RayOptions",
    "StageActor",
    "build_dataset",
    "check_options",
    "count_rows",
    "require_ray",
    "run_stage_on_ray",
    "shard_rows",
]
