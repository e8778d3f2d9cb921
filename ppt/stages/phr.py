"""`ppt eval phr`: privacy hiding rate over records, with 95% intervals and a breakdown by item type.

Why a stage of its own: ProSan's published PHR counts the words the method *flagged*; this counts the
listed private items that are actually absent from the output text (:func:`ppt.metrics.phr.phr`: case-
and format-insensitive, whole tokens). Nothing but the output text and the item list is read, so a
flagged word that survives is counted as leaked.

Intervals: Wilson on the pooled items (treats items as independent), and a percentile bootstrap over
records (items of one record are not independent; 2000 resamples, fixed seed) for the overall rate.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ppt.io import Record, RecordError
from ppt.stages.base import Stage

BOOTSTRAP = 2000


class PhrStage(Stage):
    name = "phr"

    def __init__(self, items_field: str = "private_items", types_field: str | None = "private_types", seed: int = 0):
        self.items_field, self.types_field, self.seed = items_field, types_field, seed
        self.per_record: list[tuple[int, int]] = []  # (absent, total) per scored record
        self.by_type: dict[str, list[int]] = {}

    def __call__(self, records: list[Record]) -> list[dict | RecordError]:
        from ppt.metrics.phr import phr

        out: list[dict | RecordError] = []
        for rec in records:
            items = rec.data.get(self.items_field)
            if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
                out.append(RecordError("missing_items", f"field {self.items_field!r} must be a list of strings"))
                continue
            types = rec.data.get(self.types_field) if self.types_field else None
            if not (isinstance(types, list) and len(types) == len(items)):
                types = ["item"] * len(items)
            r = phr(items, rec.text or "")
            self.per_record.append((r["absent"], r["total"]))
            for it, ty in zip(items, types):
                hit = phr([it], rec.text or "")
                if hit["total"]:
                    t = self.by_type.setdefault(str(ty), [0, 0])
                    t[0] += hit["absent"]
                    t[1] += 1
            out.append({**rec.data, "phr": r})
        return out

    def summary(self) -> dict[str, Any]:
        from ppt.attacks.summary import wilson as _wilson

        def wilson(a: int, n: int) -> tuple[float, float]:
            lo, hi = _wilson(a, n)
            return round(lo, 6), round(hi, 6)

        absent = sum(a for a, _ in self.per_record)
        total = sum(t for _, t in self.per_record)
        res: dict[str, Any] = {
            "metric": "phr",
            "records": len(self.per_record),
            "items": total,
            "absent": absent,
            "phr": absent / total if total else None,
            "ci95_wilson": list(wilson(absent, total)) if total else None,
            "ci95_bootstrap_records": self.bootstrap() if total else None,
        }
        res["by_type"] = {
            t: {"items": n, "absent": a, "phr": a / n, "ci95_wilson": list(wilson(a, n))}
            for t, (a, n) in sorted(self.by_type.items())
        }
        res["counts"] = (
            "listed private items absent from the output text (case/format-insensitive); flags are never read"
        )
        return res

    def bootstrap(self) -> list[float]:
        """95% percentile interval of the pooled PHR with records resampled (fixed seed)."""
        arr = np.asarray(self.per_record, dtype=np.float64)
        rng = np.random.default_rng(self.seed)
        idx = rng.integers(0, len(arr), size=(BOOTSTRAP, len(arr)))
        a, t = arr[idx, 0].sum(1), arr[idx, 1].sum(1)
        rates = np.divide(a, t, out=np.zeros_like(a), where=t > 0)
        lo, hi = np.quantile(rates, [0.025, 0.975])
        return [round(float(lo), 6), round(float(hi), 6)]

    def signature(self) -> dict[str, Any]:
        return {"stage": self.name, "items_field": self.items_field, "types_field": self.types_field}


__all__ = ["PhrStage"]
