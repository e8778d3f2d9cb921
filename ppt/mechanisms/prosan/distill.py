"""Distil ProSan into a small causal LM (papers/prosan.txt, Sec. 5.3): fine-tune on (original, anonymized)
pairs so ``--mech prosan-lite`` anonymizes with one generation pass.

Why a causal LM and not the paper's Flan-T5 seq2seq: no seq2seq model installs offline (MODELS.md); a
causal LM learns the same mapping as "prompt -> continuation". Each pair becomes
``TEMPLATE.format(text=original)`` (tokenized as :class:`ppt.lm.generate.LocalGenerator` tokenizes a plain
prompt) followed by " " + anonymized + EOS; the loss is the mean NLL of the continuation tokens only.
AdamW (the paper's lr 1e-4 and weight decay 1e-2), shuffled mini-batches from a seeded generator, right
padding, a checkpoint every ``checkpoint_every`` steps (``DIR/checkpoint-STEP``, the last ``keep``
kept) and the final model in ``DIR`` with ``prosan_lite.json`` (template, base model, pair count, steps,
loss curve, the teacher's stamp signature when the pairs carry one).
"""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from ppt.mechanisms.prosan.lite import META_FILE, TEMPLATE


@dataclass
class DistillConfig:
    base_model: str = "smollm2"
    epochs: int = 1
    max_steps: int | None = None
    batch_size: int = 4
    lr: float = 1e-4
    weight_decay: float = 1e-2
    max_tokens: int = 256
    checkpoint_every: int = 50
    train_layers: int | None = None  # train only the top k decoder layers and the final norm (None: all weights)
    max_seconds: float | None = None  # wall-clock budget: stop after the step that reaches it (steps are stamped)
    keep: int = 2
    seed: int = 0
    device: str = "auto"
    template: str = TEMPLATE


@dataclass
class DistillResult:
    steps: int
    pairs: int
    losses: list[float] = field(default_factory=list)
    out_dir: str = ""


def encode_pairs(tok: Any, pairs: list[tuple[str, str]], template: str, max_tokens: int) -> list[tuple[list[int], int]]:
    """(ids, n_prompt) per pair: prompt tokens as generation sees them, then " " + target + EOS, cut at max_tokens."""
    eos = tok.eos_token_id
    out = []
    for src, tgt in pairs:
        p = tok(template.format(text=src), add_special_tokens=True)["input_ids"]
        t = tok(" " + tgt, add_special_tokens=False)["input_ids"] + ([eos] if eos is not None else [])
        ids = (p + t)[:max_tokens]
        if len(ids) > len(p):
            out.append((ids, len(p)))
    return out


def batch_loss(model: Any, batch: list[tuple[list[int], int]], pad: int) -> torch.Tensor:
    """Mean NLL of the continuation tokens of a right-padded batch."""
    from ppt.lm.base import right_pad

    ids, attn = right_pad([b[0] for b in batch], pad)
    labels = ids.clone()
    labels[attn == 0] = -100
    for r, (_, n_prompt) in enumerate(batch):
        labels[r, :n_prompt] = -100
    dev = next(model.parameters()).device
    return model(input_ids=ids.to(dev), attention_mask=attn.to(dev), labels=labels.to(dev)).loss


def distill(
    pairs: list[tuple[str, str]],
    out_dir: str | Path,
    cfg: DistillConfig,
    *,
    teacher: str | None = None,
    progress: Callable[[int, int, float], None] | None = None,
) -> DistillResult:
    """Fine-tune ``cfg.base_model`` on ``pairs`` and save it (and checkpoints) under ``out_dir``."""
    from ppt.lm.base import pad_id
    from ppt.models import load_causal_lm

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model, tok = load_causal_lm(cfg.base_model, device=cfg.device, dtype="float32")
    model.train()
    params = trainable(model, cfg.train_layers)
    data = encode_pairs(tok, pairs, cfg.template, cfg.max_tokens)
    if not data:
        raise ValueError("no usable pairs (empty texts or longer than max_tokens)")
    pad = pad_id(tok)
    g = torch.Generator().manual_seed(cfg.seed)
    per_epoch = math.ceil(len(data) / cfg.batch_size)
    total = cfg.epochs * per_epoch if cfg.max_steps is None else min(cfg.max_steps, cfg.epochs * per_epoch)
    opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    res = DistillResult(steps=0, pairs=len(data), out_dir=str(out))
    saved: list[Path] = []
    step = 0
    import time

    t0 = time.perf_counter()
    while step < total:
        order = torch.randperm(len(data), generator=g).tolist()
        for s in range(0, len(order), cfg.batch_size):
            if step >= total:
                break
            loss = batch_loss(model, [data[j] for j in order[s : s + cfg.batch_size]], pad)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            step += 1
            res.losses.append(float(loss.detach()))
            if cfg.max_seconds is not None and time.perf_counter() - t0 >= cfg.max_seconds:
                total = step  # budget spent: this is the last step
            if progress is not None:
                progress(step, total, res.losses[-1])
            if cfg.checkpoint_every and step % cfg.checkpoint_every == 0 and step < total:
                ck = out / f"checkpoint-{step}"
                _save(model, tok, ck, cfg, res, step, teacher)
                saved.append(ck)
                while len(saved) > max(cfg.keep, 0):
                    shutil.rmtree(saved.pop(0), ignore_errors=True)
    res.steps = step
    _save(model, tok, out, cfg, res, step, teacher)
    return res


def trainable(model: Any, top_layers: int | None) -> list[torch.nn.Parameter]:
    """The weights to train: all, or (``top_layers`` = k) only the last k decoder layers and the final norm.

    Why: on a CPU a step's cost is the forward pass plus the backward pass down to the lowest trained
    weight; training the top layers of a copy task keeps the backward short (embeddings and the tied
    output head stay as they are)."""
    if top_layers is None:
        return [p for p in model.parameters() if p.requires_grad]
    base = getattr(model, getattr(model, "base_model_prefix", ""), None)
    layers = getattr(base, "layers", None)
    if layers is None or top_layers < 1:
        raise ValueError("train_layers needs a decoder with .layers (Llama-like) and k >= 1")
    model.requires_grad_(False)
    for layer in list(layers)[-top_layers:]:
        layer.requires_grad_(True)
    if getattr(base, "norm", None) is not None:
        base.norm.requires_grad_(True)
    return [p for p in model.parameters() if p.requires_grad]


def _save(
    model: Any, tok: Any, d: Path, cfg: DistillConfig, res: DistillResult, step: int, teacher: str | None
) -> None:
    from ppt.models._quiet import quiet_loading

    d.mkdir(parents=True, exist_ok=True)
    was = model.training
    model.eval()
    with quiet_loading(progress=False):
        model.save_pretrained(d)
        tok.save_pretrained(d)
    model.train(was)
    meta = {
        "template": cfg.template,
        "base_model": cfg.base_model,
        "pairs": res.pairs,
        "steps": step,
        "teacher": teacher,
        "config": {k: v for k, v in asdict(cfg).items() if k != "template"},
        "loss_first": res.losses[0] if res.losses else None,
        "loss_last": res.losses[-1] if res.losses else None,
    }
    (d / META_FILE).write_text(json.dumps(meta, indent=1))


__all__ = ["DistillConfig", "DistillResult", "batch_loss", "distill", "encode_pairs"]
