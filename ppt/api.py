"""The Python API: sanitize texts or records in a program, a notebook, ``pandas`` or ``datasets.map``, with the
same spec, stage and stamps as ``ppt sanitize``.

    import ppt
    ppt.sanitize(["Alice moved to Paris."], mech="rantext", eps=6)           # -> [{"id": 0, "text": ..., "ppt": ...}]
    s = ppt.Sanitizer("custext+", eps=3, seed=7)                            # builds the mechanism's tables once
    s.texts(df["note"].tolist())                                            # -> the private texts only
    ds.map(lambda batch: {"text": s.texts(batch["text"])}, batched=True)    # Hugging Face datasets

A record's id keys its seeded noise (its ``id`` field, else its position), so a seeded call gives the records the
CLI gives for the same ids, seed and options.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from ppt.io import ExitCode, PptError, Record, RecordError
from ppt.io.args import StreamArgs
from ppt.io.records import BadLine, parse_object
from ppt.stages.sanitize import SanitizeStage, stage_from_spec
from ppt.stages.sanitize_spec import SanitizeSpec

ON_ERROR = ("raise", "record")


class Sanitizer:
    """A reusable sanitizer: the mechanism, its space and tables are built once, when it is made.

    ``on_error="raise"`` (default) raises PptError naming the first record that failed (never its text);
    ``"record"`` returns ``{"id": ..., "error": {"type", "message", "line"}}`` in its place, as
    ``ppt sanitize --on-error record`` writes. Other keywords are :class:`SanitizeSpec` fields
    (``space``, ``model``, ``params``, ``policy``, ``keep_original``, ``protect``, ``deny``, ...)."""

    def __init__(
        self,
        mech: str | None = None,
        eps: float | None = None,
        *,
        preset: str | None = None,
        seed: int | None = None,
        text_field: str = "text",
        id_field: str = "id",
        on_error: str = "raise",
        batch_size: int | None = None,
        **spec: Any,
    ) -> None:
        if on_error not in ON_ERROR:
            raise PptError(f"on_error must be one of {', '.join(ON_ERROR)} (got {on_error!r})", ExitCode.USAGE)
        from ppt.stages.sanitize_spec import with_preset

        # preset="readable": placeholders for detected spans, as `ppt sanitize --preset readable`
        mech, spec["protect"] = with_preset(preset, mech=mech, protect=spec.get("protect"))
        self.spec = SanitizeSpec(mech, eps, seed=seed, text_field=text_field, **spec)
        self.stage: SanitizeStage = stage_from_spec(self.spec, quiet=True)
        self.stage.prepare()
        self.id_field, self.on_error = id_field, on_error
        self._opts = StreamArgs(text_field=text_field, id_field=id_field)
        self.batch_size = int(batch_size or self.stage.mech.default_batch_size())

    def __call__(self, items: Iterable[str | dict]) -> list[dict]:
        """Stamped records, in order, for texts (``{"id": i, text_field: text}``) or records (dicts, copied)."""
        return list(self.iter(items))

    def iter(self, items: Iterable[str | dict]) -> Iterator[dict]:
        """:meth:`__call__` lazily, one batch in memory at a time (for large inputs)."""
        batch: list[Record | BadLine] = []
        for i, item in enumerate(items):
            batch.append(self._record(i, item))
            if len(batch) >= self.batch_size:
                yield from self._run(batch)
                batch = []
        if batch:
            yield from self._run(batch)

    def texts(self, texts: Sequence[str]) -> list[str]:
        """The private texts only (stamps dropped), for columns and ``datasets.map``."""
        return [rec[self.spec.text_field] for rec in self(list(texts))]

    def _record(self, i: int, item: str | dict) -> Record | BadLine:
        """Item ``i`` as the CLI's line ``i + 1``, validated by the same rules (a string gets id ``i``)."""
        data = {self.id_field: i, self.spec.text_field: item} if isinstance(item, str) else item
        if isinstance(data, dict):
            data = dict(data)
        return parse_object(data, i + 1, self._opts)

    def _run(self, batch: list[Record | BadLine]) -> Iterator[dict]:
        good = [r for r in batch if isinstance(r, Record)]
        done = iter(self.stage(good)) if good else iter(())
        for rec in batch:
            if isinstance(rec, BadLine):
                out: dict | RecordError = rec.error
                own_id = rec.id
            else:
                out, own_id = next(done), rec.data.get(self.id_field)
            if isinstance(out, RecordError):
                if self.on_error == "raise":
                    raise PptError(f"item {rec.line_no - 1} failed: {out.type}: {out.message}", ExitCode.DATAERR)
                yield {self.id_field: own_id, "error": out.to_dict(rec.line_no)}
            else:
                yield out


def sanitize(items: Iterable[str | dict], mech: str | None = None, eps: float | None = None, **kw: Any) -> list[dict]:
    """Sanitize texts or records once (see :class:`Sanitizer` for the options; make one to reuse its tables)."""
    return Sanitizer(mech, eps, **kw)(items)


__all__ = ["Sanitizer", "sanitize"]
