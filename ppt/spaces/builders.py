"""Builders of embedding spaces, each writing a cache artifact: embeddings.npy, vocab.json (+ extras).

Spaces and the rules that define them:

``cl100k-minilm[:N]`` (default N = 11,000; RANTEXT's default space)
    Walk cl100k_base token ids in rank order (BPE merge order, a proxy for frequency). Keep a token
    when its bytes decode as UTF-8 to an optional single leading space followed by one or more ASCII
    letters (``^ ?[A-Za-z]+$``). Identify tokens by their stripped, lower-cased text and keep the first
    N distinct words. Each word is embedded by the MiniLM sentence encoder applied to the word alone,
    computed in float64 and rounded to the grid of multiples of 2**-16 (``GRID_BITS``) before it is
    stored as float32, so every machine writes the same bytes (see :func:`to_grid`)
    (the offline analog of the paper's ada-002 embeddings of token strings; MiniLM is uncased, which is
    why case variants are merged into one row). Every cl100k token whose stripped lower-cased text is
    one of the N words maps to that word's row; all other tokens are out of vocabulary.

``glove-6b-50d[:N]`` (default N = 20,000)
    The first N entries of GloVe 6B (frequency ordered) whose text is a lower-case alphabetic word
    (``^[a-z]+$`` or with one inner apostrophe); 50-d vectors as shipped.

``minilm``, ``smollm2``, or any model path / hub id
    The model's input-embedding matrix with its own tokenizer; every vocabulary id is a row. The
    frequency rank of a row is its id (tokenizers do not ship counts; documented as a proxy).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from ppt.lazy import lazy_module

torch = lazy_module("torch")

from ppt.progress import progress_bar, stage

BUILDER_VERSION = 2  # 2: computed rows are float64 rounded to the 2**-16 grid (same bytes on every machine)
GRID_BITS = 16
CL100K_WORD_RE = re.compile(r"^ ?[A-Za-z]+$")
GLOVE_WORD_RE = re.compile(r"^[a-z]+(?:'[a-z]+)?$")


def save_arrays(tmp: Path, embeddings: np.ndarray, vocab: list[str], **arrays: np.ndarray) -> None:
    np.save(tmp / "embeddings.npy", np.ascontiguousarray(embeddings, dtype=np.float32))
    (tmp / "vocab.json").write_bytes(json.dumps(vocab, ensure_ascii=False).encode())
    for name, arr in arrays.items():
        np.save(tmp / f"{name}.npy", arr)


def to_grid(rows: np.ndarray, bits: int = GRID_BITS) -> np.ndarray:
    """Round float64 rows to multiples of 2**-bits, as float32 (exact: |x| < 2**(24-bits)).

    Why: float32 sums differ in their last bits between BLAS kernels, thread counts and batch shapes, and
    a space's identity is the hash of its bytes. Float64 noise (~1e-16) lands within reach of a grid
    boundary (spacing 1.5e-5 at 16 bits) with probability ~1e-11 per value, so the rounded rows, and
    their hash, are the same wherever the space is built; the rounding moves a row by at most 7.6e-6
    per coordinate."""
    scale = float(2**bits)
    return (np.rint(np.asarray(rows, dtype=np.float64) * scale) / scale).astype(np.float32)


def cl100k_word_rows(encoding, size: int) -> tuple[list[str], np.ndarray]:
    """The first ``size`` distinct English-word tokens (see module docstring) and the id -> row map."""
    n_vocab = encoding.n_vocab
    words: list[str] = []
    row_of: dict[str, int] = {}
    id_to_row = np.full(n_vocab, -1, dtype=np.int32)
    for tid in range(n_vocab):
        try:
            text = encoding.decode_single_token_bytes(tid).decode("utf-8")
        except (KeyError, UnicodeDecodeError):
            continue
        if not CL100K_WORD_RE.match(text):
            continue
        key = text.strip().lower()
        row = row_of.get(key)
        if row is None:
            if len(words) >= size:
                continue
            row = row_of[key] = len(words)
            words.append(key)
        id_to_row[tid] = row
    return words, id_to_row


def build_cl100k_minilm(tmp: Path, size: int, device: str, quiet: bool) -> dict:
    from ppt.models import get_encoding, load_sentence_encoder

    enc = get_encoding("cl100k_base")
    words, id_to_row = cl100k_word_rows(enc, size)
    encoder = load_sentence_encoder("minilm", device=device, dtype="float64")
    batch = 512
    out = np.empty((len(words), encoder.dim), dtype=np.float64)
    with (
        stage(f"embedding {len(words)} cl100k words with minilm (float64)", quiet),
        progress_bar(len(words), "embedding cl100k words with minilm", quiet, unit="tok") as bar,
    ):
        for s in range(0, len(words), batch):
            chunk = words[s : s + batch]
            out[s : s + len(chunk)] = encoder.encode(chunk).cpu().numpy()
            bar.update(len(chunk))
    save_arrays(tmp, to_grid(out), words, bpe_id_to_row=id_to_row)
    return {
        "rule": "cl100k_base ids in rank order; ^ ?[A-Za-z]+$; dedupe stripped lower-case; first N",
        "encoder": "minilm (all-MiniLM-L6-v2, mean pooled, L2-normalised; float64, rounded to 2**-16)",
        "tokenizer": "cl100k_base",
        "freq": "cl100k rank order",
        "size": len(words),
    }


def build_glove(tmp: Path, size: int) -> dict:
    import pyarrow.parquet as pq

    from ppt.models import asset_files

    files = asset_files("glove-6b-50d")
    table = pq.read_table(files["glove_6B_index.parquet"])
    column = table.column(table.column_names[0]).to_pylist()
    vectors = np.load(files["glove_6B_50d_emb.npy"], mmap_mode="r")
    rows = [i for i, w in enumerate(column) if isinstance(w, str) and GLOVE_WORD_RE.match(w)][:size]
    vocab = [column[i] for i in rows]
    save_arrays(tmp, np.asarray(vectors[rows], dtype=np.float32), vocab)
    return {
        "rule": "GloVe 6B frequency order; ^[a-z]+('[a-z]+)?$; first N",
        "tokenizer": "words",
        "freq": "GloVe order",
        "size": len(vocab),
    }


def build_model_input(tmp: Path, model_name: str) -> dict:
    from ppt.models import load_model_input_embeddings

    weight, tokenizer = load_model_input_embeddings(model_name)
    n = weight.shape[0]
    ids = list(range(n))
    vocab = [s.strip().removeprefix("##") for s in tokenizer.batch_decode([[i] for i in ids])]
    save_arrays(tmp, weight.detach().float().cpu().numpy(), vocab)
    return {"model": model_name, "tokenizer": model_name, "freq": "token id order (proxy)", "size": n}


def load_embeddings(path: Path, device: torch.device) -> torch.Tensor:
    return torch.from_numpy(np.load(path)).to(device)
