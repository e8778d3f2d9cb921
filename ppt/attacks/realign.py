"""Which original token each perturbed token stands for, re-derived for attacks and metrics: from an
alignment field, the mechanism's own pairs, or the texts themselves.

A sanitized text is not the original with words swapped in place: mechanisms drop out-of-vocabulary
pieces, rewrite numbers and keep stopwords, so "the i-th token of each" is wrong after the first drop
(the published MTI code compares misaligned positions). Three sources, best first:

1. ``mechanism`` (the sweep, library use): the rows the mechanism itself perturbed, exactly, as its
   pipeline reports them (``Sanitized.pairs``, see :func:`sanitize_aligned`).
2. ``field``: a per-record alignment written by the sanitizer, ``ppt_alignment`` by default::

       "ppt_alignment": [[orig_row, new_row, start, end], ...]     # one entry per perturbed token

   rows index the sanitizing mechanism's space (named in the record's ``ppt.sanitize`` stamp);
   ``[start, end)`` is the character span of the replacement word in the sanitized text. Two-element
   entries ``[orig_row, new_row]`` are accepted (enough for ``knn``; ``mti`` then locates each
   ``new_row`` in the text, see :func:`ppt.mechanisms.alignment.spans_by_rows`). A dict ``{"pairs": [...]}`` is accepted too.
   The field reveals the original tokens: it belongs to evaluation data, never to what goes remote.
3. ``text`` (fallback): re-derive the pairs from the original and sanitized texts (:func:`align_texts`).
   Token mechanisms rewrite a text piece by piece (each in-vocabulary piece becomes one vocabulary
   word with the original's spacing; numbers get fresh digits; punctuation and stopwords may be kept;
   out-of-vocabulary pieces are dropped or replaced), so :func:`align_parse` parses the sanitized text
   as such a rewrite of the original's pieces (longest vocabulary match first, whitespace where the
   original had it). On the InferDPT setup (BBC prefixes, RANTEXT and CusText+ at eps 6) it recovers
   exactly the pairs the mechanism produced. When no parse exists (another tokenizer, hand-edited
   text) the ``text-diff`` heuristic (:func:`align_diff`) pairs word pieces inside matching blocks of
   a diff and counts the rest as ``unaligned``. Stopwords can be left out of the scored set
   (mechanisms that keep them verbatim would otherwise count them as recovered).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ppt.io import RecordError
from ppt.mechanisms.alignment import piece_spans, spans_by_rows
from ppt.mechanisms.policy import stopwords_en
from ppt.spaces.tokens import NUMBER, PUNCT, SPACE, WORD, Tokens

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
        if (
            not isinstance(entry, list)
            or len(entry) not in (2, 4)
            or not all(isinstance(x, int) and not isinstance(x, bool) for x in entry)
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


def align_diff(space, original: str, perturbed: str, skip_stopwords: bool = False) -> Alignment:
    """The diff heuristic: pair in-vocabulary word pieces inside matching or equal-length blocks."""
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
        source="text-diff",
        orig_words=[o_tok.core[i] for i in oi],
        n_unaligned=n_unaligned,
    )


_INDEX: dict[tuple[str, str], tuple[dict[str, int], int]] = {}
MAX_STATES = 32  # parse positions kept per piece (bounds the cost of ambiguous segmentations)


def _vocab_index(space) -> tuple[dict[str, int], int]:
    key = (space.name, getattr(getattr(space, "artifact", None), "content_hash", ""))
    if key not in _INDEX:
        index: dict[str, int] = {}
        for i, w in enumerate(space.vocab):
            index.setdefault(w.lower(), i)
        _INDEX[key] = (index, max((len(w) for w in index), default=1))
    return _INDEX[key]


def _same_format(core: str, s: str, a: int) -> int | None:
    """End of a same-format number (digits may differ) starting at ``a``, else None."""
    b = a + len(core)
    if b > len(s):
        return None
    for x, y in zip(core, s[a:b]):
        if x.isdigit() != y.isdigit() or (not x.isdigit() and x.lower() != y.lower()):
            return None
    return b


def align_parse(space, original: str, perturbed: str, skip_stopwords: bool = False) -> Alignment | None:
    """Exact-as-possible alignment: parse ``perturbed`` as the original's pieces, each replaced by one
    vocabulary word (in-vocabulary pieces), kept verbatim, given fresh digits (numbers), replaced by a
    vocabulary word or dropped (others), with any whitespace between pieces.

    The parse runs left to right keeping up to MAX_STATES positions per piece (longest vocabulary match
    first) and back-tracks from the end of the text; None when no parse reaches the end."""
    toks = space.tokenize(original)
    index, maxlen = _vocab_index(space)
    s = perturbed
    sl = s.lower()
    n_chars = len(s)

    def skip_ws(a: int) -> int:
        while a < n_chars and s[a].isspace():
            a += 1
        return a

    def options(j: int, raw: int, a: int):
        """(end, pair or None) for piece j starting at ``a`` (``raw``: before skipping whitespace,
        which a dropped piece leaves for the next one)."""
        core, kind, row = toks.core[j], toks.kinds[j], int(toks.rows[j])
        if kind == SPACE or not core:
            yield raw, None
            return
        if kind == WORD and row >= 0:
            for b in range(min(n_chars, a + maxlen), a, -1):
                r = index.get(sl[a:b])
                if r is not None:
                    yield b, (j, a, b, r)
            return
        lit = core.lower()
        if sl.startswith(lit, a):
            yield a + len(lit), None
        if kind == NUMBER:
            b = _same_format(core, s, a)
            if b is not None:
                yield b, None
        yield raw, None  # dropped
        if kind != PUNCT:  # replaced by a uniformly drawn word, or a number perturbed as a word
            for b in range(min(n_chars, a + maxlen), a, -1):
                if sl[a:b] in index:
                    yield b, None

    reach: list[dict[int, tuple[int, tuple | None]]] = [{0: (-1, None)}]
    for j in range(len(toks)):
        nxt: dict[int, tuple[int, tuple | None]] = {}
        needs_space = bool(toks.lead[j]) and j > 0
        for a in reach[-1]:
            a2 = skip_ws(a)
            spaced = a2 > a or a == 0
            for b, info in options(j, a, a2):
                # a piece written with leading whitespace is preceded by whitespace in the output
                if needs_space and not spaced and b > a:
                    continue
                if b not in nxt and len(nxt) < MAX_STATES:
                    nxt[b] = (a, info)
        if not nxt:
            return None
        reach.append(nxt)
    end = next((a for a in reach[-1] if skip_ws(a) == n_chars), None)
    if end is None:
        return None
    found = []
    pos = end
    for j in range(len(toks), 0, -1):
        prev, info = reach[j][pos]
        if info is not None:
            found.append(info)
        pos = prev
    found.reverse()
    stop = stopwords_en() if skip_stopwords else frozenset()
    kept = [f for f in found if toks.core[f[0]].casefold() not in stop]
    return Alignment(
        orig_rows=np.asarray([int(toks.rows[j]) for j, *_ in kept], dtype=np.int64),
        new_rows=np.asarray([r for *_, r in kept], dtype=np.int64),
        spans=[(a, b) for _, a, b, _ in kept],
        source="text",
        orig_words=[toks.core[j] for j, *_ in kept],
    )


def align_texts(space, original: str, perturbed: str, skip_stopwords: bool = False) -> Alignment:
    """Text alignment: :func:`align_parse` (exact when the sanitized text is a piece-by-piece
    rewrite of the original), else the :func:`align_diff` heuristic."""
    al = align_parse(space, original, perturbed, skip_stopwords)
    return al if al is not None else align_diff(space, original, perturbed, skip_stopwords)


# ------------------------------------------------------------------------------------ mechanism


def sanitize_aligned(
    mech, texts: list[str], generators: list, space=None, *, reproducible: bool = True
) -> tuple[list, list[Alignment | None]]:
    """``mech.sanitize_batch`` plus each record's exact (orig_row, new_row) pairs as an :class:`Alignment`.

    The pairs are the mechanism's own (``Sanitized.pairs``: rows of its space, or the context model's
    token ids for Cape); spans are located with :func:`~ppt.mechanisms.alignment.spans_by_rows` in
    ``space`` (default ``mech.space``; without one they are None), as the ``ppt_alignment`` field has
    them. A mechanism that reports no pairs gets ``None``: callers fall back to :func:`align_texts`.
    """
    out = mech.sanitize_batch(texts, generators, reproducible=reproducible)
    space = space if space is not None else getattr(mech, "space", None)
    aligns: list[Alignment | None] = []
    for s in out:
        if getattr(s, "pairs", None) is None:
            aligns.append(None)
            continue
        pairs = np.asarray(s.pairs, dtype=np.int64).reshape(-1, 4)
        new = pairs[:, 1].copy()
        spans = spans_by_rows(space, s.text, new) if space is not None else [None] * len(new)  # no space: rows only
        aligns.append(Alignment(pairs[:, 0].copy(), new, spans, "mechanism"))
    return out, aligns


__all__ = [
    "ALIGNMENT_FIELD",
    "Alignment",
    "align_diff",
    "align_parse",
    "align_texts",
    "parse_alignment_field",
    "sanitize_aligned",
]
