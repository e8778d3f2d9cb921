"""The figures of a run report (:mod:`ppt.io.run_report`): distributions with their histograms, and what
the ``ppt.sanitize`` stamps and the --diagnostics field say, summed over a run.

Only numbers and names are kept: what a stamp states (public) and, apart, the --diagnostics sums (which
depend on the raw text: the report that holds them is local only).
"""

from __future__ import annotations

import math
import statistics
from array import array
from collections import Counter
from typing import Any

MAX_BINS = 20


class Distribution:
    """Numbers seen one per record, summarised as n / min / median / mean / max and a histogram; ``None``
    (no bound) and infinity are counted apart, never binned."""

    def __init__(self) -> None:
        self.values = array("d")
        self.none = 0
        self.inf = 0

    def add(self, value: Any) -> None:
        if value is None:
            self.none += 1
        elif value == "inf" or (isinstance(value, float) and math.isinf(value)):
            self.inf += 1
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            self.values.append(float(value))

    def __len__(self) -> int:
        return len(self.values) + self.none + self.inf

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"n": len(self.values), "none": self.none, "inf": self.inf}
        if not self.values:
            return out
        vals = sorted(self.values)
        out.update(
            min=_num(vals[0]),
            median=_num(statistics.median(vals)),
            mean=_num(math.fsum(vals) / len(vals)),
            max=_num(vals[-1]),
            histogram=histogram(vals),
        )
        return out


def histogram(sorted_values: list[float], max_bins: int = MAX_BINS) -> dict[str, list]:
    """Equal-width bins over [min, max] (the last bin closed): ``{"edges": k+1 numbers, "counts": k}``; one
    bin when every value is the same. Whole-number data (token counts) gets whole-number widths, each bin
    holding the integers [edge, next edge)."""
    lo, hi = sorted_values[0], sorted_values[-1]
    if hi == lo:
        return {"edges": [_num(lo), _num(hi)], "counts": [len(sorted_values)]}
    distinct = len(set(sorted_values))
    k = max(1, min(max_bins, distinct, max(5, int(math.sqrt(len(sorted_values))))))
    if all(v.is_integer() for v in (lo, hi)) and all(v.is_integer() for v in sorted_values):
        width = max(1.0, math.ceil((hi - lo + 1) / k))
        k = int(math.ceil((hi - lo + 1) / width))
        edges = [lo + i * width for i in range(k + 1)]
    else:
        width = (hi - lo) / k
        edges = [lo + i * width for i in range(k)] + [hi]
    counts = [0] * k
    for v in sorted_values:
        i = min(k - 1, int((v - lo) // width))
        counts[i] += 1
    return {"edges": [_num(e) for e in edges], "counts": counts}


def _num(x: float) -> float | int:
    """Six significant digits, an int where the value is whole (short, stable JSON)."""
    r = float(f"{x:.6g}")
    return int(r) if r.is_integer() and abs(r) < 2**53 else r


def _as_int(x: Any) -> int:
    return x if isinstance(x, int) and not isinstance(x, bool) else 0


class SanitizeStats:
    """What the ``ppt.sanitize`` stamps say, summed over the run (public figures only)."""

    def __init__(self) -> None:
        self.signatures: Counter[str] = Counter()
        self.proven = Distribution()
        self.conditional: dict[str, Distribution] = {}
        self.all_releases = Distribution()
        self.tokens = Distribution()
        self.empty_output = 0
        self.unprotected: Counter[str] = Counter()
        self.records = 0

    def add(self, block: dict) -> None:
        self.records += 1
        sig = block.get("signature")
        if isinstance(sig, str):
            self.signatures[sig] += 1
        privacy = block.get("privacy") if isinstance(block.get("privacy"), dict) else {}
        proven = privacy.get("proven") if isinstance(privacy.get("proven"), dict) else {}
        self.proven.add(proven.get("eps"))
        tokens = _as_int(proven.get("tokens"))
        for cond in privacy.get("conditional") or []:
            if isinstance(cond, dict):
                given = str(cond.get("given") or "conditional")
                self.conditional.setdefault(given, Distribution()).add(cond.get("eps_given"))
                tokens = max(tokens, _as_int(cond.get("tokens")))
        self.tokens.add(tokens)
        releases = privacy.get("all_releases")
        if isinstance(releases, dict):
            self.all_releases.add(releases.get("eps"))
        if block.get("empty_output") is True:
            self.empty_output += 1
        for what in privacy.get("unprotected_by_policy") or []:
            if isinstance(what, str):
                self.unprotected[what] += 1

    def to_dict(self) -> dict[str, Any]:
        eps: dict[str, Any] = {
            "proven": self.proven.to_dict(),
            "conditional": {given: d.to_dict() for given, d in self.conditional.items()},
        }
        if len(self.all_releases):
            eps["all_releases"] = self.all_releases.to_dict()
        return {
            "records": self.records,
            "signatures": dict(self.signatures.most_common()),
            "eps": eps,
            "tokens": self.tokens.to_dict(),
            "empty_output": self.empty_output,
            "unprotected_by_policy": dict(self.unprotected.most_common()),
        }


class DiagnosticsStats:
    """Sums of the --diagnostics field's accounting (kept/dropped by reason): they depend on the raw text."""

    def __init__(self) -> None:
        self.fields: Counter[str] = Counter()
        self.records = 0
        self.kept: Counter[str] = Counter()
        self.dropped: Counter[str] = Counter()
        self.totals: Counter[str] = Counter()

    def add(self, field: str, value: Any) -> None:
        acc = value.get("accounting") if isinstance(value, dict) else None
        if not isinstance(acc, dict):
            return
        self.records += 1
        self.fields[field] += 1
        for name, counter in (("kept", self.kept), ("dropped", self.dropped)):
            for reason, n in (acc.get(name) or {}).items() if isinstance(acc.get(name), dict) else ():
                counter[str(reason)] += _as_int(n)
        for key, n in acc.items():
            if key not in ("kept", "dropped") and isinstance(n, int) and not isinstance(n, bool):
                self.totals[str(key)] += n

    def to_dict(self) -> dict[str, Any]:
        return {
            "field": next(iter(self.fields), None),
            "records": self.records,
            "kept": dict(self.kept.most_common()),
            "dropped": dict(self.dropped.most_common()),
            "totals": dict(self.totals),
        }


__all__ = ["MAX_BINS", "DiagnosticsStats", "Distribution", "SanitizeStats", "histogram"]
