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
from itertools import chain
from typing import Protocol

import numpy as np

from ppt import parallel
from ppt.spaces.tokens import (
    KIND_CODE,
    TokenBatch,
    Tokens,
    kind_codes,
    kind_names,
    kind_of,
    split_lead,
)

MIN_SHARED_TEXTS = 8  # texts in a batch below which one thread encodes them all


class SpaceTokenizer(Protocol):
    def tokenize(self, text: str) -> Tokens: ...


def tokenize_batch(tokenizer: SpaceTokenizer, texts: list[str]) -> TokenBatch:
    """Several texts at once: the tokenizer's own ``tokenize_batch`` when it has one."""
    batch = getattr(tokenizer, "tokenize_batch", None)
    return batch(texts) if batch is not None else TokenBatch.concat([tokenizer.tokenize(t) for t in texts])


def _tokens_from_pieces(pieces: list[str], rows: np.ndarray, ids: np.ndarray | None = None) -> Tokens:
    lead, core = zip(*(split_lead(p) for p in pieces)) if pieces else ((), ())
    kinds = [kind_of(c) for c in core]
    return Tokens(
        lead=list(lead),
        core=list(core),
        rows=rows.astype(np.int64, copy=False),
        kinds=kinds,
        ids=ids,
        codes=kind_codes(kinds),
    )


class TiktokenTokenizer:
    """A tiktoken encoding whose token ids map to space rows through ``id_to_row`` (-1 = OOV).

    Each token id's lead, core and kind are computed once and kept in arrays indexed by id: text is
    Zipfian, so after a few records nearly every piece is known, and a text's pieces are three gathers.
    Tokens that are not valid UTF-8 on their own (pieces of a multi-byte character) send the whole
    text through tiktoken's offset decoder.
    """

    _UNKNOWN, _KNOWN, _PARTIAL = 0, 1, 2  # per-id state: not seen yet, memoised, not valid UTF-8 alone

    def __init__(self, encoding, id_to_row: np.ndarray):
        self.encoding = encoding
        self.id_to_row = id_to_row
        self._state = np.zeros(0, dtype=np.uint8)
        self._lead = np.empty(0, dtype=object)
        self._core = np.empty(0, dtype=object)
        self._codes = np.zeros(0, dtype=np.int8)
        self._grow(int(getattr(encoding, "n_vocab", 0)))  # every id up front: readers never see a resize

    def _grow(self, size: int) -> None:
        """Room for ids below ``size``."""
        old = self._state.size
        self._state = np.concatenate([self._state, np.zeros(size - old, dtype=np.uint8)])
        self._lead = np.concatenate([self._lead, np.full(size - old, "", dtype=object)])
        self._core = np.concatenate([self._core, np.full(size - old, "", dtype=object)])
        self._codes = np.concatenate([self._codes, np.zeros(size - old, dtype=np.int8)])

    def _learn(self, ids: np.ndarray) -> None:
        """Memoise the pieces of ids not seen before."""
        if int(ids.max()) >= self._state.size:
            self._grow(max(int(ids.max()) + 1, getattr(self.encoding, "n_vocab", 0)))
        new = np.unique(ids[self._state[ids] == self._UNKNOWN])
        for tid in new.tolist():
            try:
                text = self.encoding.decode_single_token_bytes(tid).decode("utf-8")
            except UnicodeDecodeError:
                self._state[tid] = self._PARTIAL
                continue
            lead, core = split_lead(text)
            self._lead[tid], self._core[tid], self._codes[tid] = lead, core, KIND_CODE[kind_of(core)]
            self._state[tid] = self._KNOWN

    def _encode(self, text: str) -> list[int]:
        """Token ids, special-token text encoded as ordinary text (``encode(text, disallowed_special=())``)."""
        encode = getattr(self.encoding, "encode_ordinary", None)
        return encode(text) if encode is not None else self.encoding.encode(text, disallowed_special=())

    def _known(self, ids: np.ndarray) -> bool:
        """Memoise the ids' pieces; False when one is not valid UTF-8 alone."""
        if ids.size == 0:
            return True
        if int(ids.max()) >= self._state.size or not self._state[ids].all():
            self._learn(ids)
        return bool((self._state[ids] == self._KNOWN).all())

    def tokenize(self, text: str) -> Tokens:
        ids = np.asarray(self._encode(text), dtype=np.int64)
        if ids.size == 0:
            return _tokens_from_pieces([], ids)
        if not self._known(ids):
            return self._tokenize_by_offsets(ids)
        codes = self._codes[ids]
        return Tokens(
            lead=self._lead[ids].tolist(),
            core=self._core[ids].tolist(),
            rows=self.id_to_row[ids].astype(np.int64, copy=False),
            kinds=kind_names(codes),
            ids=ids,
            codes=codes,
        )

    def tokenize_batch(self, texts: list[str]) -> TokenBatch:
        """``tokenize`` for several texts, with one gather per array for the whole batch."""
        encoded: list[list[int]] = [[] for _ in texts]

        def encode(i: int) -> None:
            encoded[i] = self._encode(texts[i])

        parallel.for_each(encode, len(texts), share=len(texts) >= MIN_SHARED_TEXTS)  # the encoder releases the GIL
        lens = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
        ids = np.fromiter(chain.from_iterable(encoded), dtype=np.int64, count=int(lens.sum()))
        if not self._known(ids):
            return TokenBatch.concat([self.tokenize(t) for t in texts])
        codes = self._codes[ids]
        return TokenBatch(
            lead=self._lead[ids].tolist(),
            core=self._core[ids].tolist(),
            kinds=kind_names(codes),
            rows=self.id_to_row[ids].astype(np.int64, copy=False),
            codes=codes,
            bounds=np.concatenate([[0], np.cumsum(lens)]).astype(np.int64),
        )

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

    PIECE_MEMO = 1 << 16  # distinct pieces remembered by tokenize_batch (cleared when full)

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self._pieces: dict[str, tuple[str, str, str]] = {}

    def tokenize_batch(self, texts: list[str]) -> TokenBatch:
        """``tokenize`` for several texts: one batched call of the fast tokenizer (its Rust side encodes
        the texts in parallel) and each distinct piece's lead / core / kind worked out once (text is
        Zipfian: after a few records nearly every piece is known)."""
        if not texts:
            return TokenBatch.concat([])
        enc = self.tokenizer(list(texts), add_special_tokens=False, return_offsets_mapping=True)
        memo = self._pieces
        if len(memo) > self.PIECE_MEMO:
            memo.clear()
        lead, core, kinds, lens = [], [], [], []
        for text, offsets in zip(texts, enc["offset_mapping"]):
            prev_end = 0
            for _, end in offsets:
                piece = text[prev_end:end] if end > prev_end else ""
                prev_end = max(prev_end, end)
                known = memo.get(piece)
                if known is None:
                    a, c = split_lead(piece)
                    known = memo[piece] = (a, c, kind_of(c))
                lead.append(known[0])
                core.append(known[1])
                kinds.append(known[2])
            lens.append(len(offsets))
        ids = np.fromiter(chain.from_iterable(enc["input_ids"]), dtype=np.int64, count=len(core))
        return TokenBatch(
            lead=lead,
            core=core,
            kinds=kinds,
            rows=ids,
            codes=kind_codes(kinds),
            bounds=np.concatenate([[0], np.cumsum(lens)]).astype(np.int64),
        )

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
