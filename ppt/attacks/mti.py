"""Mask token inference (MTI; Yue et al. 2021, InferDPT Sec. VI-B, Cape Sec. 5).

For each perturbed token, the adversary replaces it in the perturbed text with mask token(s) and lets
a masked LM predict it from both-side context; success when the prediction equals the original token
(case-insensitive, WordPiece/BPE pieces joined).

Alignment is exact: the span to mask is the perturbed token's character span in the perturbed text
(:mod:`ppt.attacks.realign`), mapped onto the masked LM's own tokens by character offsets, so different
tokenizers (cl100k, GloVe words, WordPiece) never get compared position by position.

Mask length (``mask_length``): ``original`` (default) inserts as many masks as the masked LM needs for
the original word and scores the argmax of each, which hands the attacker the word's length, a
conservative (attacker-favouring) choice; ``one`` inserts a single mask, so originals that the masked
LM splits into several pieces can never be recovered.

Efficiency: all masked copies of a record go through the model in one padded forward pass (split only
above ``max_copies``), and the LM head's final projection runs only on masked positions
(:func:`ppt.lm.masked.masked_argmax`).
"""

from __future__ import annotations

import numpy as np

from ppt.lm.base import context_length, model_device, pad_id
from ppt.lm.masked import masked_argmax

MASK_LENGTHS = ("original", "one")


class MtiAttack:
    name = "mti"

    def __init__(
        self, model, tokenizer, mask_length: str = "original", max_copies: int = 256, max_length: int | None = None
    ):
        if mask_length not in MASK_LENGTHS:
            raise ValueError(f"mask length must be one of {', '.join(MASK_LENGTHS)}")
        if tokenizer.mask_token_id is None:
            raise ValueError("the masked LM's tokenizer has no mask token")
        self.model = model
        self.tok = tokenizer
        self.mask_length = mask_length
        self.max_copies = max(1, int(max_copies))
        limit = context_length(model, 512)
        self.max_length = int(min(max_length or limit, limit, getattr(tokenizer, "model_max_length", limit) or limit))
        self.prefix = [tokenizer.cls_token_id] if tokenizer.cls_token_id is not None else []
        self.suffix = [tokenizer.sep_token_id] if tokenizer.sep_token_id is not None else []
        self.pad_id = pad_id(tokenizer)
        self.device = model_device(model)
        self.forward_passes = 0

    def _n_masks(self, word: str) -> int:
        if self.mask_length == "one":
            return 1
        return max(1, len(self.tok(word.strip(), add_special_tokens=False)["input_ids"]))

    def _normalise(self, text: str) -> str:
        return "".join(text.split()).casefold().replace("##", "")

    def predict(
        self, text: str, spans: list[tuple[int, int] | None], originals: list[str]
    ) -> list[tuple[bool, str] | None]:
        """For each target (span in ``text``, original word): (success, predicted text), or None when
        the span covers no token of the masked LM (unaligned)."""
        enc = self.tok(text, add_special_tokens=False, return_offsets_mapping=True)
        ids: list[int] = list(enc["input_ids"])
        offs = np.asarray(enc["offset_mapping"], dtype=np.int64).reshape(-1, 2)
        budget = self.max_length - len(self.prefix) - len(self.suffix)
        copies: list[list[int]] = []
        mask_at: list[tuple[int, int]] = []  # (first mask position, n masks) per copy
        owner: list[int] = []
        for t, (span, word) in enumerate(zip(spans, originals)):
            if span is None or not word.strip() or not len(offs):
                continue
            s, e = span
            covered = np.nonzero((offs[:, 0] < e) & (offs[:, 1] > s))[0]
            if covered.size == 0:
                continue
            i0, i1 = int(covered[0]), int(covered[-1]) + 1
            k = min(self._n_masks(word), budget)
            seq = ids[:i0] + [self.tok.mask_token_id] * k + ids[i1:]
            lo = 0
            if len(seq) > budget:  # window around the masks
                lo = max(0, min(i0 - (budget - k) // 2, len(seq) - budget))
                seq = seq[lo : lo + budget]
            copies.append(self.prefix + seq + self.suffix)
            mask_at.append((len(self.prefix) + i0 - lo, k))
            owner.append(t)
        results: list[tuple[bool, str] | None] = [None] * len(spans)
        for c0 in range(0, len(copies), self.max_copies):
            chunk = copies[c0 : c0 + self.max_copies]
            preds = self._forward(chunk, mask_at[c0 : c0 + self.max_copies])
            for t, pred_ids in zip(owner[c0 : c0 + self.max_copies], preds):
                pred = self.tok.decode(pred_ids, skip_special_tokens=False, clean_up_tokenization_spaces=True)
                results[t] = (self._normalise(pred) == self._normalise(originals[t]), pred.strip())
        return results

    def _forward(self, copies: list[list[int]], mask_at: list[tuple[int, int]]) -> list[list[int]]:
        preds = masked_argmax(self.model, copies, mask_at, self.pad_id, self.device)
        self.forward_passes += 1
        return preds
