"""Typed placeholders: each detected span becomes ``<KIND_n>`` (``<PERSON_1>``, ``<HEALTH_2>``), the rest of the
prompt passes through; with ``--mapping`` and ``ppt restore`` the real values come back into the answer.

Why a mechanism of its own: it is the readable mode (``--preset readable``) that hides what it replaces
completely, at the speed of the detector. A placeholder reveals the span's kind and which spans of the record
are equal (the same value gets the same number, so an answer can tell two people apart and restore maps it
back), nothing of the value: given the detection, the release does not depend on the replaced values (0 per
span, conditional on what the detector marked). What the detector misses is released raw, and detection depends
on the text: the stamp states both.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

import numpy as np

from ppt.mechanisms.accounting import Accounting
from ppt.mechanisms.base import Mechanism, Sanitized
from ppt.mechanisms.params import Param

_WORDS = re.compile(r"\S+")
CONDITION = "the detected spans, their kinds and which of them are equal (detection depends on the text)"


class Placeholder(Mechanism):
    """Each detected span -> ``<KIND_n>``, numbered per distinct value within the record."""

    name: ClassVar[str] = "placeholder"
    notion: ClassVar[str] = "suppression of detected spans (0 per span given the detection; undetected text raw)"
    summary: ClassVar[str] = "Typed placeholders for detected spans (<PERSON_1>), restorable; needs --protect detected"
    default_eps: ClassVar[float] = 1.0  # placeholder value: no eps (the replaced values are not sampled)
    takes_eps: ClassVar[bool] = False
    default_space: ClassVar[str | None] = None
    reports_pairs: ClassVar[bool] = False
    needs_detector: ClassVar[bool] = True
    no_eps_because: ClassVar[str] = "it samples nothing"
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param("numbered", True, "number distinct values per kind (<PERSON_1>, <PERSON_2>); false: <PERSON>", "bool"),
    )

    def __init__(
        self,
        eps: float = 1.0,
        space: Any = None,
        policy: Any = None,
        device: str = "auto",
        quiet: bool = False,  # nothing to load, nothing to report
        **params: Any,
    ):
        p = self.check_params(params)
        super().__init__(eps)
        if self.eps != self.default_eps:
            raise ValueError(f"{self.name} has no eps ({self.no_eps_because}): leave --eps out")
        if space is not None:
            raise ValueError(f"{self.name} uses no embedding space: leave --space out")
        self.detector: Any = None  # set by the sanitize spec under --protect detected
        self.configure(p)

    def configure(self, p: dict[str, Any]) -> None:
        """Take the checked PARAMS (a subclass's own)."""
        self.numbered = p["numbered"]

    def params(self) -> dict[str, Any]:
        return {"numbered": self.numbered}

    def signature_params(self) -> dict[str, Any]:
        return {} if self.numbered else {"numbered": False}

    def sanitize_batch(
        self, texts: list[str], generators: list[np.random.Generator], *, reproducible: bool = True
    ) -> list[Sanitized]:
        if self.detector is None:
            raise ValueError(f"{self.name} replaces detected spans: add --protect detected")
        return self.perturb(texts, self.detector.detect(texts), generators)

    def perturb(self, texts: list[str], spans: list[list], generators: list | None = None) -> list[Sanitized]:
        """Each text with its spans replaced (the mechanism's one step after detection; nothing is drawn)."""
        return [self._one(text, found) for text, found in zip(texts, spans)]

    def _one(self, text: str, spans: list) -> Sanitized:
        parts, mapping, at = [], [], 0
        numbers: dict[tuple[str, str], int] = {}
        per_kind: dict[str, int] = {}
        inside = 0
        for sp in spans:
            original = text[sp.start : sp.end]
            key = (sp.kind, " ".join(original.lower().split()))
            if key not in numbers:
                per_kind[sp.kind] = per_kind.get(sp.kind, 0) + 1
                numbers[key] = per_kind[sp.kind]
            surrogate = f"<{sp.kind}_{numbers[key]}>" if self.numbered else f"<{sp.kind}>"
            parts += [text[at : sp.start], surrogate]
            mapping.append({"surrogate": surrogate, "original": original, "kind": sp.kind})
            inside += len(_WORDS.findall(original))
            at = sp.end
        parts.append(text[at:])
        n_words = len(_WORDS.findall(text))
        acc = Accounting(n_tokens=n_words, n_perturbed=len(spans), kept={"undetected": max(0, n_words - inside)})
        return Sanitized("".join(parts), acc, None, mapping)

    def privacy_events(self, acc: Accounting, *, diagnostics: bool = False) -> list:
        """0 per replaced span given the detection (a conditional figure: the detection reads the text). The
        undetected words are unprotected: the stamp lists them by policy, --diagnostics counts them."""
        from ppt.accounting import ConditionalDpEvent, SelfComposedEvent

        n = int(acc.n_perturbed)
        return [SelfComposedEvent(ConditionalDpEvent(0.0, CONDITION), n)] if n else []


__all__ = ["Placeholder"]
