"""Training the denoiser on a public corpus: fresh d_chi noise every epoch, MSE to the clean output.

Why fresh noise: the denoiser must learn the noise distribution, not memorise one draw per sentence.
The clean outputs are computed once (the frozen model is deterministic); each step privatizes a batch,
runs the server half on it (no gradient), and fits the denoiser. Each epoch also records the loss of
*no denoising* on the same draws, so the log shows whether the denoiser beats the baseline.

Checkpoints (weights, optimizer, epoch, losses, elapsed time) are written atomically every
``checkpoint_every`` steps and at each epoch end; ``resume=True`` continues from the last one if it was
made for the same model, eta, architecture and corpus. Noise draws come from per-record generators keyed
by (epoch, text index), so a seeded run resumed mid-way draws what an uninterrupted run would have.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from ppt.cache import canonical_json
from ppt.io import ExitCode, PptError
from ppt.progress import progress_bar
from ppt.rng import record_generator, record_torch_generator
from ppt.snd.denoiser import Denoiser, DenoiserConfig
from ppt.snd.pipeline import privatize_rows
from ppt.snd.split import SplitModel, pad_right

CKPT = "checkpoint.pt"


@dataclass
class TrainConfig:
    eta: float
    epochs: int = 3
    batch_size: int = 32
    lr: float = 1e-3
    weight_decay: float = 0.01
    seed: int | None = None
    checkpoint_every: int = 200  # steps
    arch: dict[str, Any] = field(default_factory=dict)  # width, layers, heads, ff, max_len

    def recipe(self, corpus_hash: str, n: int) -> dict[str, Any]:
        """What, besides model, eta and architecture, determines the trained weights (never the seed)."""
        return {
            "corpus": corpus_hash,
            "n": n,
            "epochs": self.epochs,
            "batch_size": self.batch_size,
            "lr": self.lr,
            "weight_decay": self.weight_decay,
        }


@dataclass
class TrainResult:
    model: Denoiser
    config: DenoiserConfig
    history: list[dict[str, float]]
    seconds: float
    resumed_from: dict[str, int] | None = None  # the checkpoint's epoch and step


def corpus_hash(texts: list[str]) -> str:
    h = hashlib.sha256(b"ppt-snd-corpus\0")
    for t in texts:
        h.update(hashlib.sha256(t.encode()).digest())
    return h.hexdigest()[:16]


def clean_outputs(split: SplitModel, texts: list[str], batch_size: int) -> torch.Tensor:
    """The clean pooled outputs ``[n, out_dim]`` (CPU), batch by batch."""
    outs = [
        split.server_pool(split.client_rows(texts[s : s + batch_size]).rows) for s in range(0, len(texts), batch_size)
    ]
    return torch.cat(outs) if outs else torch.zeros((0, split.out_dim))


def _error_scale(split: SplitModel, ids: list[list[int]], clean: torch.Tensor, cfg: TrainConfig, n: int = 256) -> float:
    """RMS per-coordinate error of no denoising on up to ``n`` texts (their own noise stream)."""
    import math

    if math.isinf(cfg.eta):
        return 1.0
    k = min(n, len(ids))
    rows = split.client_rows_from_ids(ids[:k])
    noisy_rows, _ = privatize_rows(
        rows, cfg.eta, [record_generator(cfg.seed, ["snd-scale", i]) for i in range(k)], split.bound
    )
    noisy = torch.cat([split.server_pool(noisy_rows[s : s + cfg.batch_size]) for s in range(0, k, cfg.batch_size)])
    return float(((noisy.to(clean.device) - clean[:k]) ** 2).mean().sqrt().clamp_min(1e-8))


def _save_checkpoint(path: Path, state: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=CKPT + ".", dir=path.parent)
    os.close(fd)
    try:
        torch.save(state, tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def train_denoiser(
    split: SplitModel,
    texts: list[str],
    cfg: TrainConfig,
    *,
    checkpoint_dir: Path | None = None,
    resume: bool = False,
    quiet: bool = True,
    on_epoch: Callable[[dict[str, float]], None] | None = None,
) -> TrainResult:
    """Train a denoiser for ``split`` at ``cfg.eta`` on ``texts`` (on the split model's device)."""
    if not texts:
        raise PptError("the training corpus is empty", ExitCode.DATAERR)
    dev = split.device
    ids = split.token_ids(texts)
    clean = clean_outputs(split, texts, cfg.batch_size).to(dev)
    out_scale = float(clean.norm(dim=1).mean().clamp_min(1e-6))
    dcfg = DenoiserConfig(
        in_dim=split.dim,
        out_dim=split.out_dim,
        row_scale=split.bound,
        out_scale=out_scale,
        delta_scale=_error_scale(split, ids, clean, cfg),
        **{"max_len": split.max_length, **cfg.arch},
    )
    recipe = cfg.recipe(corpus_hash(texts), len(texts))
    recipe.pop("epochs")  # a resumed run may train for more epochs
    tag = hashlib.sha256(
        canonical_json({"model": split.hash, "eta": cfg.eta, "arch": dcfg.arch(), "recipe": recipe})
    ).hexdigest()[:16]
    ckpt = Path(checkpoint_dir) / CKPT if checkpoint_dir is not None else None
    start_epoch, start_step, history, spent, resumed, state = 0, 0, [], 0.0, None, None
    if resume and ckpt is not None and ckpt.is_file():
        try:
            state = torch.load(ckpt, map_location=dev, weights_only=True)
        except Exception as e:  # noqa: BLE001 - torch raises RuntimeError, pickle or EOF errors on a bad file
            raise PptError(
                f"{ckpt} is not a readable checkpoint ({type(e).__name__})",
                ExitCode.DATAERR,
                hint="drop --resume to start over, or remove the checkpoint directory",
            ) from None
        if not isinstance(state, dict) or state.get("tag") != tag:
            raise PptError(
                f"{ckpt} was written for another model, eta, architecture or corpus",
                ExitCode.CONFIG,
                hint="drop --resume, or remove the checkpoint directory",
            )
        dcfg = DenoiserConfig.from_dict(state["config"])  # the scales it was trained with
    with torch.random.fork_rng(devices=[]):  # seeded initial weights without touching the caller's global RNG
        torch.manual_seed(cfg.seed if cfg.seed is not None else torch.seed())
        model = Denoiser(dcfg).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    if state is not None:
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        start_epoch, start_step, history, spent = state["epoch"], state["step"], state["history"], state["seconds"]
        resumed = {"epoch": start_epoch, "step": start_step}
    n = len(texts)
    steps_per_epoch = (n + cfg.batch_size - 1) // cfg.batch_size
    t0 = time.perf_counter()
    bar = progress_bar(cfg.epochs * steps_per_epoch, f"snd train eta={cfg.eta:g}", quiet=quiet, unit="batch")
    bar.update(start_epoch * steps_per_epoch + start_step)

    def checkpoint(epoch: int, step: int) -> None:
        if ckpt is not None:
            _save_checkpoint(
                ckpt,
                {
                    "tag": tag,
                    "config": dcfg.to_dict(),
                    "model": model.state_dict(),
                    "opt": opt.state_dict(),
                    "epoch": epoch,
                    "step": step,
                    "history": history,
                    "seconds": spent + time.perf_counter() - t0,
                },
            )

    try:
        for epoch in range(start_epoch, cfg.epochs):
            g = torch.Generator().manual_seed(record_torch_generator(cfg.seed, ["snd-order", epoch]).initial_seed())
            order = torch.randperm(n, generator=g).tolist()
            sums = {"loss": 0.0, "baseline": 0.0, "count": 0}
            first = start_step if epoch == start_epoch else 0
            for step in range(first, steps_per_epoch):
                idx = order[step * cfg.batch_size : (step + 1) * cfg.batch_size]
                rows = split.client_rows_from_ids([ids[i] for i in idx])
                gens = [record_generator(cfg.seed, ["snd-train", epoch, i]) for i in idx]
                noisy_rows, noise_rows = privatize_rows(rows, cfg.eta, gens, split.bound)
                noisy = split.server_pool(noisy_rows).to(dev)
                x, mask = pad_right(noisy_rows, dev)
                z, _ = pad_right(noise_rows, dev)
                target = clean[idx]
                model.train()
                pred = model(noisy, x, z, mask, cfg.eta)
                loss = torch.nn.functional.mse_loss(pred, target)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
                k = len(idx)
                sums["loss"] += float(loss.detach()) * k
                sums["baseline"] += float(torch.nn.functional.mse_loss(noisy, target)) * k
                sums["count"] += k
                bar.update(1)
                if cfg.checkpoint_every and (step + 1) % cfg.checkpoint_every == 0 and step + 1 < steps_per_epoch:
                    checkpoint(epoch, step + 1)
            if sums["count"]:
                row = {
                    "epoch": epoch + 1,
                    "mse": sums["loss"] / sums["count"],
                    "mse_no_denoise": sums["baseline"] / sums["count"],
                }
                history.append(row)
                if on_epoch:
                    on_epoch(row)
            checkpoint(epoch + 1, 0)
    finally:
        bar.close()
    model.eval()
    return TrainResult(model, dcfg, history, spent + time.perf_counter() - t0, resumed)
