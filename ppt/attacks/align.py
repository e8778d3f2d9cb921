"""Which original token each perturbed token stands for: the alignment every token-level attack needs.

A sanitized text is not the original with words swapped in place: mechanisms drop out-of-vocabulary
pieces, rewrite numbers and keep stopwords, so "the i-th token of each" is wrong after the first drop
(the published MTI code compares misaligned positions). Three sources, best first:

1. ``mechanism`` (the sweep, library use): the rows the mechanism itself perturbed, exactly, taken from
   ``TokenMechanism.perturb_rows`` (see :func:`sanitize_aligned`).
2. ``field``: a per-record alignment written by the sanitizer, ``ppt_alignment`` by default::

       "ppt_alignment": [[orig_row, new_row, start, end], ...]     # one entry per perturbed token

   rows index the sanitizing mechanism's space (named in the record's ``ppt.sanitize`` stamp);
   ``[start, end)`` is the character span of the replacement word in the sanitized text. Two-element
   entries ``[orig_row, new_row]`` are accepted (enough for ``knn``; ``mti`` then locates each
   ``new_row`` in the text, see :func:`spans_by_rows`). A dict ``{"pairs": [...]}`` is accepted too.
   The field reveals the original tokens: it belongs to evaluation data, never to what goes remote.
3. ``text`` (fallback): tokenize original and sanitized text with the space and align the two piece
   sequences with a longest-matching-blocks diff (:func:`align_texts`). In-vocabulary word pieces
   become a placeholder, punctuation and other literal pieces act as anchors, numbers match numbers.
   Word pieces pair up inside matching blocks and inside equal-length replaced blocks; other word
   pieces (e.g. where a subword split changed) are counted as ``unaligned`` and left out of the
   rate. Stopwords can be left out (mechanisms that keep them verbatim would otherwise count them
   as recovered). This is a heuristic; prefer an alignment field.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ppt.io import RecordError
from ppt.spaces.tokens import NUMBER, SPACE, WORD, Tokens

ALIGNMENT_FIELD = "ppt_alignment"


@dataclass
class Alignment:
    """Perturbed tokens paired with the original tokens they replaced (rows of one space)."""

    orig_rows: np.ndarray  # int64 [n]; -1 = the original is not in the space's vocabulary
    new_rows: np.ndarray  # int64 [n]
    spans: list[tuple[int, int] | None]  # span of each perturbed token's core in the perturbed text
    source: str  # "mechanism" | "field" | "text"
    orig_words: list[str] | None = None  # original token text when known (text alignment)
    n_unaligned: int = 0  # original word pieces that could not be paired (text alignment)
    extra: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.orig_rows.shape[0])

    def words(self, vocab: list[str]) -> list[str]:
        """Original token text of each pair (from the vocabulary when not recorded)."""
        if self.orig_words is not None:
            return self.orig_words
        return [vocab[r] if r >= 0 else "" for r in self.orig_rows.tolist()]


def piece_spans(tokens: Tokens) -> list[tuple[int, int]]:
    """Character span of each piece's core (its leading whitespace excluded)."""
    out, pos = [], 0
    for lead, core in zip(tokens.lead, tokens.core):
        start = pos + len(lead)
        pos = start + len(core)
        out.append((start, pos))
    return out


# ------------------------------------------------------------------------------------ field


def parse_alignment_field(value: Any, text: str) -> Alignment:
    """Validate an alignment field (see module docstring); RecordError on a malformed one."""
    if isinstance(value, dict):
        value = value.get("pairs")
    if not isinstance(value, list):
        raise RecordError("bad_alignment", "alignment field must be a list of [orig_row, new_row(, start, end)]")
    n = len(value)
    orig = np.empty(n, dtype=np.int64)
    new = np.empty(n, dtype=np.int64)
    spans: list[tuple[int, int] | None] = []
    for i, entry in enumerate(value):
        if not isinstance(entry, list) or len(entry) not in (2, 4) or not all(
            isinstance(x, int) and not isinstance(x, bool) for x in entry
        ):
            raise RecordError("bad_alignment", f"alignment entry {i} must be 2 or 4 integers")
        orig[i], new[i] = entry[0], entry[1]
        if len(entry) == 4:
            s, e = entry[2], entry[3]
            if not 0 <= s <= e <= len(text):
                raise RecordError("bad_alignment", f"alignment entry {i}: span [{s}, {e}) is outside the text")
            spans.append((s, e))
        else:
            spans.append(None)
    if n and (new.min() < 0 or orig.min() < -1):
        raise RecordError("bad_alignment", "alignment rows must be >= 0 (orig_row may be -1)")
    return Alignment(orig, new, spans, "field")


def spans_by_rows(space, text: str, new_rows: np.ndarray) -> list[tuple[int, int] | None]:
    """Locate each perturbed row, in order, in the re-tokenized text (greedy leftmost subsequence).

    Used when only rows are known. A kept token with the same row as a later replacement can take
    that replacement's place; the error stays local (later rows still match in order)."""
    toks = space.tokenize(text)
    spans = piece_spans(toks)
    rows = toks.rows.tolist()
    out: list[tuple[int, int] | None] = []
    j = 0
    for r in new_rows.tolist():
        k = j
        while k < len(rows) and rows[k] != r:
            k += 1
        if k < len(rows):
            out.append(spans[k])
            j = k + 1
        else:
            out.append(None)
    return out


# ------------------------------------------------------------------------------------ text


_W, _N = "\x00w", "\x00n"


def _keys(tokens: Tokens) -> tuple[list[str], list[int]]:
    keys, idx = [], []
    for i, (core, kind, row) in enumerate(zip(tokens.core, tokens.kinds, tokens.rows.tolist())):
        if kind == SPACE:
            continue
        if row >= 0 and kind == WORD:
            keys.append(_W)
        elif kind == NUMBER:
            keys.append(_N)
        else:
            keys.append(core.casefold())
        idx.append(i)
    return keys, idx


def align_texts(space, original: str, perturbed: str, skip_stopwords: bool = False) -> Alignment:
    """Pair the in-vocabulary word pieces of ``original`` with those of ``perturbed`` (module docstring)."""
    from ppt.mechanisms.base import stopwords_en

    o_tok, p_tok = space.tokenize(original), space.tokenize(perturbed)
    o_keys, o_idx = _keys(o_tok)
    p_keys, p_idx = _keys(p_tok)
    p_spans = piece_spans(p_tok)
    stop = stopwords_en() if skip_stopwords else frozenset()
    o_rows, p_rows = o_tok.rows, p_tok.rows

    def evaluated(i: int) -> bool:  # an original piece the attack is scored on
        return o_keys[i] == _W and o_tok.core[o_idx[i]].casefold() not in stop

    pairs: list[tuple[int, int]] = []
    matcher = difflib.SequenceMatcher(None, o_keys, p_keys, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
            for i, j in zip(range(i1, i2), range(j1, j2)):
                if evaluated(i) and p_keys[j] == _W:
                    pairs.append((i, j))
    paired = {i for i, _ in pairs}
    n_unaligned = sum(1 for i in range(len(o_keys)) if evaluated(i) and i not in paired)
    oi = [o_idx[i] for i, _ in pairs]
    pj = [p_idx[j] for _, j in pairs]
    return Alignment(
        orig_rows=o_rows[oi].astype(np.int64) if oi else np.empty(0, np.int64),
        new_rows=p_rows[pj].astype(np.int64) if pj else np.empty(0, np.int64),
        spans=[p_spans[j] for j in pj],
        source="text",
        orig_words=[o_tok.core[i] for i in oi],
        n_unaligned=n_unaligned,
    )


# ------------------------------------------------------------------------------------ mechanism


def sanitize_aligned(mech, texts: list[str], generators: list, space=None) -> tuple[list, list[Alignment | None]]:
    """``mech.sanitize_batch`` plus the exact (orig_row, new_row) pairs of every perturbed token.

    Uses a ``Sanitized.alignment`` attribute when the mechanism provides one (list of
    ``(orig_row, new_row, start, end)``). Otherwise it records what the mechanism's per-token kernel
    received and returned (``TokenMechanism.perturb_rows``, or Cape's ``perturb`` over token ids,
    whose rows are the context model's token ids), splits it by each record's
    ``accounting.n_perturbed`` and locates the spans with :func:`spans_by_rows` in ``mech.space``
    (Cape: pass ``space``). Mechanisms with neither kernel, or whose counts do not add up, get
    ``None``: callers fall back to :func:`align_texts`.
    """
    import torch

    captured: list[tuple[np.ndarray, np.ndarray]] = []
    hook = None
    if callable(getattr(mech, "perturb_rows", None)) and "perturb_rows" not in vars(mech):
        inner = mech.perturb_rows
        hook = "perturb_rows"

        def spy(rows: torch.Tensor, rand: dict):
            new, diag = inner(rows, rand)
            captured.append((rows.detach().cpu().numpy().astype(np.int64), new.detach().cpu().numpy().astype(np.int64)))
            return new, diag

    elif callable(getattr(mech, "perturb", None)) and hasattr(mech, "candidates") and "perturb" not in vars(mech):
        inner = mech.perturb
        hook = "perturb"

        def spy(ids_list, positions, draws):  # Cape: token ids at positions -> candidate columns
            cols, diag = inner(ids_list, positions, draws)
            orig = np.concatenate([np.asarray(ids)[np.asarray(p, dtype=np.int64)] for ids, p in zip(ids_list, positions)] or [np.empty(0, np.int64)])
            new = mech.candidates.detach().cpu()[torch.as_tensor(cols).long().cpu()].numpy()
            captured.append((orig.astype(np.int64), new.astype(np.int64)))
            return cols, diag

    if hook:
        setattr(mech, hook, spy)
    try:
        out = mech.sanitize_batch(texts, generators)
    finally:
        if hook:
            delattr(mech, hook)
    aligns: list[Alignment | None] = []
    if out and all(getattr(s, "alignment", None) is not None for s in out):
        for s in out:
            arr = np.asarray(s.alignment, dtype=np.int64).reshape(-1, 4)
            aligns.append(Alignment(arr[:, 0].copy(), arr[:, 1].copy(), [(int(a), int(b)) for a, b in arr[:, 2:]], "mechanism"))
        return out, aligns
    counts = [int(getattr(s.accounting, "n_perturbed", -1)) for s in out]
    orig = np.concatenate([c[0] for c in captured]) if captured else np.empty(0, np.int64)
    new = np.concatenate([c[1] for c in captured]) if captured else np.empty(0, np.int64)
    space = space if space is not None else getattr(mech, "space", None)
    if space is None or min(counts, default=0) < 0 or sum(counts) != orig.shape[0]:
        return out, [None] * len(out)
    pos = 0
    for s, n in zip(out, counts):
        o, nw = orig[pos : pos + n], new[pos : pos + n]
        pos += n
        aligns.append(Alignment(o, nw, spans_by_rows(space, s.text, nw), "mechanism"))
    return out, aligns
