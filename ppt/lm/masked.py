"""Masked-LM prediction at masked positions: what mask token inference (``ppt attack mti``) asks of a
masked LM, kept beside the other model helpers so the attack only aligns and scores.

All copies go through the model in one right-padded forward pass, and the output projection runs only
on the masked positions (:func:`ppt.lm.base.gathered_logits`).
"""

from __future__ import annotations

from typing import Any

import torch

from ppt.lm.base import gathered_logits, right_pad


@torch.inference_mode()
def masked_argmax(
    model: Any, copies: list[list[int]], mask_at: list[tuple[int, int]], pad: int, device: Any
) -> list[list[int]]:
    """The masked LM's most likely token id at each mask, per copy: ``mask_at[i]`` = (first mask
    position, number of consecutive masks) in ``copies[i]``."""
    input_ids, attn = right_pad(copies, pad)
    rows = torch.tensor([i for i, (_, k) in enumerate(mask_at) for _ in range(k)], dtype=torch.long)
    cols = torch.tensor([p + j for p, k in mask_at for j in range(k)], dtype=torch.long)
    logits = gathered_logits(model, input_ids.to(device), attn.to(device), rows.to(device), cols.to(device))
    best = logits.argmax(-1).cpu().tolist()
    out, pos = [], 0
    for _, k in mask_at:
        out.append(best[pos : pos + k])
        pos += k
    return out
