"""Sanitize records: the library behind `ppt sanitize`, usable from Ray/Spark batch functions too.

Fails closed: when a mechanism raises on a batch, every record of it becomes a RecordError (never the
raw text), and the raw text (or the alignment that reveals its tokens, or the diagnostics that depend
on it) is written out only under explicitly named ``keep_original`` / ``emit_alignment`` /
``diagnostics`` fields. The stamp itself is data independent (:mod:`ppt.stages.sanitize_stamp`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from ppt.io import ExitCode, PptError, Record, RecordError, stamp
from ppt.log import logger, note
from ppt.mechanisms import Mechanism, Policy, get_mechanism, mechanism_class
from ppt.mechanisms.base import check_eps
from ppt.rng import record_generator
from ppt.stages.base import Stage, prepare_mechanism
from ppt.stages.sanitize_stamp import RecordStamper

WEAK_EPS = 10.0


def validate_eps(eps: float | None, mech_cls) -> float:
    if eps is None:
        eps = mech_cls.default_eps
    try:
        eps = check_eps(eps)
    except ValueError as e:
        raise PptError(f"--{e}", exit_code=ExitCode.USAGE, hint="e.g. --eps 6") from None
    if eps > WEAK_EPS:
        note(f"eps = {eps:g} per token gives weak protection (above {WEAK_EPS:g}).")
    return float(eps)


def build_mechanism(
    name: str,
    eps: float | None,
    *,
    space: str | None = None,
    model: str | None = None,
    policy: dict[str, str | None] | None = None,
    params: dict[str, Any] | None = None,
    device: str = "auto",
    quiet: bool = False,
) -> Mechanism:
    """Instantiate and validate a mechanism before any input is read; errors carry the fix."""
    try:
        cls = mechanism_class(name)
    except KeyError as e:
        raise PptError(str(e.args[0]), exit_code=ExitCode.USAGE, hint="list them with `ppt mechs`") from None
    except ImportError as e:
        raise PptError(f"mechanism {name!r} is not available in this install ({e})", exit_code=ExitCode.CONFIG) from None
    eps = validate_eps(eps, cls)
    kwargs: dict[str, Any] = dict(params or {})
    if space:
        from ppt.spaces import load_space

        try:
            kwargs["space"] = load_space(space, device=device, quiet=quiet)
        except ValueError as e:
            raise PptError(str(e), hint="see `ppt precompute --help` for space names") from None
    if model:
        kwargs["model"] = model
    chosen = {k: v for k, v in (policy or {}).items() if v is not None}
    if chosen:
        base = getattr(cls, "default_policy", Policy())
        try:
            kwargs["policy"] = dataclasses.replace(base, **chosen)
        except ValueError as e:
            raise PptError(str(e), exit_code=ExitCode.USAGE) from None
    try:
        return get_mechanism(name, eps, device=device, quiet=quiet, **kwargs)
    except (ValueError, TypeError) as e:
        raise PptError(f"{name}: {e}", exit_code=ExitCode.USAGE, hint=f"see `ppt mechs` for {name}'s parameters") from None


def sanitize_records(
    mech: Mechanism,
    records: list[Record],
    *,
    text_field: str,
    seed: int | None,
    keep_original: str | None = None,
    emit_alignment: str | None = None,
    min_kept: int = 0,
    on_empty: Callable[[Record, dict], None] | None = None,
    diagnostics: str | None = None,
    stamp_mode: str = "compact",
    stamper: RecordStamper | None = None,
) -> list[dict | RecordError]:
    """Sanitize one batch of records; one output dict or RecordError per record, in order.

    A record whose private text comes out empty (every token dropped by the policy, e.g. CJK under
    ``oov=drop``) gets ``"empty_output": true`` in its stamp (absent otherwise) and ``on_empty(record,
    accounting)`` is called (default: a ``ppt: warning`` naming its line, never its text). A record that
    keeps fewer than ``min_kept`` tokens is a ``too_few_tokens`` RecordError instead (--on-error applies).

    ``emit_alignment`` names a field for the exact (orig_row, new_row, start, end) of every perturbed
    token (:mod:`ppt.mechanisms.alignment`), for attacks and mapping metrics; like ``keep_original`` it
    reveals the original tokens and stays local. ``diagnostics`` names a field for the record's
    per-record accounting (counts by reason, list sizes, eps') and exact privacy block: they depend on
    the raw text, so they are never in the stamp and stay local too (:mod:`ppt.stages.sanitize_stamp`)."""
    stamper = stamper or RecordStamper(mech, stamp_mode=stamp_mode, seed=seed, text_field=text_field,
                                       keep_original=keep_original, emit_alignment=emit_alignment,
                                       diagnostics=diagnostics)
    gens = [record_generator(seed, r.id) for r in records]
    texts = [r.text or "" for r in records]
    aligns: list = [None] * len(records)
    try:
        results = mech.sanitize_batch(texts, gens, reproducible=seed is not None)
        if emit_alignment:
            from ppt.mechanisms.alignment import alignment_entries

            aligns = [alignment_entries(res, getattr(mech, "space", None)) for res in results]
    except PptError:
        raise
    except Exception as e:  # fail closed: never emit the raw text of a batch we could not privatize
        err = RecordError("sanitize_failed", f"{mech.name} failed on this batch ({type(e).__name__})")
        return [err] * len(records)
    extra_fields = [(f, opt) for f, opt in ((keep_original, "--keep-original"), (emit_alignment, "--emit-alignment"),
                                            (diagnostics, "--diagnostics")) if f and f != text_field]
    out: list[dict | RecordError] = []
    for rec, res, al in zip(records, results, aligns):
        acc = res.accounting.to_dict()
        n_out = tokens_out(res.text, acc)
        if n_out < min_kept:
            out.append(RecordError("too_few_tokens", f"the private text keeps {n_out} token(s), fewer than --min-kept {min_kept}"))
            continue
        conflict = next(((field, opt) for field, opt in extra_fields if field in rec.data), None)
        if conflict:
            out.append(RecordError("field_conflict", f"field {conflict[0]!r} already exists; choose another {conflict[1]}"))
            continue
        if emit_alignment and al is None:  # every built-in mechanism aligns; a plug-in may not
            out.append(RecordError("no_alignment", f"{mech.name} did not report which tokens it perturbed; drop --emit-alignment"))
            continue
        data = dict(rec.data)
        data[text_field] = res.text
        if keep_original:
            data[keep_original] = rec.text
        if emit_alignment:
            data[emit_alignment] = al
        if diagnostics:
            data[diagnostics] = stamper.diagnostics_value(res)
        block = stamper.block(res)
        if n_out == 0 and (rec.text or "").strip():
            block["empty_output"] = True  # only when true (it follows from the output text)
            (on_empty or _warn_empty)(rec, acc)
        try:
            out.append(stamp(data, "sanitize", block))
        except RecordError as e:  # a non-object `ppt` field (run_stream rejects it earlier): this record only
            out.append(e)
    return out


def tokens_out(text: str, accounting: dict) -> int:
    """How many tokens the private text keeps: the record's tokens less the ones the policy dropped
    (0 when the text is empty)."""
    if not text.strip():
        return 0
    n, dropped = accounting.get("n_tokens"), accounting.get("dropped")
    if isinstance(n, int) and isinstance(dropped, dict):
        return max(0, n - sum(v for v in dropped.values() if isinstance(v, int)))
    return len(text.split())


def _empty_message(rec: Record, accounting: dict) -> str:
    dropped = accounting.get("dropped") if isinstance(accounting.get("dropped"), dict) else {}
    why = ", ".join(f"{k} x{v}" for k, v in dropped.items()) or "no tokens"
    return (f"line {rec.line_no}: the private text is empty (dropped: {why}); it counts as ok, "
            f"use --min-kept 1 to make it an error")


def _warn_empty(rec: Record, accounting: dict) -> None:
    logger.warning(_empty_message(rec, accounting))


class SanitizeStage(Stage):
    """`ppt sanitize` as a Stage: the mechanism's tables are built in ``prepare()``, before input is read."""

    name = "sanitize"

    MAX_EMPTY_WARNINGS = 20

    def __init__(self, mech: Mechanism, *, text_field: str = "text", seed: int | None = None,
                 keep_original: str | None = None, emit_alignment: str | None = None, min_kept: int = 0,
                 diagnostics: str | None = None, stamp_mode: str = "compact") -> None:
        self.mech, self.text_field, self.seed = mech, text_field, seed
        self.keep_original, self.emit_alignment, self.min_kept = keep_original, emit_alignment, min_kept
        self.diagnostics, self.stamp_mode = diagnostics, stamp_mode
        self.stamper = RecordStamper(mech, stamp_mode=stamp_mode, seed=seed, text_field=text_field,
                                     keep_original=keep_original, emit_alignment=emit_alignment, diagnostics=diagnostics)
        self.n_empty = 0

    @property
    def private_fields(self) -> list[str]:
        """Fields this stage writes that reveal the raw text or depend on it (--keep-original,
        --emit-alignment, --diagnostics)."""
        return [f for f in (self.keep_original, self.emit_alignment, self.diagnostics) if f]

    @property
    def private_output(self) -> bool:
        """The output holds the raw text or what depends on it (so a new -o file is created 0600)."""
        return bool(self.private_fields)

    def _on_empty(self, rec: Record, accounting: dict) -> None:
        self.n_empty += 1
        if self.n_empty <= self.MAX_EMPTY_WARNINGS:
            suffix = "" if self.n_empty < self.MAX_EMPTY_WARNINGS else " (further empty records are not listed)"
            logger.warning(_empty_message(rec, accounting) + suffix)

    def prepare(self) -> None:
        prepare_mechanism(self.mech)

    def __call__(self, records: list[Record]) -> list[dict | RecordError]:
        return sanitize_records(self.mech, records, text_field=self.text_field, seed=self.seed,
                                keep_original=self.keep_original, emit_alignment=self.emit_alignment,
                                min_kept=self.min_kept, on_empty=self._on_empty,
                                diagnostics=self.diagnostics, stamper=self.stamper)

    def call_detached(self, records: list[Record]) -> tuple[list[dict | RecordError], list[tuple[int, dict]]]:
        """``self(records)`` in a worker process (:mod:`ppt.exec.pool`): the empty-output warnings, counted
        and capped over the whole run, come back as events for :meth:`absorb` in the driving process."""
        where = {id(r): i for i, r in enumerate(records)}
        events: list[tuple[int, dict]] = []
        out = sanitize_records(self.mech, records, text_field=self.text_field, seed=self.seed,
                               keep_original=self.keep_original, emit_alignment=self.emit_alignment,
                               min_kept=self.min_kept, on_empty=lambda rec, acc: events.append((where[id(rec)], acc)),
                               diagnostics=self.diagnostics, stamper=self.stamper)
        return out, events

    def absorb(self, records: list[Record], events: list[tuple[int, dict]]) -> None:
        """Apply the events of :meth:`call_detached` on the same records, in order, as ``self(records)`` would."""
        for i, accounting in events:
            self._on_empty(records[i], accounting)

    def signature(self) -> dict[str, Any]:
        return {"stage": self.name, **self.stamper.run_block(), **({"min_kept": self.min_kept} if self.min_kept else {})}
