"""`ppt prosan distill`: read (original, anonymized) pairs ProSan produced and distil them into a small
causal LM (:mod:`ppt.mechanisms.prosan.distill`) with a progress bar on stderr.

Pairs are JSONL records with the raw prompt in ``source_field`` (``ppt sanitize --mech prosan
--keep-original original`` writes it) and ProSan's output in ``target_field`` (``text``). The teacher
is read from the records' ``ppt.sanitize.signature`` stamp when present and written into the model's
``prosan_lite.json``; records that are not ProSan's own output are refused unless ``any_teacher``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ppt.io import ExitCode, PptError


def read_pairs(
    path: str, source_field: str, target_field: str, any_teacher: bool = False
) -> tuple[list[tuple[str, str]], str | None]:
    """(pairs, teacher signature) from a JSONL file; errors name line numbers, never text."""
    from ppt.io.jsonl import open_side_file, read_objects

    pairs: list[tuple[str, str]] = []
    teachers: set[str] = set()
    with open_side_file(path, "pairs") as fh:
        for n, rec in read_objects(fh, path):
            src, tgt = rec.get(source_field), rec.get(target_field)
            if not isinstance(src, str) or not isinstance(tgt, str):
                raise PptError(
                    f"{path}: line {n} needs string fields {source_field!r} and {target_field!r}",
                    ExitCode.DATAERR,
                    hint="make pairs with `ppt sanitize --mech prosan --keep-original original`",
                )
            sig = ((rec.get("ppt") or {}).get("sanitize") or {}).get("signature")
            if isinstance(sig, str):
                teachers.add(sig)
            if not any_teacher and not (isinstance(sig, str) and sig.startswith("prosan|")):
                raise PptError(
                    f"{path}: line {n} is not stamped as ProSan's output",
                    ExitCode.DATAERR,
                    hint="distil ProSan's own pairs, or pass --any-teacher",
                )
            pairs.append((src, tgt))
    if not pairs:
        raise PptError("no pairs in the input", ExitCode.DATAERR)
    return pairs, (sorted(teachers)[0] if len(teachers) == 1 else (f"{len(teachers)} signatures" if teachers else None))


def run_distill(
    pairs_path: str,
    out_dir: str,
    *,
    source_field: str = "original",
    target_field: str = "text",
    any_teacher: bool = False,
    quiet: bool = False,
    **cfg: Any,
) -> dict[str, Any]:
    """Train and save; returns a summary (steps, pairs, first/last loss, out_dir)."""
    from ppt.mechanisms.prosan.distill import DistillConfig, distill
    from ppt.progress import progress_bar

    out = Path(out_dir)
    if out.exists() and not out.is_dir():  # before any training: a file is in the way
        raise PptError(
            f"-o {out_dir} is a file, not a directory", ExitCode.USAGE, hint="name a new or existing directory"
        )
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise PptError(f"cannot create {out_dir}: {e.strerror or type(e).__name__}", ExitCode.IOERR) from None
    pairs, teacher = read_pairs(pairs_path, source_field, target_field, any_teacher)
    conf = DistillConfig(**{k: v for k, v in cfg.items() if v is not None})
    bar = progress_bar(None, "distill", quiet=quiet, unit="step")

    def progress(step: int, total: int, loss: float) -> None:
        bar.total = total
        bar.update(1)
        bar.set_postfix(loss=f"{loss:.3f}")

    try:
        res = distill(pairs, Path(out_dir), conf, teacher=teacher, progress=progress)
    except ValueError as e:
        raise PptError(str(e), ExitCode.DATAERR) from None
    finally:
        bar.close()
    return {
        "out_dir": res.out_dir,
        "pairs": res.pairs,
        "steps": res.steps,
        "teacher": teacher,
        "loss_first": res.losses[0] if res.losses else None,
        "loss_last": res.losses[-1] if res.losses else None,
    }


__all__ = ["read_pairs", "run_distill"]
