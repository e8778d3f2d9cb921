"""The ``ppt.sanitize`` stamp of one record: compact by default, the full parameter block on request.

Why apart from the stage: what a stamp may hold is a privacy decision (issue 16). By default it holds
only what follows from public parameters and the record's proven figures: the signature
(:mod:`ppt.mechanisms.signature`), the ``privacy`` block rendered from the mechanism's events
(:mod:`ppt.mechanisms.privacy`), ``seeded`` (never the seed) and the names of the fields the stage wrote.
``--stamp full`` adds the mechanism's whole parameter block (``mechanism``, ``notion``, ``params``,
``eps``). Everything that depends on the raw text (kept/dropped counts by reason, RANTEXT's list sizes,
TEM's truncated-set sizes, Cape's eps') goes only to the ``--diagnostics`` field, which is local like
``--keep-original``.
"""

from __future__ import annotations

from typing import Any

from ppt.mechanisms import Mechanism, Sanitized
from ppt.mechanisms.privacy import privacy_block
from ppt.mechanisms.signature import make_signature
from ppt.rng import seeded
from ppt.stages.sanitize_spec import STAMP_MODES, SanitizeSpec


class RecordStamper:
    """Builds each record's stamp block and diagnostics; the per-run parts are computed once."""

    def __init__(self, mech: Mechanism, spec: SanitizeSpec | None = None) -> None:
        spec = spec or SanitizeSpec(mech.name)
        self.mech, self.mode = mech, spec.stamp_mode
        self.diagnostics = spec.diagnostics
        self._sig: str | None = None
        self._fields: dict[str, Any] = {"seeded": seeded(spec.seed), "text_field": spec.text_field}
        for key, value in (
            ("keep_original", spec.keep_original),
            ("alignment_field", spec.emit_alignment),
            ("diagnostics_field", spec.diagnostics),
        ):
            if value:
                self._fields[key] = value

    @property
    def signature(self) -> str:
        if self._sig is None:
            self._sig = make_signature(self.mech)
        return self._sig

    def run_block(self) -> dict[str, Any]:
        """What every record of the run shares (the stage's signature)."""
        head: dict[str, Any] = {"signature": self.signature}
        if self.mode == "full":
            head.update(self.mech.stamp())
            head["eps"] = self.mech.eps
        return {**head, **self._fields}

    def block(self, res: Sanitized) -> dict[str, Any]:
        head: dict[str, Any] = {"signature": self.signature}
        if self.mode == "full":
            head.update(self.mech.stamp())
            head["eps"] = self.mech.eps
        head["privacy"] = privacy_block(self.mech, res.accounting, compact=self.mode == "compact")
        return {**head, **self._fields}

    def diagnostics_value(self, res: Sanitized) -> dict[str, Any]:
        """The --diagnostics field: the record's full accounting and its exact privacy block."""
        return {
            "accounting": res.accounting.to_dict(),
            "privacy": privacy_block(self.mech, res.accounting, diagnostics=True),
        }


__all__ = ["RecordStamper", "STAMP_MODES"]
