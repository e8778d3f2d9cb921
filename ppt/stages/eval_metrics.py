"""The metric runners of `ppt eval` and ``METRICS``, the one metric registry (name -> runner class,
whose ``description`` is the help text). Each runner scores batches of records (per-record values) and
keeps what it needs for a corpus summary; models load once, through :class:`Resources`. They live on
the stage floor because the mapping metric realigns texts with the attacks' aligner.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import fmean
from typing import Any

import numpy as np


@dataclass
class Item:
    """What metrics see of one record."""

    text: str
    doc: str | None = None
    reference: str | None = None
    label: Any = None
    items: list[str] | None = None
    alignment: Any = None  # raw alignment field value


@dataclass
class EvalSettings:
    encoder: str = "minilm"
    lm: str = "smollm2"
    mauve_features: str = "lm"  # "lm" (causal LM last-token state) | "encoder"
    mauve_seed: int = 25
    labels: list[str] = field(default_factory=list)
    template: str | None = None
    length_norm: bool = False
    diversity_combine: str = "product"
    device: str = "auto"
    batch_size: int = 16

    def describe(self, names: list[str]) -> dict:
        out: dict[str, Any] = {}
        if {"coherence", "alignment"} & set(names) or ("mauve" in names and self.mauve_features == "encoder"):
            out["encoder"] = self.encoder
        if {"accuracy", "perplexity"} & set(names) or ("mauve" in names and self.mauve_features == "lm"):
            out["lm"] = self.lm
        if "mauve" in names:
            out.update(
                mauve_features=self.mauve_features,
                mauve_seed=self.mauve_seed,
                mauve_impl="ppt (sklearn, from the paper)",
            )
        if "accuracy" in names:
            from ppt.metrics.accuracy import DEFAULT_TEMPLATE

            out.update(labels=self.labels, template=self.template or DEFAULT_TEMPLATE, length_norm=self.length_norm)
        if "diversity" in names:
            out["diversity_combine"] = self.diversity_combine
        return out


class Resources:
    """Lazily loaded models shared by the metrics of one run."""

    def __init__(self, settings: EvalSettings):
        self.s = settings
        self._encoder = None
        self._lm = None

    @property
    def encoder(self):
        if self._encoder is None:
            from ppt.models import load_sentence_encoder

            self._encoder = load_sentence_encoder(self.s.encoder, device=self.s.device)
        return self._encoder

    @property
    def lm(self):
        if self._lm is None:
            from ppt.models import load_causal_lm

            self._lm = load_causal_lm(self.s.lm, device=self.s.device)
        return self._lm


def _mean(xs: list[float]) -> float | None:
    xs = [x for x in xs if x is not None]
    return fmean(xs) if xs else None


class Metric:
    name: str = ""
    description: str = ""
    needs: tuple[str, ...] = ()  # Item attributes besides text

    def __init__(self, res: Resources):
        self.res = res

    def prepare(self) -> None:
        """Load the models this metric uses (before the first batch)."""

    def score(self, items: list[Item]) -> list[dict | None]:
        raise NotImplementedError

    def summary(self) -> dict:
        raise NotImplementedError


class _MeanOf(Metric):
    """Per-record dicts whose keys are averaged in the summary."""

    def __init__(self, res: Resources):
        super().__init__(res)
        self.values: dict[str, list[float]] = {}

    def _keep(self, d: dict) -> dict:
        for k, v in d.items():
            if isinstance(v, (int, float)):
                self.values.setdefault(k, []).append(float(v))
        return d

    def summary(self) -> dict:
        n = max((len(v) for v in self.values.values()), default=0)
        return {"n": n, **{f"mean_{k}" if k != self.name else k: _mean(v) for k, v in self.values.items()}}


class Diversity(_MeanOf):
    name = "diversity"
    description = "prod over n=2..4 of unique/total word n-grams of the text"

    def score(self, items):
        from ppt.metrics.diversity import diversity

        return [self._keep(diversity(it.text, combine=self.res.s.diversity_combine)) for it in items]


class Rouge(_MeanOf):
    name = "rouge"
    description = "Rouge-L F1 of text against --reference-field"
    needs = ("reference",)

    def score(self, items):
        from ppt.metrics.rouge import rouge_l

        out = []
        for it in items:
            r = rouge_l(it.text, it.reference)
            out.append(self._keep({"rouge": r["f1"], "precision": r["precision"], "recall": r["recall"]}))
        return out


class Coherence(_MeanOf):
    name = "coherence"
    description = "sentence-embedding cosine(--doc-field, text)"
    needs = ("doc",)

    def prepare(self):
        self.res.encoder  # noqa: B018 - loads it

    def score(self, items):
        from ppt.metrics.similarity import paired_cosine

        cos = paired_cosine(self.res.encoder, [it.doc for it in items], [it.text for it in items])
        return [self._keep({self.name: c}) for c in cos]


class Alignment(_MeanOf):
    name = "alignment"
    description = "sentence-embedding cosine(text, --reference-field), reference = non-private output"
    needs = ("reference",)

    def prepare(self):
        self.res.encoder  # noqa: B018 - loads it

    def score(self, items):
        from ppt.metrics.similarity import paired_cosine

        cos = paired_cosine(self.res.encoder, [it.text for it in items], [it.reference for it in items])
        return [self._keep({self.name: c}) for c in cos]


class Mauve(Metric):
    name = "mauve"
    description = "MAUVE of texts vs --reference-field texts (corpus level)"
    needs = ("reference",)

    def __init__(self, res):
        super().__init__(res)
        self.p: list[np.ndarray] = []
        self.q: list[np.ndarray] = []

    def prepare(self):
        self.res.encoder if self.res.s.mauve_features == "encoder" else self.res.lm  # noqa: B018 - loads it

    def _features(self, texts: list[str]) -> np.ndarray:
        if self.res.s.mauve_features == "encoder":
            return self.res.encoder.encode(texts).numpy()
        from ppt.lm.score import last_token_features

        model, tok = self.res.lm
        return last_token_features(model, tok, texts, batch_size=self.res.s.batch_size)

    def score(self, items):
        self.p.append(self._features([it.text for it in items]))
        self.q.append(self._features([it.reference for it in items]))
        return [None] * len(items)

    def summary(self):
        from ppt.metrics.mauve import mauve

        if not self.p:
            return {"n": 0, "mauve": None}
        p, q = np.concatenate(self.p), np.concatenate(self.q)
        if len(p) < 2:
            return {"n": len(p), "mauve": None, "note": "MAUVE needs at least 2 texts (tens for a stable score)"}
        r = mauve(p, q, seed=self.res.s.mauve_seed)
        return {"n": len(p), "mauve": r["mauve"], "num_buckets": r["num_buckets"]}


class Accuracy(Metric):
    name = "accuracy"
    description = "zero-shot accuracy by label-word log-probability (--labels, --label-field)"
    needs = ("label",)

    def __init__(self, res):
        super().__init__(res)
        if not res.s.labels:
            raise ValueError("accuracy needs --labels (comma-separated label words)")
        self.correct = 0
        self.total = 0
        self._clf = None

    def prepare(self):
        if self._clf is None:
            from ppt.metrics.accuracy import DEFAULT_TEMPLATE, ZeroShotClassifier

            model, tok = self.res.lm
            self._clf = ZeroShotClassifier(
                model,
                tok,
                self.res.s.labels,
                self.res.s.template or DEFAULT_TEMPLATE,
                self.res.s.length_norm,
                self.res.s.batch_size,
            )

    def score(self, items):
        self.prepare()
        preds = self._clf.predict([it.text for it in items])
        out = []
        for it, (pred, _) in zip(items, preds):
            ok = str(it.label).strip().casefold() == pred.strip().casefold()
            self.correct += ok
            self.total += 1
            out.append({"prediction": pred, "correct": bool(ok)})
        return out

    def summary(self):
        from ppt.attacks.summary import wilson

        lo, hi = wilson(self.correct, self.total)
        return {
            "n": self.total,
            "accuracy": self.correct / self.total if self.total else None,
            "ci95": [lo, hi] if self.total else None,
        }


class Perplexity(Metric):
    name = "perplexity"
    description = "perplexity of the text under a local causal LM (--lm)"

    def __init__(self, res):
        super().__init__(res)
        self.nll = 0.0
        self.tokens = 0
        self.per: list[float] = []

    def prepare(self):
        self.res.lm  # noqa: B018 - loads it

    def score(self, items):
        from ppt.metrics.perplexity import perplexities, ppl

        model, tok = self.res.lm
        out = []
        for nll, n in perplexities(model, tok, [it.text for it in items], self.res.s.batch_size):
            self.nll += nll
            self.tokens += n
            p = ppl(nll, n)
            if p is not None:
                self.per.append(p)
            out.append({"perplexity": p, "tokens": n})
        return out

    def summary(self):
        from ppt.metrics.perplexity import ppl

        return {
            "n": len(self.per),
            "perplexity": ppl(self.nll, self.tokens),
            "mean_record_perplexity": _mean(self.per),
            "tokens": self.tokens,
        }


class Phr(Metric):
    name = "phr"
    description = "privacy hiding rate: share of --items-field entries absent from the text"
    needs = ("items",)

    def __init__(self, res):
        super().__init__(res)
        self.absent = 0
        self.total = 0
        self.per: list[float] = []

    def score(self, items):
        from ppt.metrics.phr import phr

        out = []
        for it in items:
            r = phr(it.items, it.text)
            self.absent += r["absent"]
            self.total += r["total"]
            if r["phr"] is not None:
                self.per.append(r["phr"])
            out.append(r)
        return out

    def summary(self):
        return {
            "n": len(self.per),
            "phr": self.absent / self.total if self.total else None,
            "items": self.total,
            "absent": self.absent,
            "mean_record_phr": _mean(self.per),
        }


class Mapping(Metric):
    name = "mapping"
    description = "retention ratio and N_w from the --alignment-field pairs"
    needs = ("alignment",)

    def __init__(self, res):
        super().__init__(res)
        from ppt.metrics.mapping import MappingTally

        self.tally = MappingTally()

    def score(self, items):
        from ppt.attacks.realign import parse_alignment_field

        out = []
        for it in items:
            al = parse_alignment_field(it.alignment, it.text)
            out.append(self.tally.add(al.orig_rows, al.new_rows))
        return out

    def summary(self):
        return self.tally.summary()


METRICS: dict[str, type[Metric]] = {
    m.name: m for m in (Diversity, Mauve, Coherence, Alignment, Rouge, Accuracy, Perplexity, Phr, Mapping)
}
DESCRIPTIONS = {name: cls.description for name, cls in METRICS.items()}


def parse_metric_names(spec: list[str]) -> list[str]:
    names: list[str] = []
    for part in spec:
        for n in part.split(","):
            n = n.strip().lower()
            if n == "rouge-l" or n == "rougel":
                n = "rouge"
            if n and n not in names:
                names.append(n)
    bad = [n for n in names if n not in METRICS]
    if bad:
        raise KeyError(bad[0])
    return names
