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

ALWAYS = ("entities", "numbers", "categories")
ENTITY_LABELS = ("PERSON", "NORP", "FAC", "GPE", "LOC")  # spaCy (OntoNotes) labels that name or place a person
ALWAYS_RULE = (
    "besides the ceil(gamma * n) least important eligible words, every word in a chosen class is protected "
    "whatever its POS and importance: entities (spaCy NER " + "/".join(ENTITY_LABELS) + "), numbers (a digit), "
    "categories (ppt.detect's special-category lexicon)"
)


def parse_always(value: object) -> tuple[str, ...]:
    """``"entities,numbers"`` (or a list; ``"none"`` or empty for none) -> the classes, in ALWAYS's order."""
    parts = value.split(",") if isinstance(value, str) else list(value or ())
    names = {str(x).strip().lower() for x in parts if str(x).strip()} - {"none"}
    unknown = sorted(names - set(ALWAYS))
    if unknown:
        raise ValueError(f"always: unknown class {', '.join(unknown)} (known: {', '.join(ALWAYS)}, or none)")
    return tuple(a for a in ALWAYS if a in names)


def _always_mask(mech: Any, texts: list[str], starts: np.ndarray, ends: np.ndarray, bounds: np.ndarray, has_digit):
    """Pieces in a class of ``mech.always``: inside an entity or category span, or (numbers) with a digit."""
    out = has_digit.copy() if "numbers" in mech.always else np.zeros(len(starts), bool)
    spans: list[list[tuple[int, int]]] = [[] for _ in texts]
    if "entities" in mech.always:
        for r, ents in enumerate(mech.tagger.entities(list(texts))):
            spans[r] += [(a, b) for a, b, label in ents if label in ENTITY_LABELS]
    if "categories" in mech.always:
        for r, found in enumerate(mech.category_detector.detect(list(texts))):
            spans[r] += [(sp.start, sp.end) for sp in found]
    for r, (lo, hi) in enumerate(zip(bounds[:-1].tolist(), bounds[1:].tolist())):
        for a, b in spans[r]:
            out[lo:hi] |= (starts[lo:hi] < b) & (ends[lo:hi] > a)
    return out


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
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        if hi > lo:
            ends = np.cumsum([len(a) + len(b) for a, b in zip(lead[lo:hi], core[lo:hi])])
            starts[lo:hi] = ends - np.asarray([len(b) for b in core[lo:hi]], dtype=np.int64)
    piece_ends = starts + np.fromiter((len(c) for c in core), dtype=np.int64, count=n)
    always = _always_mask(mech, list(texts), starts, piece_ends, bounds, has_digit) & is_word & (codes != PUNCT_CODE)
    meta, emails = [], []
    for r, (lo, hi) in enumerate(zip(bounds[:-1].tolist(), bounds[1:].tolist())):
        ws = word_scores[r]
        widx = lo + np.flatnonzero(is_word[lo:hi])
        k[widx], o[widx] = ws.importance, ws.privacy
        cand = lo + np.flatnonzero(eligible[lo:hi])
        gamma = sc.protected_share(mech.lam, ws.entropy) if len(widx) else 0.0
        m = sc.n_protected(gamma, len(cand))
        chosen = cand[np.argsort(k[cand], kind="stable")[:m]]
        why[cand] = R_IMPORTANT
        forced = np.setdiff1d(lo + np.flatnonzero(always[lo:hi]), chosen)
        chosen = np.concatenate([chosen, forced])
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
        meta.append(
            {
                "gamma": gamma,
                "entropy": ws.entropy,
                "n_eligible": int(len(cand)),
                "n_protected": int(m),
                "n_always": int(len(forced)),
            }
        )
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


__all__ = ["ALWAYS", "ALWAYS_RULE", "ENTITY_LABELS", "ProsanBatch", "ProsanTokens", "parse_always", "plan_batch"]
