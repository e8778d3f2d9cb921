"""Sanitize records: the library behind `ppt sanitize`, usable from Ray/Spark batch functions too.

Fails closed: when a mechanism raises on a batch, every record of it becomes a RecordError (never the
raw text), and the raw text (or the alignment that reveals its tokens, or the diagnostics that depend
on it) is written out only under explicitly named ``keep_original`` / ``emit_alignment`` /
``diagnostics`` fields. The stamp itself is data independent (:mod:`ppt.stages.sanitize_stamp`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ppt.io import PptError, Record, RecordError, stamp, stamp_block
from ppt.io.fields import assign, lookup
from ppt.log import logger
from ppt.mechanisms import Mechanism
from ppt.rng import record_generator
from ppt.stages.base import Stage, prepare_mechanism
from ppt.stages.sanitize_spec import WEAK_EPS, SanitizeSpec, build_mechanism, validate_eps  # noqa: F401 - re-exported
from ppt.stages.sanitize_stamp import RecordStamper, with_earlier_releases


def sanitize_records(
    mech: Mechanism,
    records: list[Record],
    spec: SanitizeSpec | None = None,
    *,
    on_empty: Callable[[Record, dict], None] | None = None,
    stamper: RecordStamper | None = None,
) -> list[dict | RecordError]:
    """Sanitize one batch of records as ``spec`` says (default: ``SanitizeSpec(mech.name)``); one output dict
    or RecordError per record, in order.

    A record whose private text comes out empty (every token dropped by the policy, e.g. CJK under
    ``oov=drop``) gets ``"empty_output": true`` in its stamp (absent otherwise) and ``on_empty(record,
    accounting)`` is called (default: a ``ppt: warning`` naming its line, never its text). A record that
    keeps fewer than ``spec.min_kept`` tokens is a ``too_few_tokens`` RecordError instead (--on-error applies).

    ``spec.emit_alignment`` names a field for the exact (orig_row, new_row, start, end) of every perturbed
    token (:mod:`ppt.mechanisms.alignment`), for attacks and mapping metrics; like ``keep_original`` it
    reveals the original tokens and stays local. ``spec.diagnostics`` names a field for the record's
    per-record accounting (counts by reason, list sizes, eps') and exact privacy block: they depend on
    the raw text, so they are never in the stamp and stay local too (:mod:`ppt.stages.sanitize_stamp`)."""
    spec = spec or SanitizeSpec(mech.name)
    text_field, seed, min_kept = spec.text_field, spec.seed, spec.min_kept
    keep_original, emit_alignment, diagnostics = spec.keep_original, spec.emit_alignment, spec.diagnostics
    stamper = stamper or RecordStamper(mech, spec)
    gens = [record_generator(seed, r.id) for r in records]
    texts = [r.text or "" for r in records]
    aligns: list = [None] * len(records)
    try:
        results = mech.sanitize_batch(texts, gens, reproducible=seed is not None)
        if emit_alignment:
            from ppt.mechanisms.alignment import alignment_entries

            space = getattr(mech, "space", None)
            aligns = [None if isinstance(res, RecordError) else alignment_entries(res, space) for res in results]
    except PptError:
        raise
    except Exception as e:  # fail closed: never emit the raw text of a batch we could not privatize
        err = RecordError("sanitize_failed", f"{mech.name} failed on this batch ({type(e).__name__})")
        return [err] * len(records)
    more, failed = other_text_fields(mech, records, spec)
    extra_fields = [
        (f, opt)
        for f, opt in (
            (keep_original, "--keep-original"),
            (emit_alignment, "--emit-alignment"),
            (diagnostics, "--diagnostics"),
            (spec.mapping, "--mapping"),
        )
        if f and f != text_field
    ]
    out: list[dict | RecordError] = []
    for i, (rec, res, al) in enumerate(zip(records, results, aligns)):
        if isinstance(res, RecordError):  # a mechanism may fail one record alone (e.g. longer than its model's context)
            out.append(res)
            continue
        if i in failed:  # one of its other text fields is missing, or failed alone
            out.append(failed[i])
            continue
        acc = res.accounting.to_dict()
        n_out = tokens_out(res.text, acc)
        if n_out < min_kept:
            out.append(
                RecordError(
                    "too_few_tokens", f"the private text keeps {n_out} token(s), fewer than --min-kept {min_kept}"
                )
            )
            continue
        conflict = next(((field, opt) for field, opt in extra_fields if field in rec.data), None)
        if conflict:
            out.append(
                RecordError("field_conflict", f"field {conflict[0]!r} already exists; choose another {conflict[1]}")
            )
            continue
        if emit_alignment and al is None:  # every built-in mechanism aligns; a plug-in may not
            out.append(
                RecordError(
                    "no_alignment", f"{mech.name} did not report which tokens it perturbed; drop --emit-alignment"
                )
            )
            continue
        data = dict(rec.data)
        data = assign(data, text_field, res.text)  # a dotted path writes inside its nested object
        for f, other in zip(spec.extra_text_fields, more[i]):
            data = assign(data, f, other.text)
        if keep_original:
            data[keep_original] = rec.text
        if emit_alignment:
            data[emit_alignment] = al
        if diagnostics:
            data[diagnostics] = stamper.diagnostics_value(res, more[i])
        if spec.mapping:  # surrogate -> original of every replaced span: local only, for `ppt restore`
            data[spec.mapping] = res.mapping or []
        block = stamper.block(res, more[i])
        prior = stamp_block(rec.data, "sanitize")
        if prior is not None:  # released before: keep that release in the ledger, and compose
            block = with_earlier_releases(block, prior)
            if not stamper.warned_earlier:
                stamper.warned_earlier = True
                logger.warning(
                    "records already carry a ppt.sanitize stamp: each keeps its earlier releases under "
                    "ppt.sanitize.earlier, composed in privacy.all_releases"
                )
        if n_out == 0 and (rec.text or "").strip():
            block["empty_output"] = True  # only when true (it follows from the output text)
            (on_empty or _warn_empty)(rec, acc)
        try:
            out.append(stamp(data, "sanitize", block))
        except RecordError as e:  # a non-object `ppt` field (run_stream rejects it earlier): this record only
            out.append(e)
    return out


def other_text_fields(
    mech: Mechanism, records: list[Record], spec: SanitizeSpec
) -> tuple[list[list[Any]], dict[int, RecordError]]:
    """The records' other text fields (``spec.extra_text_fields``), each sanitized as one batch with its own
    per-record generator (stream ``text_field:NAME``, so the first field's output is what a one-field run
    gives): per record its results in field order, and the records that fail (a field missing or not a
    string, or failed alone) with their error."""
    more: list[list[Any]] = [[] for _ in records]
    failed: dict[int, RecordError] = {}
    for f in spec.extra_text_fields:
        todo = []
        for i, rec in enumerate(records):
            if i in failed:
                continue
            found, value = lookup(rec.data, f)
            if not found or not isinstance(value, str):
                failed[i] = RecordError("missing_text_field", f"missing text field {f!r} (or not a string)")
                continue
            todo.append((i, value))
        gens = [record_generator(spec.seed, records[i].id, f"text_field:{f}") for i, _ in todo]
        try:
            results = mech.sanitize_batch([t for _, t in todo], gens, reproducible=spec.seed is not None)
        except PptError:
            raise
        except Exception as e:  # fail closed: the batch's records fail, never a raw field through
            results = [RecordError("sanitize_failed", f"{mech.name} failed on field {f!r} ({type(e).__name__})")]
            results *= len(todo)
        for (i, _), res in zip(todo, results):
            if isinstance(res, RecordError):
                failed[i] = res
            else:
                more[i].append(res)
    return more, failed


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
    return (
        f"line {rec.line_no}: the private text is empty (dropped: {why}); it counts as ok, "
        f"use --min-kept 1 to make it an error"
    )


def _warn_empty(rec: Record, accounting: dict) -> None:
    logger.warning(_empty_message(rec, accounting))


class SanitizeStage(Stage):
    """`ppt sanitize` as a Stage: the mechanism's tables are built in ``prepare()``, before input is read."""

    name = "sanitize"

    MAX_EMPTY_WARNINGS = 20

    def __init__(self, mech: Mechanism, spec: SanitizeSpec | None = None) -> None:
        self.mech = mech
        self.spec = spec or SanitizeSpec(mech.name)
        self.stamper = RecordStamper(mech, self.spec)
        self.n_empty = 0

    @property
    def private_fields(self) -> list[str]:
        """Fields this stage writes that reveal the raw text or depend on it (--keep-original,
        --emit-alignment, --diagnostics)."""
        return self.spec.private_fields

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
        return sanitize_records(self.mech, records, self.spec, on_empty=self._on_empty, stamper=self.stamper)

    def call_detached(self, records: list[Record]) -> tuple[list[dict | RecordError], list[tuple[int, dict]]]:
        """``self(records)`` in a worker process (:mod:`ppt.exec.pool`): the empty-output warnings, counted
        and capped over the whole run, come back as events for :meth:`absorb` in the driving process."""
        where = {id(r): i for i, r in enumerate(records)}
        events: list[tuple[int, dict]] = []
        out = sanitize_records(
            self.mech,
            records,
            self.spec,
            stamper=self.stamper,
            on_empty=lambda rec, acc: events.append((where[id(rec)], acc)),
        )
        return out, events

    def absorb(self, records: list[Record], events: list[tuple[int, dict]]) -> None:
        """Apply the events of :meth:`call_detached` on the same records, in order, as ``self(records)`` would."""
        for i, accounting in events:
            self._on_empty(records[i], accounting)

    def signature(self) -> dict[str, Any]:
        min_kept = self.spec.min_kept
        return {"stage": self.name, **self.stamper.run_block(), **({"min_kept": min_kept} if min_kept else {})}


def stage_from_spec(spec: SanitizeSpec, *, quiet: bool = True) -> SanitizeStage:
    """The stage ``spec`` describes, its mechanism built (and validated) now."""
    return SanitizeStage(spec.build_mechanism(quiet=quiet), spec)
