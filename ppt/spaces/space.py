"""EmbeddingSpace: vocabulary + tokenizer + embedding matrix (+ frequency ranks), and its cached tables.

A space is loaded from a verified cache artifact (see ``ppt.spaces.builders``). Derived tables (sorted
distance rows, top-k neighbours) are artifacts of their own, keyed by the space's content hash, so
they are built once (``ppt precompute``) and shared by every mechanism and attack.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np
import torch

from ppt.cache import Artifact, Cache
from ppt.progress import progress_bar
from ppt.spaces import distances
from ppt.spaces.tokenizers import SpaceTokenizer, tokenize_batch
from ppt.spaces.tokens import TokenBatch, Tokens

SORTED_ROWS_MAX_VOCAB = 20_000  # 20k x 20k x (2 + 2 bytes) = 1.6 GB on disk; above that use top-k


@dataclass
class SortedRows:
    """Every row's neighbours in distance order: ``idx[i, j]`` is the j-th closest row to row i."""

    idx: np.ndarray  # [V, V] uint16/uint32 (memory-mapped)
    dist: np.ndarray  # [V, V] float16 (memory-mapped)
    artifact: Artifact


@dataclass
class EmbeddingSpace:
    name: str  # e.g. "cl100k-minilm:11000"
    kind: str  # "subword-sentence-encoder" | "word-vectors" | "model-input"
    vocab: list[str]  # display text of each row (no leading whitespace)
    embeddings: torch.Tensor  # [V, d] float32 on the space's device
    freq_rank: np.ndarray  # [V]; 0 = most frequent
    tokenizer: SpaceTokenizer
    artifact: Artifact
    metric: str = "l2"
    cache: Cache = field(default_factory=Cache, repr=False)

    @property
    def id(self) -> str:
        return self.name

    @property
    def hash(self) -> str:
        return self.artifact.content_hash

    @property
    def size(self) -> int:
        return self.embeddings.shape[0]

    @property
    def dim(self) -> int:
        return self.embeddings.shape[1]

    @property
    def device(self) -> torch.device:
        return self.embeddings.device

    @property
    def meta(self) -> dict:
        return self.artifact.meta

    @cached_property
    def sensitivity(self) -> torch.Tensor:
        """Per-dimension sensitivity Delta_d = max_t phi(t)_d - min_t phi(t)_d."""
        e = self.embeddings
        return e.max(0).values - e.min(0).values

    @cached_property
    def vocab_array(self) -> np.ndarray:
        """``vocab`` as an object array (the same string objects), for gathering many rows at once."""
        arr = np.empty(len(self.vocab), dtype=object)
        arr[:] = self.vocab
        return arr

    def tokenize(self, text: str) -> Tokens:
        return self.tokenizer.tokenize(text)

    def tokenize_batch(self, texts: list[str]) -> TokenBatch:
        """The pieces of several texts, concatenated (what ``tokenize`` gives each, in order)."""
        return tokenize_batch(self.tokenizer, texts)

    def stamp(self) -> dict:
        """What output records cite about the space."""
        return {"id": self.name, "hash": self.hash, "size": self.size, "dim": self.dim, "metric": self.metric}

    # ---- derived tables -------------------------------------------------------------------------

    def _table_deps(self, table: str, **extra) -> dict:
        return {"space": self.name, "space_hash": self.hash, "metric": self.metric, "table": table, **extra}

    def sorted_rows(self, quiet: bool = False, chunk: int = 512) -> SortedRows:
        """Full sorted distance rows (cached). Only for vocabularies up to SORTED_ROWS_MAX_VOCAB."""
        if self.size > SORTED_ROWS_MAX_VOCAB:
            raise ValueError(
                f"space {self.name} has {self.size} rows; full sorted rows are built only up to "
                f"{SORTED_ROWS_MAX_VOCAB} (use top-k neighbours instead)"
            )

        def build(tmp: Path) -> dict:
            with progress_bar(self.size, f"sorted rows {self.name}", quiet, unit="row") as bar:
                itype, shape = distances.sorted_rows_to_files(
                    self.embeddings, tmp / "idx.npy", tmp / "dist.npy", self.metric, chunk, bar.update
                )
            return {"index_dtype": itype.name, "shape": list(shape)}

        art = self.cache.get_or_build("sorted-rows", self._table_deps("sorted-rows"), build)
        idx = np.load(art.file("idx.npy"), mmap_mode="r")
        dist = np.load(art.file("dist.npy"), mmap_mode="r")
        return SortedRows(idx, dist, art)

    def topk(self, k: int, quiet: bool = False, chunk: int = 1024) -> tuple[torch.Tensor, torch.Tensor]:
        """The k nearest rows of every row (itself first), cached: (int64 [V,k], float32 [V,k])."""

        def build(tmp: Path) -> dict:
            with progress_bar(self.size, f"top-{k} {self.name}", quiet, unit="row") as bar:
                idx, dist = distances.topk_neighbors(self.embeddings, k, self.metric, chunk, bar.update)
            itype = distances.index_dtype(self.size)
            np.save(tmp / "idx.npy", idx.numpy().astype(itype))
            np.save(tmp / "dist.npy", dist.numpy())
            return {"k": k}

        art = self.cache.get_or_build("topk", self._table_deps("topk", k=k), build)
        idx = torch.from_numpy(np.load(art.file("idx.npy")).astype(np.int64))
        dist = torch.from_numpy(np.load(art.file("dist.npy")))
        return idx, dist


def load_vocab(path: Path) -> list[str]:
    return json.loads(path.read_bytes())
