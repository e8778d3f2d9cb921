"""What a record's stamp claims: the mechanism's privacy events plus the policy's pass-through, rendered.

Why its own module: the stamp's ``privacy`` block must hold only what is proven, and only what follows
from public parameters and the record's proven per-record figures (issue 16). Each mechanism declares
its events (:meth:`ppt.mechanisms.base.Mechanism.privacy_events`) from its public parameters and the
record's number of perturbed tokens (and, for SanText+, of words it kept); :func:`privacy_block`
renders them with :func:`ppt.accounting.render` and adds what the *policy* lets through, stated from the
policy alone (no per-record counts). Under ``--diagnostics`` the same block is rendered with the
record's per-reason counts as :class:`~ppt.accounting.UnprotectedEvent` s, so its headline is exact for
that record; that block depends on the raw text and stays local.

Policy pass-through that lets raw *words* through (``--stopwords keep``, ``--oov keep``, ``--numbers
keep``) makes the data-independent headline ``eps`` ``"inf"``: without looking at the record the stamp
cannot say none was kept. Format pass-through (punctuation, the shape of numbers given random digits,
``--case original``) is listed but is not a word release; README "Privacy accounting, honestly" lists the
format leaks every mechanism has (whitespace, segmentation).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ppt.accounting import UnprotectedEvent, render

if TYPE_CHECKING:  # pragma: no cover
    from ppt.mechanisms.accounting import Accounting
    from ppt.mechanisms.base import Mechanism
    from ppt.mechanisms.policy import Policy

# reasons the accounting counts kept pieces by -> the unprotected reason, for pieces that are raw words
RAW_KEPT = {"stopword": "stopwords", "oov": "oov", "number": "numbers", "undetected": "undetected"}
# what the short reasons mean (README "Privacy accounting, honestly"; `ppt mechs --describe`)
PASS_THROUGH = {
    "stopwords": "stopwords kept verbatim (--stopwords keep)",
    "oov": "out-of-vocabulary pieces kept verbatim (--oov keep)",
    "numbers": "numbers kept verbatim (--numbers keep)",
    "number-format": "numbers' digit count and separators kept (random digits)",
    "punct": "punctuation kept",
    "case": "capitalisation copied from the original words (--case original)",
    "undetected": "text no detector marked, kept verbatim (--protect detected): detection depends on the text, "
    "so what the detector misses is released raw",
}


def policy_passes(policy: Policy | None) -> list[tuple[str, bool]]:
    """What ``policy`` lets through untouched, as (reason, is_a_raw_word), from the policy alone (the short
    reasons are explained in :data:`PASS_THROUGH`)."""
    if policy is None:
        return []
    out: list[tuple[str, bool]] = []
    if policy.stopwords == "keep":
        out.append((RAW_KEPT["stopword"], True))
    if policy.oov == "keep":
        out.append((RAW_KEPT["oov"], True))
    if policy.numbers == "keep":
        out.append((RAW_KEPT["number"], True))
    elif policy.numbers == "random-digits":
        out.append(("number-format", False))
    if policy.punct == "keep":
        out.append(("punct", False))
    if policy.case == "original":
        out.append(("case", False))
    return out


def counted_unprotected(acc: Accounting) -> list[UnprotectedEvent]:
    """The record's raw words kept by the policy, counted (diagnostics only: counts depend on the text)."""
    return [UnprotectedEvent(int(acc.kept[r]), why) for r, why in RAW_KEPT.items() if acc.kept.get(r)]


def privacy_block(
    mech: Mechanism, acc: Accounting | list[Accounting], *, diagnostics: bool = False, compact: bool = False
) -> dict[str, Any]:
    """The stamp's ``privacy`` block for one record (see the module docstring).

    ``diagnostics=False`` (the stamp): events from public parameters and the record's perturbed-token
    count, policy pass-through by reason. ``diagnostics=True`` (the --diagnostics field): the same plus
    the record's per-reason counts, so ``proven.eps`` is exact for the record. ``compact=True`` lists
    only the pass-through of raw words (what makes ``proven.eps`` infinite); the format pass-through
    (punctuation, number formats, case) follows from the signature's policy (``ppt mechs --describe``).
    """
    accs = acc if isinstance(acc, list) else [acc]  # several text fields of one record: their events compose
    events = [e for a in accs for e in mech.privacy_events(a, diagnostics=diagnostics)]
    policy = getattr(mech, "policy", None)
    if diagnostics:
        events += [e for a in accs for e in counted_unprotected(a)]
    block = render(events)
    passes = policy_passes(policy)
    if getattr(mech, "detector", None) is not None:
        passes.append(("undetected", True))
    if compact:
        passes = [(reason, raw) for reason, raw in passes if raw]
    if passes:
        block["unprotected_by_policy"] = [reason for reason, _ in passes]
        if not diagnostics and any(raw for _, raw in passes):
            block["proven"]["eps"] = "inf"
    return block


def worst_case_log_ratio(eps: float, diameter: float, cap: float | None = None) -> float:
    """eps * D (metric DP over a vocabulary of diameter D), capped by ``cap`` when the mechanism has one."""
    x = eps * diameter
    return min(x, cap) if cap is not None else x


WORST_CASE_WARN = 20.0  # a worst-case log-ratio above this between two vocabulary words is warned


def warn_worst_case(name: str, eps: float, worst: float, unit: str) -> None:
    """LeakWarning when the worst-case log-ratio between two vocabulary words exceeds 20."""
    if math.isfinite(worst) and worst <= WORST_CASE_WARN:
        return
    from ppt.log import LeakWarning, warn

    warn(
        f"{name} at eps {eps:g} per unit of {unit}: two vocabulary words can be up to {worst:.3g} apart in "
        f"log-probability (above {WORST_CASE_WARN:g}); names and rare words may pass through unchanged. "
        "Lower --eps for protection",
        LeakWarning,
    )


__all__ = [
    "privacy_block",
    "policy_passes",
    "counted_unprotected",
    "RAW_KEPT",
    "PASS_THROUGH",
    "WORST_CASE_WARN",
    "warn_worst_case",
    "worst_case_log_ratio",
]
