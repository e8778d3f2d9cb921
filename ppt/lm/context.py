"""A causal or masked LM restricted to a candidate set: hidden features at chosen positions, then
candidate logits from them.

Why an LM-layer module: Cape needs a language model's view of every perturbed position (a causal LM
conditioned on the original prefix, or a masked LM with the position masked) and its logits over a
fixed candidate set only. Batching forward passes under a token budget, windowing long texts, and
applying only the candidate rows of the LM head are language-model mechanics, independent of any
mechanism (this module imports none).
"""

from __future__ import annotations

import numpy as np
import torch

from ppt.lm.base import context_length, length_groups, model_device, pad_id, right_pad

TOKEN_BUDGET = 8192  # tokens per forward pass (padded length x rows)


def model_kind(model) -> str | None:
    name = type(model).__name__
    if "MaskedLM" in name:
        return "masked"
    if "CausalLM" in name or "LMHeadModel" in name:
        return "causal"
    return None


def kind_from_name(name: str) -> str:
    """causal / masked for a model name before loading it (alias kind, config.json architectures)."""
    import json
    from pathlib import Path

    from ppt.models.resolve import resolve

    res = resolve(name)
    if res.source == "alias":
        return "masked" if res.asset.kind == "masked-lm" else "causal"
    archs: list[str] = []
    if res.source == "path":
        p = Path(res.path)
        if p.is_file() and p.suffix == ".gguf":
            return "causal"
        cfg = p / "config.json" if p.is_dir() else p.parent / "config.json"
        if cfg.is_file():
            archs = json.loads(cfg.read_text()).get("architectures") or []
    else:
        try:
            from transformers import AutoConfig

            archs = getattr(AutoConfig.from_pretrained(name), "architectures", None) or []
        except Exception:  # noqa: BLE001 - offline hub id: the causal loader reports what to install
            return "causal"
    if any("MaskedLM" in a for a in archs):
        return "masked"
    if any("CausalLM" in a or "LMHeadModel" in a for a in archs):
        return "causal"
    raise ValueError(f"cannot tell whether model {name!r} is causal or masked; pass context='causal' or 'masked'")


class ContextModel:
    """A causal or masked LM restricted to a candidate set: hidden features at requested positions, and
    candidate logits from features (the LM head applied only to the candidate rows)."""

    def __init__(self, model, tokenizer, kind: str, candidates: torch.Tensor, window: int | None = None):
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.kind = kind
        self.device = model_device(model)
        cfg = model.config
        max_pos = context_length(model, 512)
        if kind == "causal":
            self.window = int(window or min(max_pos - 1, 1024))
            self.prefix_id = self._prefix_id(tokenizer)
            self.cls_id = self.sep_id = None
        else:
            self.window = int(window or min(max_pos - 2, 510))
            self.prefix_id = None
            if tokenizer.mask_token_id is None:
                raise ValueError("the masked LM's tokenizer has no mask token")
            self.mask_id = int(tokenizer.mask_token_id)
            self.cls_id = tokenizer.cls_token_id if tokenizer.cls_token_id is not None else tokenizer.bos_token_id
            self.sep_id = tokenizer.sep_token_id if tokenizer.sep_token_id is not None else tokenizer.eos_token_id
        if self.window < 2:
            raise ValueError(f"context window too small ({self.window})")
        self.pad_id = int(pad_id(tokenizer, tokenizer.eos_token_id or 0))
        self.softcap = getattr(cfg, "final_logit_softcapping", None)
        self.candidates = candidates.to(self.device)
        # the head's product runs in the model's dtype (float32, or bfloat16 when asked: ~4x faster on
        # CPUs with AVX512-BF16/AMX); its output is float32
        self.mm_dtype = next(model.parameters()).dtype
        self._setup_head()

    @staticmethod
    def _prefix_id(tokenizer) -> int:
        """The token that stands for 'start of document' before t_0: <|endoftext|> when the vocabulary has
        it (GPT-2 / SmolLM2 pretraining separator; an instruct model's BOS <|im_start|> expects a role),
        else BOS, else EOS."""
        vocab = tokenizer.get_vocab()
        for cand in ("<|endoftext|>",):
            if cand in vocab:
                return int(vocab[cand])
        for tid in (tokenizer.bos_token_id, tokenizer.eos_token_id):
            if tid is not None:
                return int(tid)
        raise ValueError("the causal LM's tokenizer has no <|endoftext|>, BOS or EOS token to start the context")

    def _setup_head(self) -> None:
        m = self.model
        self.base = None
        self.transform = None
        linear = None
        base = getattr(m, "base_model", None)
        if base is not None and base is not m:
            if self.kind == "causal":
                linear = m.get_output_embeddings()
            elif hasattr(m, "cls") and hasattr(m.cls, "predictions"):  # BERT-style MLM head
                self.transform = m.cls.predictions.transform
                linear = m.cls.predictions.decoder
        if isinstance(linear, torch.nn.Linear):
            self.base = base
            w = linear.weight.detach()
            self.weight_c = w.index_select(0, self.candidates).to(self.mm_dtype).contiguous()
            bias = linear.bias
            if bias is None and self.transform is not None:
                bias = getattr(m.cls.predictions, "bias", None)
            self.bias_c = None if bias is None else bias.detach().index_select(0, self.candidates).float()
        # else: fallback — full forward, gather logits rows, select candidate columns

    @property
    def head_mode(self) -> str:
        return "restricted" if self.base is not None else "full-logits"

    # ---- jobs: (input ids, hidden index per requested position) ------------------------------------

    def _jobs(self, ids: np.ndarray, positions: np.ndarray) -> list[tuple[list[int], np.ndarray, np.ndarray]]:
        """Forward-pass inputs for one text: (input ids, hidden indices, which of ``positions``)."""
        n = len(ids)
        jobs = []
        w = self.window
        if self.kind == "causal":
            # hidden state at index p - start of [prefix] + ids[start:end] predicts token p
            if n <= w:
                spans = [(0, n, np.arange(len(positions)))]
            else:
                step = max(1, w // 2)
                spans = []
                for c in range(0, n, step):
                    sel = np.flatnonzero((positions >= c) & (positions < c + step))
                    if sel.size:
                        end = min(n, c + step)
                        spans.append((max(0, end - w), end, sel))
            for start, end, sel in spans:
                inp = [self.prefix_id] + ids[start:end].tolist()
                jobs.append((inp, positions[sel] - start, sel))
        else:
            head = [] if self.cls_id is None else [int(self.cls_id)]
            tail = [] if self.sep_id is None else [int(self.sep_id)]
            for j, p in enumerate(positions.tolist()):
                start = 0 if n <= w else min(max(0, p - w // 2), n - w)
                win = ids[start : start + w].copy()
                win[p - start] = self.mask_id
                jobs.append((head + win.tolist() + tail, np.array([len(head) + p - start]), np.array([j])))
        return jobs

    @torch.inference_mode()
    def features(
        self, ids_list: list[np.ndarray], positions_list: list[np.ndarray], mix_records: bool = False
    ) -> torch.Tensor:
        """Head inputs for every requested position of every text, in (text, position) order:
        [total, hidden] (restricted head) or candidate logits [total, |C|] (full-logits fallback).
        ``mix_records`` lets one padded forward pass hold several texts (faster; float rounding then
        depends on the batch)."""
        offsets = np.cumsum([0] + [len(p) for p in positions_list])
        total = int(offsets[-1])
        jobs = []  # (input ids, hidden idx array, output rows array)
        jobs_by_text: list[list[int]] = []
        for t, (ids, pos) in enumerate(zip(ids_list, positions_list)):
            mine = []
            if len(pos):
                for inp, hid, sel in self._jobs(np.asarray(ids, dtype=np.int64), np.asarray(pos, dtype=np.int64)):
                    mine.append(len(jobs))
                    jobs.append((inp, hid, offsets[t] + sel))
            jobs_by_text.append(mine)
        out = None
        if self.base is not None:
            budget = TOKEN_BUDGET
        else:  # full logits [rows, length, V] per forward pass: keep them near 64 MB
            budget = max(64, (1 << 24) // max(1, self.model.config.vocab_size))
        if mix_records:
            jobs_by_text = [[j for text_jobs in jobs_by_text for j in text_jobs]]
        groups: list[list[int]] = []
        for text_jobs in jobs_by_text:
            groups += length_groups([len(jobs[j][0]) for j in text_jobs], text_jobs, budget)
        for group in groups:
            x, mask = right_pad([jobs[j][0] for j in group], self.pad_id)
            b_idx, h_idx, o_idx = [], [], []
            for r, j in enumerate(group):
                _, hid, rows_out = jobs[j]
                b_idx.extend([r] * len(hid))
                h_idx.extend(hid.tolist())
                o_idx.extend(rows_out.tolist())
            x, mask = x.to(self.device), mask.to(self.device)
            b = torch.as_tensor(b_idx, device=self.device)
            h = torch.as_tensor(h_idx, device=self.device)
            if self.base is not None:
                res = self.base(input_ids=x, attention_mask=mask)
                hidden = res.last_hidden_state if hasattr(res, "last_hidden_state") else res[0]
                feats = hidden[b, h].float()
                if self.transform is not None:
                    feats = self.transform(feats.to(hidden.dtype)).float()
            else:
                logits = self.model(input_ids=x, attention_mask=mask).logits
                feats = logits[b, h].float().index_select(1, self.candidates)
                feats = self._softcap(feats)
            if out is None:
                out = torch.empty((total, feats.shape[1]), dtype=torch.float32, device=self.device)
            out[torch.as_tensor(o_idx, device=self.device)] = feats
        if out is None:
            width = self.weight_c.shape[1] if self.base is not None else self.candidates.numel()
            out = torch.empty((0, width), dtype=torch.float32, device=self.device)
        return out

    def _softcap(self, logits: torch.Tensor) -> torch.Tensor:
        if self.softcap:
            return torch.tanh(logits / self.softcap) * self.softcap
        return logits

    def candidate_logits(self, feats: torch.Tensor) -> torch.Tensor:
        """[c, |C|] logits of the candidates from ``features`` rows."""
        if self.base is None:
            return feats.clone()  # callers may work in place
        if self.mm_dtype == torch.float32:
            logits = feats @ self.weight_c.T
        else:
            logits = (feats.to(self.mm_dtype) @ self.weight_c.T).float()
        if self.bias_c is not None:
            logits = logits + self.bias_c
        return self._softcap(logits)


__all__ = ["TOKEN_BUDGET", "ContextModel", "kind_from_name", "model_kind"]
