"""Cape's candidate set: the context model's vocabulary tokens that can stand in a text by themselves.

Why a rule of its own: the candidate set is part of the mechanism's output space (and of its reported
privacy bound through |C|), so it is fixed and data-independent: the vocabulary without special /
added-special tokens, whitespace-only tokens, partial UTF-8 (U+FFFD), control characters and BERT's
``[unusedN]`` placeholders. A candidate's output text is its decoded form without leading whitespace
(and without WordPiece's ``##``).
"""

from __future__ import annotations

import re
import unicodedata

import numpy as np
import torch

CANDIDATE_RULE = "vocabulary minus special/added-special tokens, whitespace-only, U+FFFD (partial UTF-8), control-character and [unusedN] tokens"
_UNUSED_RE = re.compile(r"^\[unused\d+\]$")


def candidate_set(tokenizer, n_rows: int) -> tuple[torch.Tensor, list[str]]:
    """Candidate ids and their output texts (see the module docstring and ``CANDIDATE_RULE``)."""
    n = min(len(tokenizer), n_rows)
    special = set(int(i) for i in tokenizer.all_special_ids)
    for tid, tok in getattr(tokenizer, "added_tokens_decoder", {}).items():
        if getattr(tok, "special", False):
            special.add(int(tid))
    texts = tokenizer.batch_decode(
        [[i] for i in range(n)], skip_special_tokens=False, clean_up_tokenization_spaces=False
    )
    prefix = None
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None and type(backend.model).__name__ == "WordPiece":
        prefix = getattr(backend.model, "continuing_subword_prefix", "##") or None
    ids, out = [], []
    for i, t in enumerate(texts):
        if i in special:
            continue
        s = t.lstrip()
        if prefix and s.startswith(prefix) and len(s) > len(prefix):
            s = s[len(prefix) :]
        if (
            not s.strip()
            or "\ufffd" in s
            or _UNUSED_RE.match(s)
            or any(unicodedata.category(ch) == "Cc" and not ch.isspace() for ch in s)
        ):
            continue
        ids.append(i)
        out.append(s)
    return torch.tensor(ids, dtype=torch.long), out


def output_texts(candidates: torch.Tensor, texts: list[str], n_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """The candidates' output texts as object arrays: by candidate column, and by token id (None for
    a token that is not a candidate)."""
    by_column = np.empty(len(texts), dtype=object)
    by_column[:] = texts
    by_id = np.full(n_rows, None, dtype=object)
    by_id[candidates.numpy()] = by_column
    return by_column, by_id


__all__ = ["CANDIDATE_RULE", "candidate_set", "output_texts"]
