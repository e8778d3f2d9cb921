"""The client-side denoiser: a small transformer encoder that maps the server's noisy output embedding,
back to an estimate of the clean one, using what only the client knows (its noisy token rows x~ and the
noise z it added) and eta.

Layout: position 0 carries the noisy output embedding (plus an eta embedding); position t carries token
t's x~_t and z_t together, with a learned position, so each noise vector is aligned with its token by
construction (the paper feeds them as separate positionless rows). The output at position 0 is added to
the noisy embedding through a zero-initialised head: an untrained denoiser is exactly "no denoising",
and training can only move away from that baseline by lowering the loss.

Inputs and the correction are scaled by constants fixed at training time (the clip bound C for token
rows, the mean clean output norm for output embeddings, the RMS error of no denoising for the correction)
so one architecture and learning rate suit minilm (unit outputs), smollm2, and small or large noise.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import torch
from torch import nn


@dataclass(frozen=True)
class DenoiserConfig:
    """Architecture (what the cache key names) and the input scales fixed at training time."""

    in_dim: int  # d: token-embedding width
    out_dim: int  # the pooled output width
    width: int = 128
    layers: int = 2
    heads: int = 4
    ff: int = 256
    max_len: int = 128
    row_scale: float = field(default=1.0, compare=False)
    out_scale: float = field(default=1.0, compare=False)
    delta_scale: float = field(default=1.0, compare=False)

    def arch(self) -> dict:
        """The architecture alone (no scales): part of the cache key."""
        d = asdict(self)
        for k in ("row_scale", "out_scale", "delta_scale"):
            d.pop(k)
        return d

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> DenoiserConfig:
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


def eta_feature(eta: float) -> float:
    """A bounded scalar for eta (log scale; 0 for no noise)."""
    return 0.0 if math.isinf(eta) else math.log(eta) / 10.0


class Denoiser(nn.Module):
    def __init__(self, cfg: DenoiserConfig) -> None:
        super().__init__()
        if cfg.width % cfg.heads:
            raise ValueError("width must be a multiple of heads")
        self.cfg = cfg
        self.in_out = nn.Linear(cfg.out_dim, cfg.width)
        self.in_row = nn.Linear(2 * cfg.in_dim, cfg.width)
        self.eta = nn.Linear(1, cfg.width)
        self.pos = nn.Embedding(cfg.max_len + 1, cfg.width)
        layer = nn.TransformerEncoderLayer(cfg.width, cfg.heads, cfg.ff, dropout=0.0, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, cfg.layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(cfg.width)
        self.head = nn.Linear(cfg.width, cfg.out_dim)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)

    def forward(
        self, e_noisy: torch.Tensor, x_noisy: torch.Tensor, z: torch.Tensor, mask: torch.Tensor, eta: float
    ) -> torch.Tensor:
        """``e_noisy [n, h]``, ``x_noisy``/``z [n, T, d]`` (right-padded), ``mask [n, T]`` -> ``[n, h]``."""
        cfg = self.cfg
        t = min(x_noisy.shape[1], cfg.max_len)
        x_noisy, z, mask = x_noisy[:, :t], z[:, :t], mask[:, :t]
        n = e_noisy.shape[0]
        feat = torch.full((n, 1), eta_feature(eta), device=e_noisy.device, dtype=e_noisy.dtype)
        head = self.in_out(e_noisy / cfg.out_scale) + self.eta(feat) + self.pos.weight[0]
        rows = self.in_row(torch.cat([x_noisy, z], dim=-1) / cfg.row_scale) + self.pos.weight[1 : t + 1]
        seq = torch.cat([head[:, None, :], rows], dim=1)
        pad = torch.cat([torch.zeros((n, 1), dtype=torch.bool, device=mask.device), mask == 0], dim=1)
        h = self.encoder(seq, src_key_padding_mask=pad)
        return e_noisy + cfg.delta_scale * self.head(self.norm(h[:, 0]))
