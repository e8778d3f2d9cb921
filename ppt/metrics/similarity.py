"""Coherence and alignment: cosine similarity of sentence embeddings.

- coherence(doc, generation) (InferDPT Table VII; Cape eq. 12): how well the output continues the
  raw document.
- alignment(output, reference) (Cape): how close the private pipeline's output is to the non-private
  one.
The papers use SimCSE; offline the default is MiniLM (``minilm``); any encoder directory or hub id
(SimCSE included) loads by name through :func:`ppt.models.load_sentence_encoder`, which mean-pools
(SimCSE's own recipe uses the [CLS] vector; scores are comparable within one encoder only).
"""

from __future__ import annotations

import torch


def paired_cosine(encoder, a: list[str], b: list[str], batch_size: int = 64) -> list[float]:
    """cos(enc(a_i), enc(b_i)) for each pair (embeddings are unit-normalised by the encoder)."""
    if len(a) != len(b):
        raise ValueError("paired_cosine needs two lists of the same length")
    if not a:
        return []
    ea = encoder.encode(list(a), batch_size=batch_size)
    eb = encoder.encode(list(b), batch_size=batch_size)
    ea = torch.nn.functional.normalize(ea.float(), dim=1)
    eb = torch.nn.functional.normalize(eb.float(), dim=1)
    return (ea * eb).sum(1).tolist()
