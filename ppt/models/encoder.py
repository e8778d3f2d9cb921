"""Sentence encoders: mean pooling over the attention mask + L2 normalisation (all-MiniLM-L6-v2's recipe),
with plain transformers (no sentence-transformers dependency)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ppt.models.loaders import _target, from_pretrained
from ppt.models.resolve import resolve


class SentenceEncoder:
    """``encode(texts) -> FloatTensor [n, dim]``, unit L2 norm, on CPU (``keep_on_device=True`` to keep it
    on the model's device)."""

    def __init__(self, model, tokenizer, device, name: str, max_length: int | None = None):
        self.model = model
        self.tokenizer = tokenizer
        self.device = device
        self.name = name
        limit = getattr(tokenizer, "model_max_length", 512) or 512
        self.max_length = int(min(max_length or limit, limit, 8192))

    @property
    def dim(self) -> int:
        return int(self.model.config.hidden_size)

    def encode(self, texts: list[str], batch_size: int = 256, keep_on_device: bool = False):
        """Float32 rows, or float64 when the model runs in float64 (reproducible builds: see
        ``ppt.spaces.builders.build_cl100k_minilm``)."""
        import torch

        if isinstance(texts, str):
            raise TypeError("encode() takes a list of strings")
        texts = list(texts)
        n = len(texts)
        wide = next(self.model.parameters()).dtype == torch.float64
        out_dtype = torch.float64 if wide else torch.float32
        out = torch.empty((n, self.dim), dtype=out_dtype, device=self.device if keep_on_device else "cpu")
        if n == 0:
            return out
        order = sorted(range(n), key=lambda i: len(texts[i]))  # similar lengths per batch: less padding
        with torch.inference_mode():
            for s in range(0, n, max(1, int(batch_size))):
                idx = order[s : s + batch_size]
                batch = self.tokenizer(
                    [texts[i] for i in idx],
                    padding=True,
                    truncation=True,
                    max_length=self.max_length,
                    return_tensors="pt",
                ).to(self.device)
                hidden = self.model(**batch).last_hidden_state
                mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
                pooled = torch.nn.functional.normalize(pooled.to(out_dtype), p=2, dim=1)
                out[torch.as_tensor(idx, device=out.device)] = pooled.to(out.device)
        return out

    def __repr__(self) -> str:
        return f"SentenceEncoder({self.name!r}, dim={self.dim}, device={self.device})"


def _max_seq_length(path: Path | None) -> int | None:
    if path is None:
        return None
    cfg = Path(path) / "sentence_bert_config.json"
    if cfg.is_file():
        try:
            return int(json.loads(cfg.read_text())["max_seq_length"])
        except (ValueError, KeyError, TypeError):
            return None
    return None


def load_sentence_encoder(name: str = "minilm", device: Any = "auto", dtype: Any = None) -> SentenceEncoder:
    """A sentence encoder for ``name`` (``minilm``, a local HF encoder dir, or a hub id)."""
    from transformers import AutoModel, AutoTokenizer

    from ppt.models.device import resolve_device, resolve_dtype

    dev = resolve_device(device)
    dt = resolve_dtype(dtype, dev)
    r = resolve(name)
    target = _target(r, ("sentence-encoder", "masked-lm"), "sentence encoder")
    kwargs = {"dtype": dt} if dt is not None else {}
    model = from_pretrained(AutoModel, r, target, **kwargs)
    tok = from_pretrained(AutoTokenizer, r, target)
    local = Path(target) if r.source != "hub" else None
    return SentenceEncoder(model.to(dev).eval(), tok, dev, name=r.alias or r.name, max_length=_max_seq_length(local))
