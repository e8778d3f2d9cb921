"""One Split-N-Denoise round for a batch: client rows -> d_chi noise + clip -> server half -> denoiser.

The server is any callable ``pool(rows) -> [n, out_dim]`` taking each record's noisy rows: the
in-process server half (``SplitModel.server_pool``) or an HTTP client (``ppt.remote.snd``). Nothing
else crosses that call: no ids, no text, no clean rows (the privatized rows are built before it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from ppt.samplers.dchi import check_eta, privatize
from ppt.snd.split import SplitModel, pad_right

Pool = Callable[[list[torch.Tensor]], torch.Tensor]


@dataclass
class SndBatch:
    clean_rows: list[torch.Tensor]  # stays on the client
    noisy_rows: list[torch.Tensor]  # what the server receives
    noise_rows: list[torch.Tensor]
    noisy: torch.Tensor  # [n, out_dim] the server's answer
    denoised: torch.Tensor | None = None


def privatize_rows(
    rows: list[torch.Tensor], eta: float, generators: Sequence, bound: float
) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Each record's rows after d_chi noise and the clip, and the noise actually added (x~ - x)."""
    if not rows:
        return [], []
    x, _ = pad_right(rows)
    noisy, z = privatize(x, eta, generators, bound)
    lengths = [r.shape[0] for r in rows]
    return [noisy[i, :n] for i, n in enumerate(lengths)], [z[i, :n] for i, n in enumerate(lengths)]


@torch.no_grad()
def denoise(
    denoiser: torch.nn.Module,
    noisy: torch.Tensor,
    noisy_rows: list[torch.Tensor],
    noise_rows: list[torch.Tensor],
    eta: float,
) -> torch.Tensor:
    dev = next(denoiser.parameters()).device
    x, mask = pad_right(noisy_rows, dev)
    z, _ = pad_right(noise_rows, dev)
    return denoiser(noisy.to(dev), x, z, mask, eta).float().cpu()


def snd_embed(
    split: SplitModel,
    texts: list[str],
    eta: float,
    generators: Sequence,
    pool: Pool | None = None,
    denoiser: torch.nn.Module | None = None,
) -> SndBatch:
    """Run the protocol for ``texts`` (``generators[i]`` draws text i's noise: a numpy generator from
    :func:`ppt.rng.record_generator`, 128-bit seeded)."""
    eta = check_eta(eta)
    tr = split.client_rows(texts)
    noisy_rows, noise_rows = privatize_rows(tr.rows, eta, generators, split.bound)
    noisy = (pool or split.server_pool)(noisy_rows)
    out = SndBatch(tr.rows, noisy_rows, noise_rows, noisy)
    if denoiser is not None:
        out.denoised = noisy.clone() if math.isinf(eta) else denoise(denoiser, noisy, noisy_rows, noise_rows, eta)
    return out
