"""The interface every text mechanism implements, whatever its space or model.

A mechanism turns texts into private texts plus an :class:`~ppt.mechanisms.accounting.Accounting`
record (what was spent, under which notion). It never formats output or touches I/O; the stage stamps
the accounting into records. Token-level mechanisms share one pipeline
(:class:`ppt.mechanisms.pipeline.TokenMechanism`); a mechanism may also implement
:meth:`Mechanism.sanitize_batch` itself (a plug-in registered through the ``ppt.mechanisms``
entry-point group, see :mod:`ppt.mechanisms.registry`).
"""

from __future__ import annotations

import dataclasses
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ppt.lazy import lazy_module

torch = lazy_module("torch")

from ppt.mechanisms.accounting import Accounting
from ppt.mechanisms.params import Param, check_params


@dataclass
class Sanitized:
    """One record's private text and accounting, and which tokens were perturbed.

    ``pairs`` (int64 [n_perturbed, 4], or None when a mechanism does not report it): for each perturbed
    token, in text order, its original row, its new row (rows of the mechanism's space, or the context
    model's token ids for Cape) and the ``[start, end)`` character span of the new token in ``text``.
    It reveals the original tokens: it belongs to evaluation data, never to what goes remote.
    """

    text: str
    accounting: Accounting
    pairs: np.ndarray | None = None
    # --protect detected: [{"surrogate", "original", "kind"}] per replaced span (local only: --mapping)
    mapping: list[dict[str, str]] | None = None


def check_eps(eps: float) -> float:
    try:
        eps = float(eps)
    except (TypeError, ValueError):
        raise ValueError(f"eps must be a number (got {eps!r})") from None
    if not math.isfinite(eps) or eps <= 0:
        raise ValueError(f"eps must be positive and finite (got {eps})")
    return eps


class Mechanism(ABC):
    """A text mechanism: validated parameters, batch sanitization, optional precomputed tables."""

    name: ClassVar[str]
    notion: ClassVar[str]
    summary: ClassVar[str] = ""
    defaults: ClassVar[dict[str, Any]] = {}
    default_eps: ClassVar[float] = 6.0  # a subclass's defaults["eps"], when given, takes its place
    takes_eps: ClassVar[bool] = True  # False: no eps at all (no DP guarantee; default_eps is a placeholder)
    # declared parameters (ppt.mechanisms.params): checked generically, listed by `ppt mechs`, checked against
    # `--param` before any space or model loads; a mechanism that declares them gets ``defaults`` from them
    PARAMS: ClassVar[tuple[Param, ...]] = ()
    rows_in_model_space: ClassVar[bool] = False  # True: pairs' rows are a context model's token ids (Cape)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "PARAMS" in cls.__dict__:
            own = cls.__dict__.get("defaults", {})
            eps = {"eps": own["eps"]} if "eps" in own else {}
            cls.defaults = {**eps, **{p.name: p.default for p in cls.PARAMS if not p.internal}}
        if "eps" in cls.__dict__.get("defaults", {}):
            cls.default_eps = float(cls.defaults["eps"])

    @classmethod
    def check_params(cls, given: dict[str, Any]) -> dict[str, Any]:
        """Every declared parameter, checked and converted (defaults filled in); ValueError on an unknown
        name or a bad value. A mechanism that declares none accepts what its ``__init__`` takes."""
        if not cls.PARAMS:
            return dict(given)
        return check_params(cls.name, cls.PARAMS, given)

    def __init__(self, eps: float, **params: Any):
        if params:
            raise TypeError(f"{self.name}: unknown parameter(s) {', '.join(sorted(params))}")
        self.eps = check_eps(eps)

    @abstractmethod
    def params(self) -> dict[str, Any]:
        """Every parameter that determines the output distribution (for the stamp)."""

    @abstractmethod
    def sanitize_batch(
        self, texts: list[str], generators: list[np.random.Generator], *, reproducible: bool = True
    ) -> list[Sanitized]:
        """One :class:`Sanitized` per text, each drawn from its own generator (a numpy generator with a
        128-bit seed, :func:`ppt.rng.record_generator`).

        ``reproducible`` (DESIGN's randomness contract): True requires seeded output bit-identical
        whatever the batching; False (OS-entropy runs) lets a mechanism batch for speed at the cost of
        batch-dependent float rounding (Cape's context model).
        """

    def precompute(self, quiet: bool = False) -> list:
        """Build the cached tables this mechanism uses; returns their artifacts."""
        return []

    def prepare(self) -> Mechanism:
        """Materialise every lazily built table (calibration, sorted rows, run tables) now, before the
        first record is read, so a failure to build one is a configuration error and not a batch of
        failed records. Idempotent; returns the mechanism."""
        self.precompute(quiet=getattr(self, "quiet", False))
        return self

    def default_batch_size(self) -> int:
        """Records per batch when the user gives no ``--batch-size`` (the output never depends on it): 64
        here; mechanisms whose per-batch work amortises over larger batches say more."""
        return 64

    def stamp(self) -> dict[str, Any]:
        return {"mechanism": self.name, "notion": self.notion, "params": self.params()}

    def audit_model(self):
        """This mechanism's output distribution for `ppt audit`: an :class:`ppt.mechanisms.exact.ExactModel`
        (log P(y|x) from the mechanism's own tables), or None when it has none (the audit then says so)."""
        return None

    def privacy_events(self, acc: Accounting, *, diagnostics: bool = False) -> list:
        """What one record's release guarantees, as :mod:`ppt.accounting` events, from public parameters
        and the record's proven per-record figures (its number of perturbed tokens, words the mechanism
        kept). The stamp's ``privacy`` block is rendered from these (:mod:`ppt.mechanisms.privacy`).

        ``diagnostics=True`` may add figures that depend on the raw text (Cape's eps'), for the local
        --diagnostics field only. A mechanism that does not override this has its per-token eps stamped
        as its own claim, never as a proven bound."""
        from ppt.accounting import ClaimedEvent, SelfComposedEvent

        return [
            SelfComposedEvent(
                ClaimedEvent(float(self.eps), f"{self.name}: the mechanism's own claim, not checked by ppt"),
                int(acc.n_perturbed),
            )
        ]

    def signature_params(self) -> dict[str, Any]:
        """The key parameters of the compact stamp signature (:mod:`ppt.mechanisms.signature`), besides
        mechanism, eps, space, policy and version. A plug-in that does not override this gets a short
        hash of its full ``params()`` (``ppt sanitize --stamp full`` writes those)."""
        import hashlib
        import json

        blob = json.dumps(self.params(), sort_keys=True, default=str).encode()
        return {"params": hashlib.sha256(blob).hexdigest()[:8]}

    @classmethod
    def describe(cls, name: str | None = None) -> dict[str, Any]:
        """What ``ppt mechs`` shows about this mechanism, read from the class (nothing is loaded)."""
        policy = getattr(cls, "default_policy", None)
        return {
            "name": name or cls.name,
            "notion": getattr(cls, "notion", ""),
            "summary": getattr(cls, "summary", "") or (cls.__doc__ or "").strip().splitlines()[0],
            "default_eps": cls.default_eps if getattr(cls, "takes_eps", True) else None,  # no eps: no DP claim
            "default_space": getattr(cls, "default_space", None),
            "defaults": getattr(cls, "defaults", {}),
            "params": [p.describe() for p in cls.PARAMS if not p.internal],
            "policy": dataclasses.asdict(policy) if policy is not None else None,
        }


def nonneg(name: str, value: Any) -> float:
    """``value`` as a finite float >= 0, else a ValueError naming ``name`` (mechanism parameters)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number (got {value!r})") from None
    if not math.isfinite(v) or v < 0:
        raise ValueError(f"{name} must be finite and >= 0 (got {value!r})")
    return v


__all__ = ["Mechanism", "Sanitized", "check_eps", "nonneg"]
