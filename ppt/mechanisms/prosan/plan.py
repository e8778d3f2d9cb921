"""Which words of a batch ProSan protects, and how: its plan, made from the tagger's and the LM's scores.

Apart from the mechanism because it is the paper's selection rule on its own (steps 1-4 of
:mod:`ppt.mechanisms.prosan.mechanism`): POS-eligible words, the protected share gamma from the entropy,
the ceil(gamma * n) least important words, and the action each protected word gets (masked-LM
replacement, fresh digits, or a fresh-format e-mail address).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from ppt.mechanisms.policy import (
    DIGITS,
    DROP,
    KEEP,
    PERTURB,
    R_IMPORTANT,
    R_NUMBER,
    R_PERTURBED,
    R_POS,
    R_PUNCT,
    R_WHITESPACE,
    UNIFORM,
)
from ppt.mechanisms.prosan import scores as sc
from ppt.mechanisms.prosan.formats import is_email
from ppt.mechanisms.prosan.tagging import word_pieces
from ppt.mechanisms.prosan.threads import torch_threads
from ppt.spaces.tokens import PUNCT_CODE, SPACE_CODE, TokenBatch, Tokens, kind_codes, kind_of


@dataclass
class ProsanBatch(TokenBatch):
    """A batch's word pieces with ProSan's plan and scores attached (built by ``tokenize_batch``)."""

    texts: list[str] = dataclasses.field(default_factory=list)
    actions: np.ndarray | None = None
    why: np.ndarray | None = None
    starts: np.ndarray | None = None  # character start of each piece's core in its text
    k: np.ndarray | None = None  # K_w per piece (0 for non-words)
    o: np.ndarray | None = None  # O_w per piece
    meta: list[dict[str, Any]] = dataclasses.field(default_factory=list)  # per record: gamma, H, counts
    emails: list[list[str]] = dataclasses.field(default_factory=list)  # per record: its protected e-mail addresses


@dataclass
class ProsanTokens(Tokens):
    """One text's pieces with ProSan's plan (``ProSan.tokenizer.tokenize``)."""

    actions: np.ndarray | None = None
    why: np.ndarray | None = None


def plan_batch(mech: Any, texts: list[str], reproducible: bool) -> ProsanBatch:
    """Word pieces, POS, scores and the plan of every text of the batch (``mech``: a prepared ProSan;
    one record at a time when ``reproducible``)."""
    tags = mech.tagger(list(texts))
    leads, cores, poss = [], [], []
    for t, tg in zip(texts, tags):
        a, b, p = word_pieces(t, tg)
        leads.append(a)
        cores.append(b)
        poss.append(p)
    lens = [len(c) for c in cores]
    bounds = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    lead = [x for a in leads for x in a]
    core = [x for b in cores for x in b]
    pos = np.asarray([x for p in poss for x in p], dtype=object)
    kinds = [kind_of(c) for c in core]
    codes = kind_codes(kinds)
    is_word = codes != SPACE_CODE
    with torch_threads(mech.threads):
        word_scores = mech.score(
            list(texts), leads, cores, [is_word[lo:hi] for lo, hi in zip(bounds[:-1], bounds[1:])], reproducible
        )
    n = len(core)
    k = np.zeros(n)
    o = np.zeros(n)
    actions = np.full(n, KEEP, np.int8)
    why = np.full(n, R_POS, np.int8)
    why[codes == SPACE_CODE] = R_WHITESPACE
    why[codes == PUNCT_CODE] = R_PUNCT
    email = np.fromiter((mech.emails and "@" in c and is_email(c) for c in core), dtype=bool, count=n)
    eligible = is_word & (codes != PUNCT_CODE) & (np.isin(pos, mech.pos) | email)
    has_digit = np.fromiter((any(ch.isdigit() for ch in c) for c in core), dtype=bool, count=n)
    starts = np.zeros(n, np.int64)
    meta, emails = [], []
    for r, (lo, hi) in enumerate(zip(bounds[:-1].tolist(), bounds[1:].tolist())):
        ws = word_scores[r]
        widx = lo + np.flatnonzero(is_word[lo:hi])
        k[widx], o[widx] = ws.importance, ws.privacy
        ends = np.cumsum([len(a) + len(b) for a, b in zip(lead[lo:hi], core[lo:hi])])
        starts[lo:hi] = ends - np.asarray([len(b) for b in core[lo:hi]], dtype=np.int64) if hi > lo else starts[lo:hi]
        cand = lo + np.flatnonzero(eligible[lo:hi])
        gamma = sc.protected_share(mech.lam, ws.entropy) if len(widx) else 0.0
        m = sc.n_protected(gamma, len(cand))
        chosen = cand[np.argsort(k[cand], kind="stable")[:m]]
        why[cand] = R_IMPORTANT
        mail = chosen[email[chosen]]
        chosen = chosen[~email[chosen]]
        num = chosen[has_digit[chosen]]
        word = chosen[~has_digit[chosen]]
        actions[num] = DIGITS if mech.policy.numbers == "random-digits" else DROP
        why[num] = R_NUMBER
        mail = np.sort(mail)
        actions[mail], why[mail] = UNIFORM, R_PERTURBED
        emails.append([core[j] for j in mail.tolist()])
        actions[word], why[word] = PERTURB, R_PERTURBED
        meta.append({"gamma": gamma, "entropy": ws.entropy, "n_eligible": int(len(cand)), "n_protected": int(m)})
    rows = np.asarray([mech._vocab_id(c) for c in core], dtype=np.int64)
    tb = ProsanBatch(
        lead=lead,
        core=core,
        kinds=kinds,
        rows=rows,
        codes=codes,
        bounds=bounds,
        texts=list(texts),
        actions=actions,
        why=why,
        starts=starts,
        k=k,
        o=o,
        meta=meta,
        emails=emails,
    )
    return tb


__all__ = ["ProsanBatch", "ProsanTokens", "plan_batch"]
