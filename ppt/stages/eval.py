"""The `ppt eval` stage: runs the chosen metrics (:mod:`ppt.stages.eval_metrics`) over each batch and
writes per-record scores, then one corpus summary."""

from __future__ import annotations

from typing import Any

from ppt.io import Record, RecordError, stamp
from ppt.stages.base import Stage
from ppt.stages.eval_metrics import METRICS, EvalSettings, Item, Resources

_FIELD_OF = {
    "doc": "doc_field",
    "reference": "reference_field",
    "label": "label_field",
    "items": "items_field",
    "alignment": "alignment_field",
}


class EvalStage(Stage):
    """`ppt eval METRICS` as a Stage: per-record scores under ``eval`` (with a ppt.eval stamp) and, at the
    end, one summary over the corpus."""

    name = "eval"

    def __init__(
        self,
        names: list[str],
        settings: EvalSettings,
        *,
        doc_field: str | None = None,
        reference_field: str | None = None,
        label_field: str = "label",
        items_field: str = "private_items",
        alignment_field: str = "ppt_alignment",
    ) -> None:
        self.names, self.settings = names, settings
        self.fields = {
            "doc_field": doc_field,
            "reference_field": reference_field,
            "label_field": label_field,
            "items_field": items_field,
            "alignment_field": alignment_field,
        }
        self.res = Resources(settings)
        self.runners = {m: METRICS[m](self.res) for m in names}  # ValueError: a bad setting
        self.n_ok = 0
        self._block = {"metrics": names, **settings.describe(names)}

    def prepare(self) -> None:
        for runner in self.runners.values():
            runner.prepare()

    def signature(self) -> dict[str, Any]:
        return {"stage": self.name, **self._block}

    def item(self, rec: Record) -> Item | RecordError:
        d = rec.data
        it = Item(text=rec.text or "")
        for m in self.names:
            for need in METRICS[m].needs:
                name = self.fields[_FIELD_OF[need]]
                v = d.get(name)
                ok = (
                    isinstance(v, str)
                    if need in ("doc", "reference")
                    else (isinstance(v, list) if need == "items" else v is not None)
                )
                if not ok:
                    return RecordError(
                        "missing_field", f"field {name!r} (needed by {m}) is missing or has the wrong type"
                    )
                setattr(it, need, v)
        return it

    def __call__(self, batch: list[Record]) -> list[dict | RecordError]:
        items = [self.item(r) for r in batch]
        good = [i for i, it in enumerate(items) if isinstance(it, Item)]
        scores: dict[str, list] = {}
        for m, runner in self.runners.items():
            try:
                scores[m] = runner.score([items[i] for i in good])
            except RecordError as e:
                return [e] * len(batch)
        out: list[dict | RecordError] = []
        for i, rec in enumerate(batch):
            it = items[i]
            if not isinstance(it, Item):
                out.append(it)
                continue
            j = good.index(i)
            data = dict(rec.data)
            data["eval"] = {m: scores[m][j] for m in self.names if scores[m][j] is not None}
            self.n_ok += 1
            out.append(stamp(data, "eval", self._block))
        return out

    def summary(self) -> dict:
        from ppt import __version__

        return {
            "metrics": {m: r.summary() for m, r in self.runners.items()},
            "n_records": self.n_ok,
            "settings": self.settings.describe(self.names),
            "version": __version__,
        }
