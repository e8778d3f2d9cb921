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
from typing import Any

import numpy as np

from ppt.lazy import lazy_module

torch = lazy_module("torch")

from ppt.cache import Artifact, Cache
from ppt.progress import progress_bar, stage
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
    """A space's rows live in ``vectors`` (numpy float32, memory-mapped from the artifact's
    embeddings.npy): the numpy CPU paths read them without torch; ``embeddings`` is the torch tensor on
    the space's device, made on first use (table builds, GPU sampling)."""

    name: str  # e.g. "cl100k-minilm:11000"
    kind: str  # "subword-sentence-encoder" | "word-vectors" | "model-input"
    vocab: list[str]  # display text of each row (no leading whitespace)
    vectors: Any  # [V, d] float32: a numpy array (memory-mapped) or a torch tensor
    freq_rank: np.ndarray  # [V]; 0 = most frequent
    tokenizer: SpaceTokenizer
    artifact: Artifact
    metric: str = "l2"
    cache: Cache = field(default_factory=Cache, repr=False)
    device_name: str = "cpu"  # where ``embeddings`` lives ("cpu", "cuda", "cuda:1", ...)

    @cached_property
    def embeddings(self) -> torch.Tensor:
        """[V, d] float32 torch tensor on the space's device (imports torch; made once)."""
        if isinstance(self.vectors, np.ndarray):
            return torch.from_numpy(np.array(self.vectors, dtype=np.float32)).to(self.device_name)
        return self.vectors.to(self.device_name)

    @cached_property
    def array(self) -> np.ndarray:
        """[V, d] float32 numpy rows (the memory map itself when loaded from the cache)."""
        if isinstance(self.vectors, np.ndarray):
            return self.vectors
        return self.vectors.detach().cpu().numpy()

    @property
    def id(self) -> str:
        return self.name

    @property
    def hash(self) -> str:
        return self.artifact.content_hash

    @property
    def size(self) -> int:
        return int(self.vectors.shape[0])

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    @property
    def device(self) -> str:
        """The device name (a string torch accepts wherever it takes a device)."""
        return self.device_name

    @property
    def meta(self) -> dict:
        return self.artifact.meta

    @cached_property
    def sensitivity_array(self) -> np.ndarray:
        """Per-dimension sensitivity Delta_d = max_t phi(t)_d - min_t phi(t)_d (float32 numpy [d])."""
        e = self.array
        return e.max(0) - e.min(0)

    @cached_property
    def sensitivity(self) -> torch.Tensor:
        """:attr:`sensitivity_array` as a tensor on the space's device."""
        return torch.from_numpy(self.sensitivity_array.copy()).to(self.device_name)

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
            with (
                stage(f"building sorted distance rows of {self.name} ({self.size} x {self.size})", quiet, tmp),
                progress_bar(self.size, f"sorted rows {self.name}", quiet, unit="row") as bar,
            ):
                itype, shape = distances.sorted_rows_to_files(
                    self.embeddings, tmp / "idx.npy", tmp / "dist.npy", self.metric, chunk, bar.update
                )
            return {"index_dtype": itype.name, "shape": list(shape)}

        deps = self._table_deps("sorted-rows", distances=distances.DISTANCES_VERSION)  # exact since 2 (issue 36)
        art = self.cache.get_or_build("sorted-rows", deps, build)
        idx = np.load(art.file("idx.npy"), mmap_mode="r")
        dist = np.load(art.file("dist.npy"), mmap_mode="r")
        return SortedRows(idx, dist, art)

    def topk(self, k: int, quiet: bool = False, chunk: int = 1024) -> tuple[torch.Tensor, torch.Tensor]:
        """The k nearest rows of every row (itself first), cached: (int64 [V,k], float32 [V,k])."""

        def build(tmp: Path) -> dict:
            with (
                stage(f"building top-{k} neighbours of {self.name}", quiet, tmp),
                progress_bar(self.size, f"top-{k} {self.name}", quiet, unit="row") as bar,
            ):
                idx, dist = distances.topk_neighbors(self.embeddings, k, self.metric, chunk, bar.update)
                itype = distances.index_dtype(self.size)
                np.save(tmp / "idx.npy", idx.numpy().astype(itype))
                np.save(tmp / "dist.npy", dist.numpy())
            return {"k": k}

        art = self.cache.get_or_build(
            "topk", self._table_deps("topk", k=k, distances=distances.DISTANCES_VERSION), build
        )
        idx = torch.from_numpy(np.load(art.file("idx.npy")).astype(np.int64))
        dist = torch.from_numpy(np.load(art.file("dist.npy")))
        return idx, dist


def load_vocab(path: Path) -> list[str]:
    return json.loads(path.read_bytes())
