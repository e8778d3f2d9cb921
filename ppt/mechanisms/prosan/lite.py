"""ProSan-lite: anonymize with one generation pass of a small causal LM distilled from ProSan's pairs
(papers/prosan.txt, Sec. 5.3; the paper used a seq2seq model, ppt uses a causal LM, see :mod:`.distill`).

Why: full ProSan needs a forward and backward pass of a causal LM, a masked LM pass per replaced word and
WordNet; the distilled model needs one greedy generation. The model directory comes from
``ppt prosan distill`` (its ``prosan_lite.json`` names the prompt template and the pairs it learnt from);
any other causal LM directory works with the default template and is stamped as not distilled by ppt.

Privacy: **no DP guarantee** and no guarantee of any kind: the model may copy private words. The stamp
says so (an unprotected event over the record's words); measure with ``ppt eval phr``. ``n_perturbed``
counts the input words absent from the output's word sequence (difflib alignment), a diagnostic only.
Decoding is greedy unless ``temperature`` > 0 (then each record samples from its own generator); seeded
runs generate one record at a time so output never depends on batching.
"""

from __future__ import annotations

import difflib
import json
import re
from pathlib import Path
from typing import Any, ClassVar

import torch

from ppt.mechanisms.accounting import Accounting
from ppt.mechanisms.base import Mechanism, Sanitized

TEMPLATE = "Anonymize the private details in this text.\nText: {text}\nAnonymized:"
META_FILE = "prosan_lite.json"
NO_DP_LITE = "no DP guarantee: ProSan-lite rewrites the text with a distilled model"
_WORDS = re.compile(r"\w+|[^\w\s]")


def read_meta(model: str) -> dict[str, Any] | None:
    """The distillation record of a model directory, or None for any other model."""
    p = Path(model).expanduser() / META_FILE
    if p.is_file():
        try:
            return json.loads(p.read_text())
        except (OSError, ValueError):
            return None
    return None


class ProSanLite(Mechanism):
    """ProSan-lite: one generation pass of a distilled causal LM (no DP guarantee)."""

    name: ClassVar[str] = "prosan-lite"
    notion: ClassVar[str] = "none: no differential-privacy guarantee (a distilled model's rewrite)"
    summary: ClassVar[str] = (
        "ProSan's lightweight mode: a causal LM distilled from ProSan pairs rewrites the prompt (no DP)"
    )
    default_eps: ClassVar[float] = 1.0  # placeholder: no eps (any other value is rejected)
    takes_eps: ClassVar[bool] = False
    default_space: ClassVar[str | None] = None
    defaults: ClassVar[dict[str, Any]] = {"model": None, "temperature": 0.0, "max_new_tokens": None}
    reports_pairs: ClassVar[bool] = False

    def __init__(
        self,
        eps: float = 1.0,
        model: str | None = None,
        temperature: float = 0.0,
        max_new_tokens: int | None = None,
        device: str = "auto",
        quiet: bool = False,
        space: Any = None,
        policy: Any = None,
        batch_size: int = 8,
        **extra: Any,
    ):
        super().__init__(eps)
        if self.eps != self.default_eps:
            raise ValueError("prosan-lite has no eps (it gives no differential-privacy guarantee): leave --eps out")
        if extra:
            raise ValueError(
                f"unknown prosan-lite parameter(s): {', '.join(sorted(extra))}; known: model, temperature, max_new_tokens"
            )
        if space is not None:
            raise ValueError("prosan-lite uses a distilled model (--model DIR), not an embedding space")
        if model is None:
            raise ValueError("prosan-lite needs --model DIR (a model from `ppt prosan distill`)")
        self.temperature = float(temperature)
        if not (0 <= self.temperature <= 100):
            raise ValueError("temperature must be in [0, 100]")
        self.max_new_tokens = None if max_new_tokens in (None, "None", "none") else int(max_new_tokens)
        self.model_name = str(model)
        self.meta = read_meta(self.model_name)
        self.template = (self.meta or {}).get("template", TEMPLATE)
        self.device_arg, self.quiet, self.batch_size = device, quiet, batch_size
        self.gen = None
        from ppt.log import LeakWarning, warn

        warn(
            "prosan-lite gives no privacy guarantee: the distilled model may copy private words "
            "(measure with `ppt eval phr`)",
            LeakWarning,
        )

    def params(self) -> dict[str, Any]:
        m = self.meta or {}
        return {
            "model": self.model_name,
            "mode": "lite: one generation pass of a distilled causal LM",
            "distilled_by_ppt": self.meta is not None,
            "base_model": m.get("base_model"),
            "trained_pairs": m.get("pairs"),
            "trained_steps": m.get("steps"),
            "teacher": m.get("teacher"),
            "template": self.template,
            "temperature": self.temperature,
            "max_new_tokens": self.max_new_tokens,
            "guarantee": NO_DP_LITE,
        }

    def signature_params(self) -> dict[str, Any]:
        return {"model": self.model_name, "mode": "lite", "T": self.temperature}

    def privacy_events(self, acc, *, diagnostics: bool = False) -> list:
        from ppt.accounting import UnprotectedEvent

        n = int(acc.n_tokens)
        return [UnprotectedEvent(n, NO_DP_LITE)] if n else []

    def prepare(self) -> ProSanLite:
        if self.gen is None:
            from ppt.lm.door import get_lm

            self.gen = get_lm(self.model_name, device=self.device_arg, batch_size=self.batch_size)
        return self

    def _params(self, text: str):
        from ppt.lm.base import SamplingParams

        n = self.max_new_tokens or max(
            8, int(1.5 * len(self.gen.tokenizer(text, add_special_tokens=False)["input_ids"])) + 8
        )
        return SamplingParams(max_new_tokens=n, temperature=self.temperature, stop=("\n",))

    def perturb(self, texts: list[str], generators: list[torch.Generator], reproducible: bool) -> list:
        """The distilled model's rewrite of each text (one record at a time when ``reproducible``), or the
        RecordError of a text it cannot take."""
        from ppt.io import RecordError

        prompts = [self.template.format(text=t) for t in texts]
        params = [self._params(t) for t in texts]
        if reproducible:
            outs = [self.gen.generate([p], [sp], [g])[0] for p, sp, g in zip(prompts, params, generators)]
        else:
            outs = self.gen.generate(prompts, params, generators)
        # a record the model cannot take (longer than its context) fails alone, never its batch
        return [o if isinstance(o, RecordError) else o.text.strip() for o in outs]

    def sanitize_batch(
        self, texts: list[str], generators: list[torch.Generator], *, reproducible: bool = True
    ) -> list[Sanitized]:
        self.prepare()
        live = [i for i, t in enumerate(texts) if t.strip()]
        outs = [""] * len(texts)
        if live:
            from ppt.rng import torch_generator  # LM sampling takes a torch generator (32-bit seeded, see ppt.rng)

            gens = [torch_generator(generators[i]) for i in live]
            for i, o in zip(live, self.perturb([texts[i] for i in live], gens, reproducible)):
                outs[i] = o
        res: list = []
        for t, o in zip(texts, outs):
            if not isinstance(o, str):  # a RecordError: this record fails alone (sanitize_records emits it)
                res.append(o)
                continue
            a, b = _WORDS.findall(t), _WORDS.findall(o)
            sm = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
            kept = sum(blk.size for blk in sm.get_matching_blocks())
            acc = Accounting(
                n_tokens=len(a),
                n_perturbed=len(a) - kept,
                extra={"output_words": len(b)},
            )
            res.append(Sanitized(o, acc, None))
        return res


__all__ = ["META_FILE", "NO_DP_LITE", "ProSanLite", "TEMPLATE", "read_meta"]
