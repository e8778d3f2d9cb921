"""What one record's sanitization did, as counts: the per-record accounting every mechanism returns.

Why counts only: privacy figures come from one channel, the mechanism's privacy events
(:meth:`ppt.mechanisms.base.Mechanism.privacy_events`, rendered by :mod:`ppt.accounting`), which read these
counts; a second copy of eps here could disagree with what the stamp proves. :func:`reason_counts` tallies a batch's kept and
dropped pieces by reason (see :mod:`ppt.mechanisms.policy`) with array operations.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from ppt.mechanisms.policy import REASONS


@dataclass
class Accounting:
    """What one record's sanitization did: tokens, perturbed tokens, what was kept or dropped and why.

    Counts, no privacy figures: the stamp's privacy block is rendered from the mechanism's events, which
    read ``n_perturbed`` (and ``extra`` where a mechanism needs more, e.g. SanText+'s
    ``kept_by_mechanism``). ``kept`` / ``dropped`` by reason and the extras depend on the raw text, so
    stamps carry them only under ``ppt sanitize --diagnostics FIELD``."""

    n_tokens: int
    n_perturbed: int
    kept: dict[str, int] = field(default_factory=dict)
    dropped: dict[str, int] = field(default_factory=dict)
    replaced_uniform: int = 0
    digits_replaced: int = 0  # numbers whose digits were replaced by random ones (format kept; not in ``kept``)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The fields as a new dict, ``extra``'s keys merged in; containers copied (what ``asdict`` gives,
        without its per-leaf ``deepcopy``: this runs once per record of every sanitize batch)."""
        d = {f.name: _copied(getattr(self, f.name)) for f in _FIELDS}
        d.update(_copied(self.extra))
        return d


_FIELDS = tuple(f for f in fields(Accounting) if f.name != "extra")


def _copied(value: Any) -> Any:
    """A copy of the dicts, lists and tuples in ``value`` (the JSON-like values accounting holds)."""
    if isinstance(value, dict):
        return {k: _copied(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_copied(v) for v in value)
    return value


def reason_counts(rec: np.ndarray, why: np.ndarray, mask: np.ndarray, n_records: int) -> list[dict[str, int]]:
    """Per record, how many of its pieces under ``mask`` have each reason (in order of first occurrence)."""
    out: list[dict[str, int]] = [{} for _ in range(n_records)]
    idx = np.flatnonzero(mask)
    if idx.size:
        keys, first, count = np.unique(rec[idx] * len(REASONS) + why[idx], return_index=True, return_counts=True)
        for j in np.argsort(first, kind="stable").tolist():
            b, r = divmod(int(keys[j]), len(REASONS))
            out[b][REASONS[r]] = int(count[j])
    return out


__all__ = ["Accounting", "reason_counts"]
