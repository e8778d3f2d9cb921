"""The model split in two: the client half (tokenizer + input-embedding table) and the server half (the
rest of the network on ``inputs_embeds``, then pooling).

Why one object with two halves: in-process runs, the training loop and the HTTP server all need the
same split, and keeping it in one place guarantees the server half never sees anything but what the
client half hands it (the noisy rows of real tokens, no ids, no text). The server pads on the right
itself, so a record's output does not depend on its batch, and a causal model's positions start at 0.

Pooling: a sentence encoder (minilm) uses mean pooling over the tokens then L2 normalisation, as
sentence-transformers does for all-MiniLM-L6-v2; a causal LM (smollm2) uses the mean of its last
hidden states.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

import torch

from ppt.cache import canonical_json, fingerprint_file

POOLINGS = ("mean-normalized", "mean")


@dataclass
class TokenRows:
    """A client batch: each record's token ids and their input-embedding rows ``[n_i, d]``."""

    ids: list[list[int]]
    rows: list[torch.Tensor]


def model_hash(resolved: Any, model: Any) -> str:
    """A short content hash of the model's weights: the packaged files' sha256 for an alias, file
    fingerprints for a local directory, the weights themselves for a hub model."""
    h = hashlib.sha256(b"ppt-snd-model\0")
    if resolved.source == "alias":
        h.update(canonical_json(sorted(resolved.asset.files.items())))
    elif resolved.source == "path" and resolved.path is not None and resolved.path.is_dir():
        for p in sorted(resolved.path.iterdir()):
            if p.is_file() and (p.suffix in (".json", ".safetensors", ".bin", ".gguf", ".txt", ".model")):
                h.update(p.name.encode() + b"\0" + fingerprint_file(p).encode())
    else:
        for name, t in sorted(model.state_dict().items()):
            h.update(name.encode())
            h.update(t.detach().to("cpu", torch.float32).contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def _is_causal(resolved: Any) -> bool:
    if resolved.source == "alias":
        return resolved.asset.kind == "causal-lm"
    if resolved.source == "path" and resolved.path is not None:
        if resolved.path.is_file():
            return resolved.path.suffix == ".gguf"
        cfg = resolved.path / "config.json"
        if not cfg.is_file():
            return any(resolved.path.glob("*.gguf"))
        try:
            arch = json.loads(cfg.read_text()).get("architectures") or []
        except (OSError, ValueError):
            arch = []
        return any(a.endswith("ForCausalLM") for a in arch)
    return False


class SplitModel:
    """A model split for Split-N-Denoise: ``client_rows(texts)`` and ``server_pool(rows)``."""

    def __init__(
        self, model: Any, tokenizer: Any, *, name: str, hash: str, pooling: str, device: Any, max_length: int = 128
    ) -> None:
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}")
        self.model = model.eval()
        self.body = getattr(model, "base_model", model)  # causal LM: the decoder without its LM head
        self.tokenizer = tokenizer
        self.name = name
        self.hash = hash
        self.pooling = pooling
        self.device = torch.device(device)
        limit = getattr(tokenizer, "model_max_length", max_length) or max_length
        self.max_length = int(min(max_length, limit))
        for p in self.model.parameters():
            p.requires_grad_(False)
        self.table = self.model.get_input_embeddings().weight.detach()

    @classmethod
    def load(cls, name: str, device: Any = "auto", max_length: int = 128) -> SplitModel:
        """minilm, smollm2, a local model directory or a hub id (through ppt.models)."""
        from ppt.models import load_causal_lm, load_sentence_encoder, resolve

        r = resolve(name)
        if _is_causal(r):
            model, tok = load_causal_lm(name, device=device, dtype="float32")
            pooling = "mean"
        else:
            enc = load_sentence_encoder(name, device=device, dtype="float32")
            model, tok, pooling = enc.model, enc.tokenizer, "mean-normalized"
            max_length = min(max_length, enc.max_length)
        dev = next(model.parameters()).device
        return cls(
            model.float(),
            tok,
            name=r.alias or r.name,
            hash=model_hash(r, model),
            pooling=pooling,
            device=dev,
            max_length=max_length,
        )

    # ---- shapes and the clip bound --------------------------------------------------------------------

    @property
    def dim(self) -> int:
        """d: the width of an input-embedding row (what noise is added to)."""
        return int(self.table.shape[1])

    @property
    def out_dim(self) -> int:
        return int(self.model.config.hidden_size)

    @property
    def bound(self) -> float:
        """C: the largest input-embedding norm over the vocabulary (the clip radius)."""
        if not hasattr(self, "_bound"):
            self._bound = float(self.table.float().norm(dim=1).max())
        return self._bound

    def describe(self) -> dict[str, Any]:
        return {"id": self.name, "hash": self.hash, "pooling": self.pooling, "dim": self.dim, "out_dim": self.out_dim}

    # ---- client half ----------------------------------------------------------------------------------

    def token_ids(self, texts: list[str]) -> list[list[int]]:
        enc = self.tokenizer(list(texts), truncation=True, max_length=self.max_length, padding=False)
        ids = [list(x) for x in enc["input_ids"]]
        if any(len(x) == 0 for x in ids):  # a causal tokenizer with no BOS gives nothing for ""
            fill = self.tokenizer.eos_token_id if self.tokenizer.eos_token_id is not None else 0
            ids = [x or [fill] for x in ids]
        return ids

    def client_rows(self, texts: list[str]) -> TokenRows:
        """Each text's input-embedding rows (one gather for the whole batch)."""
        ids = self.token_ids(texts)
        return TokenRows(ids, self.client_rows_from_ids(ids))

    def client_rows_from_ids(self, ids: list[list[int]]) -> list[torch.Tensor]:
        flat = torch.tensor([i for x in ids for i in x], dtype=torch.long, device=self.table.device)
        rows = self.table.index_select(0, flat).float()
        return list(rows.split([len(x) for x in ids]))

    # ---- server half ----------------------------------------------------------------------------------

    @torch.no_grad()
    def server_pool(self, rows: list[torch.Tensor]) -> torch.Tensor:
        """``[n, out_dim]`` pooled outputs of the rest of the network on each record's rows (CPU)."""
        if not rows:
            return torch.zeros((0, self.out_dim))
        x, mask = pad_right(rows, self.device)
        hidden = self.body(inputs_embeds=x, attention_mask=mask).last_hidden_state.float()
        m = mask.unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)
        if self.pooling == "mean-normalized":
            pooled = torch.nn.functional.normalize(pooled, p=2, dim=1)
        return pooled.cpu()


def pad_right(rows: list[torch.Tensor], device: Any = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``(x [n, T, d], mask [n, T])``: rows stacked and padded with zeros on the right."""
    n, t = len(rows), max(r.shape[0] for r in rows)
    d = rows[0].shape[1]
    dev = device if device is not None else rows[0].device
    x = torch.zeros((n, t, d), dtype=torch.float32, device=dev)
    mask = torch.zeros((n, t), dtype=torch.long, device=dev)
    lengths = torch.tensor([r.shape[0] for r in rows], device=dev)
    keep = torch.arange(t, device=dev)[None, :] < lengths[:, None]
    x[keep] = torch.cat([r.to(dev, torch.float32) for r in rows])
    mask[keep] = 1
    return x, mask
