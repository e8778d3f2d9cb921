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
        self.warned_earlier = False  # the "already stamped" warning is given once per run
        self._sig: str | None = None
        self._fields: dict[str, Any] = {"seeded": seeded(spec.seed), "text_field": spec.text_field}
        if spec.extra_text_fields:  # every field sanitized; the privacy block composes them all
            self._fields["text_fields"] = [spec.text_field, *spec.extra_text_fields]
        for key, value in (
            ("keep_original", spec.keep_original),
            ("alignment_field", spec.emit_alignment),
            ("diagnostics_field", spec.diagnostics),
            ("mapping_field", spec.mapping),
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
            if getattr(self.mech, "takes_eps", True):
                head["eps"] = self.mech.eps
        return {**head, **self._fields}

    def block(self, res: Sanitized, more: list[Sanitized] = ()) -> dict[str, Any]:
        """The record's stamp; ``more``: the other text fields' results (their events compose with this one's)."""
        head: dict[str, Any] = {"signature": self.signature}
        if self.mode == "full":
            head.update(self.mech.stamp())
            if getattr(self.mech, "takes_eps", True):
                head["eps"] = self.mech.eps
        accs = [res.accounting, *(r.accounting for r in more)]
        head["privacy"] = privacy_block(self.mech, accs, compact=self.mode == "compact")
        return {**head, **self._fields}

    def diagnostics_value(self, res: Sanitized, more: list[Sanitized] = ()) -> dict[str, Any]:
        """The --diagnostics field: the record's full accounting (each text field's, in order, when there are
        several) and its exact privacy block."""
        accs = [res.accounting, *(r.accounting for r in more)]
        return {
            "accounting": accs[0].to_dict() if not more else [a.to_dict() for a in accs],
            "privacy": privacy_block(self.mech, accs, diagnostics=True),
        }


def with_earlier_releases(block: dict[str, Any], prior: Any) -> dict[str, Any]:
    """``block`` for a record that already carried a ``ppt.sanitize`` stamp (``prior``): the earlier releases
    (their signature and privacy block) are kept under ``earlier``, and ``privacy.all_releases`` composes the
    proven figures of every release of the record by basic composition (no proven bound in one release: none
    in total). Conservative when a later run re-sanitized the earlier output (post-processing costs nothing),
    exact when it re-sanitized the raw text (``--text-field`` on a ``--keep-original`` field)."""
    if not isinstance(prior, dict):
        return block
    earlier = [r for r in prior.get("earlier", []) if isinstance(r, dict)]
    earlier.append({k: prior[k] for k in ("signature", "privacy") if k in prior})
    eps_total: Any = 0.0
    delta_total = 0.0
    for release in [*earlier, block]:
        proven = (release.get("privacy") or {}).get("proven") or {}
        eps, delta = proven.get("eps"), proven.get("delta") or 0.0
        if eps is None or eps_total is None:
            eps_total = None
        elif eps == "inf" or eps_total == "inf":
            eps_total = "inf"
        else:
            eps_total = eps_total + float(eps)
        delta_total += float(delta) if isinstance(delta, (int, float)) else 0.0
    privacy = dict(block.get("privacy") or {})
    privacy["all_releases"] = {
        "releases": len(earlier) + 1,
        "composition": "basic, over this record's releases",
        "eps": eps_total,
        "delta": delta_total,
    }
    return {**block, "privacy": privacy, "earlier": earlier}


__all__ = ["RecordStamper", "STAMP_MODES", "with_earlier_releases"]
