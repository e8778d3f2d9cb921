"""ProSan (papers/prosan.txt): importance- and self-information-driven prompt anonymization (no DP).

Why a package: the scores (:mod:`.scores`: importance, self-information, protected share), the sampler
(:mod:`.replace`: candidate sets and Eq. 10), the word tagger (:mod:`.tagging`) and WordNet similarity
(:mod:`.wordnet`) are tested on their own; :mod:`.mechanism` wires them into the token pipeline;
:mod:`.lite` is the distilled one-pass mode and :mod:`.distill` trains it.
"""

from __future__ import annotations

from ppt.mechanisms.prosan.mechanism import NO_DP, ProSan

__all__ = ["NO_DP", "ProSan"]
