"""Tokenizers that map text onto the rows of an embedding space.

Three shapes cover the spaces ppt ships:
- ``TiktokenTokenizer``: a tiktoken BPE (cl100k_base) restricted to a word subset of its vocabulary;
  every BPE token whose stripped, lower-cased text is one of the space's words maps to that row.
- ``WordTokenizer``: words/numbers/punctuation by regex, looked up lower-cased (GloVe).
- ``HFTokenizer``: a Hugging Face tokenizer whose whole vocabulary is the space (model input
  embeddings), pieces cut by the tokenizer's character offsets.
The id -> row maps are numpy lookup arrays, so mapping a text's tokens is one vectorized gather.
"""

from __future__ import annotations

import re
from typing import Protocol

import numpy as np

from ppt.spaces.tokens import Tokens, kind_of, split_lead


class SpaceTokenizer(Protocol):
    def tokenize(self, text: str) -> Tokens: ...


def _tokens_from_pieces(pieces: list[str], rows: np.ndarray, ids: np.ndarray | None = None) -> Tokens:
    lead, core = zip(*(split_lead(p) for p in pieces)) if pieces else ((), ())
    return Tokens(
        lead=list(lead),
        core=list(core),
        rows=rows.astype(np.int64, copy=False),
        kinds=[kind_of(c) for c in core],
        ids=ids,
    )


class TiktokenTokenizer:
    """A tiktoken encoding whose token ids map to space rows through ``id_to_row`` (-1 = OOV).

    Each token id's (lead, core, kind) is computed once and memoised: text is Zipfian, so after a few
    records nearly every piece is a dictionary hit. Tokens that are not valid UTF-8 on their own
    (pieces of a multi-byte character) send the whole text through tiktoken's offset decoder.
    """

    def __init__(self, encoding, id_to_row: np.ndarray):
        self.encoding = encoding
        self.id_to_row = id_to_row
        self._pieces: dict[int, tuple[str, str, str] | None] = {}

    def _piece(self, tid: int) -> tuple[str, str, str] | None:
        try:
            text = self.encoding.decode_single_token_bytes(tid).decode("utf-8")
        except UnicodeDecodeError:
            return None
        lead, core = split_lead(text)
        return lead, core, kind_of(core)

    def tokenize(self, text: str) -> Tokens:
        ids = np.asarray(self.encoding.encode(text, disallowed_special=()), dtype=np.int64)
        if ids.size == 0:
            return _tokens_from_pieces([], ids)
        memo = self._pieces
        pieces = []
        for tid in ids.tolist():
            p = memo.get(tid, False)
            if p is False:
                p = memo[tid] = self._piece(tid)
            if p is None:
                return self._tokenize_by_offsets(ids)
            pieces.append(p)
        lead, core, kinds = (list(x) for x in zip(*pieces))
        return Tokens(lead=lead, core=core, rows=self.id_to_row[ids].astype(np.int64, copy=False), kinds=kinds, ids=ids)

    def _tokenize_by_offsets(self, ids: np.ndarray) -> Tokens:
        decoded, offsets = self.encoding.decode_with_offsets(ids.tolist())
        bounds = list(offsets) + [len(decoded)]
        pieces = [decoded[bounds[i] : bounds[i + 1]] for i in range(len(offsets))]
        return _tokens_from_pieces(pieces, self.id_to_row[ids], ids)


_WORD_SPLIT = re.compile(r"\s*(?:[^\W\d_]+(?:['’][^\W\d_]+)?|\d+(?:[.,]\d+)*|[^\w\s]|\S)", re.UNICODE)


class WordTokenizer:
    """Regex word tokenizer over a lower-cased word vocabulary (GloVe)."""

    def __init__(self, vocab: list[str]):
        self.index = {w: i for i, w in enumerate(vocab)}

    def tokenize(self, text: str) -> Tokens:
        pieces = _WORD_SPLIT.findall(text)  # trailing whitespace is not a piece
        get = self.index.get
        rows = np.fromiter((get(p.strip().lower(), -1) for p in pieces), dtype=np.int64, count=len(pieces))
        return _tokens_from_pieces(pieces, rows)


class HFTokenizer:
    """A Hugging Face fast tokenizer whose vocabulary ids are the space's rows."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer

    def tokenize(self, text: str) -> Tokens:
        enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        ids = np.asarray(enc["input_ids"], dtype=np.int64)
        offsets = enc["offset_mapping"]
        pieces = []
        prev_end = 0
        for _, end in offsets:
            pieces.append(text[prev_end:end] if end > prev_end else "")
            prev_end = max(prev_end, end)
        return _tokens_from_pieces(pieces, ids.copy(), ids)
