"""ProSan (papers/prosan.txt): protect the words that carry private information and matter least to the
task, replacing them with masked-LM candidates weighted by importance, privacy and similarity.

Per prompt: a local causal LM scores each word's importance K_w and privacy O_w, and the prompt's
entropy sets the protected share gamma; the least important words whose POS is eligible (NOUN, PROPN,
NUM) are protected, and so is every word of the ``always`` classes (named entities, numbers,
special-category words) whatever its importance. A protected e-mail address or word with a digit keeps its format with fresh
characters; any other protected word is replaced by a masked-LM candidate drawn with
P(c) ∝ exp((K_w - O_w) * scale * s_c).

Privacy: **no differential-privacy guarantee.** Words not selected are released verbatim and the
replacements depend on the raw text through scores that are not privatized; the stamp says so with an
:class:`~ppt.accounting.UnprotectedEvent` (proven eps "inf", notion "none"), never an eps; passing
``eps`` is an error. Measure what stays out of the output with ``ppt eval phr``.

This module wires ProSan into the token pipeline; the selection rule is :mod:`.plan`, and the candidate
vocabulary, scoring and replacement passes of the models are :mod:`.model_passes` (the formulas:
:mod:`.scores`, :mod:`.replace`). The steps in full, candidates, randomness and batching, threads, cost:
docs/mechanisms/prosan.md.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import numpy as np
import torch

from ppt.mechanisms.params import Param
from ppt.mechanisms.pipeline import TokenPipeline
from ppt.mechanisms.policy import REASON_NAMES, Policy
from ppt.mechanisms.prosan.formats import EMAIL_RULE, fresh_email
from ppt.mechanisms.prosan.model_passes import ModelPasses
from ppt.mechanisms.prosan.plan import ALWAYS_RULE, ProsanBatch, ProsanTokens, parse_always, plan_batch
from ppt.mechanisms.prosan.tagging import SpacyTagger
from ppt.mechanisms.prosan.threads import parse_threads, torch_threads
from ppt.spaces.tokens import TokenBatch, Tokens

NO_DP = "no DP guarantee: ProSan keeps or replaces words by importance and self-information"
SIMILARITIES = ("auto", "wordnet", "embedding")
CANDIDATE_RULE = "masked-LM whole-word alphabetic tokens of >= 2 letters (no special, ## or [unusedN] tokens)"


class _WordTokenizer:
    """``tokenize(text)``: one text's pieces and plan, scored as a seeded run scores it."""

    def __init__(self, mech: ProSan):
        self.mech = mech

    def tokenize(self, text: str) -> ProsanTokens:
        tb = self.mech.tokenize_batch([text], reproducible=True)
        return ProsanTokens(
            lead=tb.lead,
            core=tb.core,
            rows=tb.rows,
            kinds=tb.kinds,
            ids=tb.rows,
            codes=tb.codes,
            actions=tb.actions,
            why=tb.why,
        )


def _choice(name: str, value: Any, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)} (got {value!r})")
    return value


class ProSan(ModelPasses, TokenPipeline):
    """ProSan: importance- and self-information-driven anonymization (no DP guarantee)."""

    name: ClassVar[str] = "prosan"
    notion: ClassVar[str] = (
        "none: no differential-privacy guarantee (contextual anonymization by importance and self-information)"
    )
    summary: ClassVar[str] = "ProSan: replace unimportant nouns, names and numbers with masked-LM candidates (no DP)"
    default_eps: ClassVar[float] = 1.0  # placeholder: ProSan has no eps (any other value is rejected)
    takes_eps: ClassVar[bool] = False
    default_space: ClassVar[str | None] = None
    default_model: ClassVar[str] = "smollm2"
    default_policy: ClassVar[Policy] = Policy(
        oov="keep", numbers="random-digits", punct="keep", stopwords="keep", case="sentence"
    )
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param("model", "smollm2", "causal LM for importance and self-information scores (alias or path)", type="any"),
        Param("mlm", "splade-tiny", "masked LM proposing replacements (alias or path)", type="any"),
        Param("tagger", "en_core_web_sm", "spaCy model (or a tagger object) for POS tags", type="any"),
        Param("lambda", 0.8, "weight of importance against self-information", low=0.0),
        Param("tau", 0.9, "selection threshold on the combined score", low=0.0, high=1.0, open_low=True),
        Param("max_candidates", 50, "masked-LM candidates per replaced word", type="int", low=1),
        Param("similarity", "auto", "auto | wordnet | embedding (or a function)", type="any"),
        Param("scale", 1.0, "scale of the score noise", low=None),
        Param("response_tokens", 8, "tokens of the model's response scored for importance", type="int", low=0),
        Param("pos", "NOUN,PROPN,NUM", "POS tags whose words may be replaced (comma-separated)", type="any"),
        Param("exclude_original", True, "never propose the original word", type="bool"),
        Param("max_tokens", 512, "longest record, in tokens", type="int", low=1),
        Param("batching", "record", "record | mixed", type="str", choices=("record", "mixed")),
        Param("emails", True, "replace e-mail addresses by fresh ones of the same shape", type="bool"),
        Param("threads", "auto", "torch threads (auto | N)", type="any"),
        Param(
            "dtype",
            "float32",
            "the causal LM's weights: float32, or bfloat16 (1.6x on a CPU with AVX512-BF16 or AMX, 1.8x with "
            "batching=mixed, docs/pii; the scores round differently, so some outputs differ from float32's)",
            type="str",
            choices=("float32", "bfloat16"),
        ),
        Param(
            "always",
            "entities,numbers,categories",
            "words protected whatever their importance, besides the gamma share (comma-separated, or none): "
            "entities = spaCy NER person/place/nationality spans (the names and e-mails the paper's PII "
            "list starts with), numbers = words with a digit (ages, phones, IDs: fresh digits, format kept), "
            "categories = special-category words (health, sexual orientation, religion, politics, ethnicity, "
            "finances, occupation: the paper's non-entity private attributes) from ppt.detect's WordNet "
            "lexicon. The paper lets users choose the word types of interest (Sec. 5.1); at its defaults "
            "the least-important-first rule alone left a fifth of listed items (docs/prosan)",
            type="any",
        ),
    )

    def __init__(
        self,
        eps: float = 1.0,
        model: str = "smollm2",
        mlm: str = "splade-tiny",
        tagger: Any = "en_core_web_sm",
        similarity: Any = "auto",
        tau: float = 0.9,
        max_candidates: int = 50,
        scale: float = 1.0,
        response_tokens: int = 8,
        pos: str | list[str] = "NOUN,PROPN,NUM",
        exclude_original: bool = True,
        max_tokens: int = 512,
        batching: str = "record",
        emails: bool = True,
        threads: Any = "auto",
        always: Any = "entities,numbers,categories",
        policy: Policy | dict | None = None,
        device: str = "auto",
        quiet: bool = False,
        space: Any = None,
        batch_size: int = 8,
        **extra: Any,
    ):
        super().__init__(eps)
        if self.eps != self.default_eps:
            raise ValueError("prosan has no eps (it gives no differential-privacy guarantee): leave --eps out")
        if "lam" in extra:
            extra["lambda"] = extra.pop("lam")
        given = {
            "model": model,
            "mlm": mlm,
            "tagger": tagger,
            "similarity": similarity,
            "tau": tau,
            "max_candidates": max_candidates,
            "scale": scale,
            "response_tokens": response_tokens,
            "pos": pos,
            "exclude_original": exclude_original,
            "max_tokens": max_tokens,
            "batching": batching,
            "emails": emails,
            "threads": threads,
            "always": always,
            **extra,
        }
        p = self.check_params(given)  # unknown names, types and ranges: the declaration above
        if space is not None:
            raise ValueError(
                "prosan uses a causal LM and a masked LM, not an embedding space: pass --model / --param mlm=..."
            )
        self.lam, self.tau, self.max_candidates = p["lambda"], p["tau"], p["max_candidates"]
        self.scale, self.response_tokens, self.max_tokens = p["scale"], p["response_tokens"], p["max_tokens"]
        model, mlm, tagger, similarity = p["model"], p["mlm"], p["tagger"], p["similarity"]
        pos, exclude_original, batching, emails, threads = (
            p["pos"],
            p["exclude_original"],
            p["batching"],
            p["emails"],
            p["threads"],
        )
        tags = pos.split(",") if isinstance(pos, str) else list(pos)
        self.pos = tuple(sorted({t.strip().upper() for t in tags if t.strip()}))
        if not self.pos:
            raise ValueError("pos must name at least one POS tag (e.g. NOUN,PROPN,NUM)")
        self.exclude_original, self.emails = exclude_original, emails
        self.threads = parse_threads(threads)
        self.lm_dtype = p["dtype"]
        self.always = parse_always(p["always"])
        self.policy = _merge_policy(self.default_policy, policy)
        self.model_name, self.mlm_name = str(model), str(mlm)
        self.tagger_spec = tagger
        self.tagger_name = tagger if isinstance(tagger, str) else getattr(tagger, "name", type(tagger).__name__)
        if callable(similarity) and not isinstance(similarity, str):
            self.similarity_fn, self.similarity = similarity, getattr(similarity, "source", "custom")
        else:
            _choice("similarity", similarity, SIMILARITIES)
            if similarity == "auto":
                from ppt.mechanisms.prosan.wordnet import wordnet_available

                similarity = "wordnet" if wordnet_available() else "embedding"
            self.similarity_fn, self.similarity = None, similarity
        self.batching = batching
        self.device_arg, self.quiet, self.batch_size = device, quiet, max(1, int(batch_size))
        self.tokenizer = _WordTokenizer(self)
        self._ready = False
        self._current: ProsanBatch | None = None
        self._mail_records = None
        # opt-in memo of scores by text (experiments re-running the same prompts under several
        # settings: the scores do not depend on lambda, tau or scale); None = off
        self.score_cache: dict | None = None
        from ppt.log import LeakWarning, warn

        warn(
            "prosan gives no differential-privacy guarantee: words it does not select are released verbatim "
            "(measure what is hidden with `ppt eval phr`)",
            LeakWarning,
        )

    # ---- parameters and stamp ---------------------------------------------------------------------

    def params(self) -> dict[str, Any]:
        return {
            "model": self.model_name,
            "mlm": self.mlm_name,
            "tagger": self.tagger_name,
            "lambda": self.lam,
            "tau": self.tau,
            "max_candidates": self.max_candidates,
            "similarity": self.similarity,
            "scale": self.scale,
            "response_tokens": self.response_tokens,
            "pos": ",".join(self.pos),
            "exclude_original": self.exclude_original,
            "max_tokens": self.max_tokens,
            "batching": self.batching,
            "emails": self.emails,
            "threads": self.threads,
            "always": ",".join(self.always) or "none",
            "always_rule": ALWAYS_RULE if self.always else "off: only the gamma share of eligible words",
            "importance": "||mean over the word's tokens of dL/d(input embedding)||_2, min-max over the prompt's words; "
            "L = mean NLL of the LM's greedy response (the prompt's own LM loss when response_tokens=0)",
            "privacy": "self-information -ln p(token | prefix) summed over the word's tokens, min-max over the prompt's words",
            "protected_share": "gamma = min(1, lambda * sigmoid(mean self-information)); the ceil(gamma * n) least important words of the selected POS",
            "weights": "P(c) ∝ exp((K_w - O_w) * scale * s_c) over masked-LM candidates up to cumulative probability tau",
            "similarity_fallback": "cosine of masked-LM input embeddings clipped to [0, 1] (when WordNet is absent)",
            "candidates": CANDIDATE_RULE,
            "numbers": "protected words with a digit: same format, fresh uniformly random digits",
            "email_rule": EMAIL_RULE if self.emails else "off: e-mail addresses are eligible only by their POS tag",
            "guarantee": NO_DP,
            "policy": dataclasses.asdict(self.policy),
        }

    def signature_params(self) -> dict[str, Any]:
        return {
            "model": self.model_name,
            "mlm": self.mlm_name,
            "lambda": self.lam,
            "tau": self.tau,
            "sim": self.similarity,
            "scale": self.scale,
            "resp": self.response_tokens,
            "pos": ".".join(self.pos),
            "email": self.emails,
            "always": self._always_signature(),
        } | ({"dtype": self.lm_dtype} if self.lm_dtype != "float32" else {})

    def _always_signature(self) -> str:
        """The always-protected classes; with ``categories``, the shipped lexicon's tag (as the detector's
        own signature carries it): a regenerated lexicon protects other words, so it is another mechanism."""
        if not self.always:
            return "none"
        out = ".".join(self.always)
        if "categories" in self.always:
            from ppt.detect.categories import lexicon_tag

            out += f"#{lexicon_tag()}"
        return out

    def privacy_events(self, acc, *, diagnostics: bool = False) -> list:
        """No DP guarantee: every word of the record is unprotected (kept verbatim or replaced by a rule
        that depends on the raw text); never an eps."""
        from ppt.accounting import UnprotectedEvent

        n = int(acc.n_tokens)
        return [UnprotectedEvent(n, NO_DP)] if n else []

    def record_extras(self, diag: dict[str, torch.Tensor], counts: list[int]) -> list[dict[str, Any]]:
        """Per record: what the run recorded of it (meta) and its mean candidate-list size; no eps (no DP)."""
        meta = self._current.meta if self._current is not None else [{} for _ in counts]
        extras, offset = [], 0
        ncand = diag.get("n_candidates")
        for n, m in zip(counts, meta):
            e = dict(m)
            if n and ncand is not None:
                e["candidates_mean"] = float(ncand[offset : offset + n].double().mean())
            offset += n
            extras.append(e)
        return extras

    # ---- models -------------------------------------------------------------------------------------

    def prepare(self) -> ProSan:
        """Load the tagger, the causal LM, the masked LM and WordNet now; a missing one is a PptError
        (exit 78) naming the install command."""
        if self._ready:
            return self
        from ppt.lm.base import bos_prefix, eos_ids, pad_id
        from ppt.models import load_causal_lm, load_masked_lm

        ner = "entities" in self.always
        self.tagger = SpacyTagger(self.tagger_spec, ner=ner) if isinstance(self.tagger_spec, str) else self.tagger_spec
        if ner and not callable(getattr(self.tagger, "entities", None)):
            raise ValueError(
                "always=entities needs a tagger with entities(texts) (spaCy's NER): pass always=... without it"
            )
        if "categories" in self.always:
            from ppt.detect.categories import CategoryDetector

            self.category_detector = CategoryDetector()
        if self.similarity == "wordnet" and self.similarity_fn is None:
            from ppt.mechanisms.prosan.wordnet import WordNetSimilarity, load_wordnet

            self.similarity_fn = WordNetSimilarity(load_wordnet())
        self.lm, self.lm_tok = load_causal_lm(self.model_name, device=self.device_arg, dtype=self.lm_dtype)
        if not getattr(self.lm_tok, "is_fast", False):
            from ppt.io import ExitCode, PptError

            raise PptError(
                f"prosan needs a fast tokenizer (character offsets) for {self.model_name!r}", exit_code=ExitCode.CONFIG
            )
        self.prefix = bos_prefix(self.lm_tok)
        self.lm_pad = pad_id(self.lm_tok)
        self.lm_eos = eos_ids(self.lm, self.lm_tok)
        self.mlm, self.mlm_tok = load_masked_lm(self.mlm_name, device=self.device_arg)
        if self.mlm_tok.mask_token_id is None:
            from ppt.io import ExitCode, PptError

            raise PptError(f"{self.mlm_name!r} has no mask token", exit_code=ExitCode.CONFIG)
        self._build_candidates()
        self._ready = True
        return self

    # ---- the pipeline's hooks -----------------------------------------------------------------------

    def tokenize_batch(self, texts: list[str], reproducible: bool | None = None) -> ProsanBatch:
        """Word pieces, POS, scores and the plan of every text of the batch."""
        self.prepare()
        if reproducible is None:
            reproducible = self.batching == "record"
        tb = plan_batch(self, texts, reproducible)
        self._current, self._mail_records = tb, None
        return tb

    def plan(self, tokens: Tokens) -> tuple[np.ndarray, list[str]]:
        if isinstance(tokens, ProsanTokens):
            return tokens.actions.copy(), REASON_NAMES[tokens.why].tolist()
        raise TypeError("ProSan plans its own word pieces: use mech.tokenizer.tokenize(text)")

    def plan_codes(self, codes, rows, lead, core, starts=None):
        """The plan ``tokenize_batch`` made for this batch (ProSan's plan needs the LM's scores)."""
        tb = self._current
        if tb is None or tb.lead is not lead:
            raise RuntimeError("ProSan's plan is made by tokenize_batch within sanitize_batch")
        return tb.actions.copy(), tb.why.copy()

    def draw(self, n: int, g: np.random.Generator) -> dict[str, torch.Tensor]:
        """One uniform per replaced word."""
        return {"u": torch.from_numpy(g.random(n))}

    def perturb_batch(
        self, tb: TokenBatch, perturb: np.ndarray, counts: list[int], rand: dict[str, torch.Tensor], reproducible: bool
    ):
        with torch_threads(self.threads):
            new_ids, diag = self.perturb(
                tb, np.flatnonzero(perturb), rand["u"], reproducible or self.batching == "record"
            )
        return new_ids, diag

    def output_texts(self, new_rows: np.ndarray) -> np.ndarray:
        return self.id_text[new_rows]

    def uniform_texts(self, n: int, g: np.random.Generator) -> np.ndarray:
        """Fresh-format replacements of the next record's protected e-mail addresses (the pipeline asks for
        the records' UNIFORM pieces record by record, in order; ProSan marks only e-mails UNIFORM)."""
        if self._mail_records is None:
            self._mail_records = iter([m for m in self._current.emails if m])
        words = next(self._mail_records)
        if len(words) != n:
            raise RuntimeError("ProSan's e-mail plan and the pipeline disagree")
        return np.asarray([fresh_email(w, g) for w in words], dtype=object)


def _flag(value: Any) -> bool:
    return value.lower() in ("1", "true", "yes") if isinstance(value, str) else bool(value)


def _merge_policy(base: Policy, policy: Policy | dict | None) -> Policy:
    """ProSan honours ``numbers`` (random-digits | drop, for protected numbers) and ``case``; the other
    policy fields describe what ProSan does by design (words it does not select are kept)."""
    if policy is None:
        return base
    chosen = dataclasses.asdict(policy) if isinstance(policy, Policy) else dict(policy)
    out = dataclasses.replace(base, numbers=chosen.get("numbers", base.numbers), case=chosen.get("case", base.case))
    for f in ("oov", "punct", "stopwords"):
        if f in chosen and chosen[f] != getattr(base, f) and isinstance(policy, dict):
            raise ValueError(f"prosan does not take --{f}: ProSan keeps every word it does not select")
    if out.numbers not in ("random-digits", "drop"):
        raise ValueError("prosan's --numbers must be random-digits or drop (protected numbers)")
    return out


__all__ = ["CANDIDATE_RULE", "NO_DP", "ProSan", "ProsanBatch", "ProsanTokens"]
