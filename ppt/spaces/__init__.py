"""Embedding spaces: named, cached, content-hashed (vocabulary + tokenizer + embeddings).

``load_space("cl100k-minilm")`` builds the space on first use (or reads what ``ppt precompute`` built)
and returns an :class:`EmbeddingSpace`. Names take an optional size: ``glove-6b-50d:50000``.
Rules for each space are documented in :mod:`ppt.spaces.builders`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ppt.cache import Cache
from ppt.spaces.space import EmbeddingSpace, SortedRows, load_vocab
from ppt.spaces.tokens import Tokens

DEFAULT_SPACE = "cl100k-minilm"


@dataclass(frozen=True)
class SpaceSpec:
    base: str
    kind: str
    default_size: int | None
    description: str


SPACES: dict[str, SpaceSpec] = {
    "cl100k-minilm": SpaceSpec(
        "cl100k-minilm",
        "subword-sentence-encoder",
        11_000,
        "first 11k English-word tokens of cl100k_base, embedded by MiniLM (RANTEXT default)",
    ),
    "glove-6b-50d": SpaceSpec(
        "glove-6b-50d", "word-vectors", 20_000, "GloVe 6B 50d words, frequency ordered (SanText/CusText/TEM)"
    ),
    "minilm": SpaceSpec("minilm", "model-input", None, "all-MiniLM-L6-v2 input embeddings, 30522 x 384 (WordPiece)"),
    "smollm2": SpaceSpec(
        "smollm2", "model-input", None, "SmolLM2-135M input embeddings, 49152 x 576 (BPE; Cape default)"
    ),
}


def parse_space_name(name: str) -> tuple[str, int | None]:
    """'glove-6b-50d:50000' -> ('glove-6b-50d', 50000). Unknown bases are model paths / hub ids."""
    base, _, size = name.partition(":")
    if base in SPACES and size:
        if not size.isdigit() or int(size) < 2:
            raise ValueError(f"bad space size in {name!r}: expected a positive integer after ':'")
        return base, int(size)
    if base in SPACES:
        return base, SPACES[base].default_size
    return name, None


def space_deps(name: str) -> tuple[str, str, int | None, dict]:
    """(canonical name, kind, size, cache deps) for a space name."""
    from ppt.spaces.builders import BUILDER_VERSION

    base, size = parse_space_name(name)
    if base in SPACES:
        spec = SPACES[base]
        canonical = f"{base}:{size}" if size else base
        return canonical, spec.kind, size, {"space": base, "size": size, "builder": BUILDER_VERSION}
    return base, "model-input", None, {"space": "model-input", "model": base, "builder": BUILDER_VERSION}


def load_space(
    name: str = DEFAULT_SPACE, device: str = "auto", quiet: bool = False, cache: Cache | None = None
) -> EmbeddingSpace:
    """Load (building and caching on first use) the named space onto ``device``."""
    from ppt.models import device_name, get_encoding, load_tokenizer
    from ppt.spaces import builders
    from ppt.spaces.tokenizers import HFTokenizer, TiktokenTokenizer, WordTokenizer

    cache = cache or Cache()
    dev = device_name(device)
    canonical, kind, size, deps = space_deps(name)
    base = canonical.partition(":")[0]

    def build(tmp: Path) -> dict:
        from ppt.progress import stage

        with stage(f"building space {canonical} (first use; cached for later runs)", quiet, tmp):
            if base == "cl100k-minilm":
                return builders.build_cl100k_minilm(tmp, size, dev, quiet)
            if base == "glove-6b-50d":
                return builders.build_glove(tmp, size)
            return builders.build_model_input(tmp, base)

    art = cache.get_or_build("space", deps, build)
    vocab = load_vocab(art.file("vocab.json"))
    emb = np.load(art.file("embeddings.npy"), mmap_mode="r")  # torch tensors only on demand (EmbeddingSpace.embeddings)
    if base == "cl100k-minilm":
        tok = TiktokenTokenizer(get_encoding("cl100k_base"), np.load(art.file("bpe_id_to_row.npy")).astype(np.int64))
    elif base == "glove-6b-50d":
        tok = WordTokenizer(vocab)
    else:
        tok = HFTokenizer(load_tokenizer(base))
    return EmbeddingSpace(
        name=canonical,
        kind=kind,
        vocab=vocab,
        vectors=emb,
        freq_rank=np.arange(len(vocab), dtype=np.int64),
        tokenizer=tok,
        artifact=art,
        cache=cache,
        device_name=dev,
    )


def space_from_arrays(
    name: str, vocab: list[str], embeddings, cache: Cache | None = None, tokenizer=None, metric: str = "l2"
) -> EmbeddingSpace:
    """An ad-hoc space from in-memory arrays (tests, custom vocabularies); cached like any other."""
    import hashlib
    import json

    from ppt.spaces import builders
    from ppt.spaces.tokenizers import WordTokenizer

    cache = cache or Cache()
    arr = np.ascontiguousarray(np.asarray(embeddings, dtype=np.float32))
    digest = hashlib.sha256(arr.tobytes() + json.dumps(vocab).encode()).hexdigest()
    art = cache.get_or_build(
        "space",
        {"space": "arrays", "name": name, "sha256": digest},
        lambda tmp: builders.save_arrays(tmp, arr, vocab) or {},
    )
    return EmbeddingSpace(
        name=name,
        kind="custom",
        vocab=list(vocab),
        vectors=arr.copy(),
        freq_rank=np.arange(len(vocab), dtype=np.int64),
        tokenizer=tokenizer or WordTokenizer(list(vocab)),
        artifact=art,
        metric=metric,
        cache=cache,
    )


__all__ = [
    "space_from_arrays",
    "EmbeddingSpace",
    "SortedRows",
    "Tokens",
    "SPACES",
    "DEFAULT_SPACE",
    "load_space",
    "parse_space_name",
    "space_deps",
]
