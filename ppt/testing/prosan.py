"""Test helpers for ProSan: a deterministic tagger (no spaCy) and a tiny random masked LM directory.

The tagger splits on whitespace and punctuation and tags by rule: digits -> NUM, NLTK stopwords ->
DET, punctuation -> PUNCT, a capitalised word -> PROPN, words in ``VERBS`` -> VERB, other words -> NOUN.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

_TOKEN = re.compile(r"\w+(?:[-.@']\w+)*|[^\w\s]")
VERBS = frozenset({"went", "is", "are", "was", "lives", "works", "reports", "runs", "said"})


class RuleTagger:
    """``tagger(texts) -> [[(start, end, pos), ...], ...]`` by the rules in the module docstring."""

    name = "rule-tagger"

    def __call__(self, texts: Sequence[str]) -> list[list[tuple[int, int, str]]]:
        from ppt.mechanisms.policy import stopwords_en

        stop = stopwords_en()
        out = []
        for text in texts:
            tags = []
            for m in _TOKEN.finditer(text):
                w = m.group()
                if any(c.isdigit() for c in w):
                    pos = "NUM"
                elif not w[0].isalnum():
                    pos = "PUNCT"
                elif w.lower() in stop:
                    pos = "DET"
                elif w.lower() in VERBS:
                    pos = "VERB"
                elif w[0].isupper():
                    pos = "PROPN"
                else:
                    pos = "NOUN"
                tags.append((m.start(), m.end(), pos))
            out.append(tags)
        return out

    def entities(self, texts: Sequence[str]) -> list[list[tuple[int, int, str]]]:
        """Named entities by rule: a capitalised word that does not start a sentence is a PERSON."""
        out = []
        for text in texts:
            ents, prev = [], "."
            for m in _TOKEN.finditer(text):
                w = m.group()
                if w[0].isupper() and w.isalpha() and prev not in (".", "!", "?"):
                    ents.append((m.start(), m.end(), "PERSON"))
                prev = w
            out.append(ents)
        return out


MLM_WORDS = (
    "the and of to in is apple banana cherry grape lemon mango melon olive peach pear plum berry kiwi lime date "
    "fig guava papaya quince raisin orange apricot almond walnut pecan cashew carrot celery onion garlic ginger "
    "pepper potato tomato paris london doctor teacher farmer city name age"
).split()


def make_tiny_masked_lm(path: str | Path, *, seed: int = 0) -> Path:
    """Save a random 2-layer BERT masked LM over a small word vocabulary (plus specials and a few
    ``##`` pieces) to ``path``; return it (an existing one is reused)."""
    path = Path(path)
    if (path / "config.json").is_file():
        return path
    from ppt.models._quiet import quiet_loading
    from ppt.testing.models import bert_tokenizer, tiny_bert

    vocab = [
        "[PAD]",
        "[UNK]",
        "[CLS]",
        "[SEP]",
        "[MASK]",
        *list("abcdefghijklmnopqrstuvwxyz"),
        "##s",
        "##ing",
        ".",
        ",",
        *MLM_WORDS,
    ]
    tok = bert_tokenizer(vocab)
    model = tiny_bert(len(vocab), seed=seed, max_position_embeddings=128, pad_token_id=0)
    path.mkdir(parents=True, exist_ok=True)
    with quiet_loading(progress=False):
        tok.save_pretrained(path)
        model.save_pretrained(path)
    return path


__all__ = ["MLM_WORDS", "RuleTagger", "VERBS", "make_tiny_masked_lm"]
