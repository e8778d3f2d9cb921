"""Cape (context-aware prompt perturbation, papers/cape.txt): a bucketized exponential mechanism per token
whose utility mixes a local language model's contextual logits with input-embedding distance.

Mechanism (a reconstruction: our copy of the paper lost its equations; see ``shared/docs/MECHANISMS.md``
and :mod:`ppt.mechanisms.cape_utility` for the formulas). For every token t_i of the prompt that is not
kept (stopwords, punctuation) and every candidate r of the context model's vocabulary:

* logit term ``L~_r = (clip(l_r, -B, B) + B) / 2B`` with l the context model's logits for position i:
  a causal LM conditions on the *original* prefix t_<i (as the paper; GPT-style), a masked LM sees
  both sides with position i replaced by its mask token (BERT-style; all masked copies of a batch go
  through one batched forward pass);
* distance term ``D_r = exp(-d_r / d_max)`` with ``d_r = ||e(t_i) - e(r)||`` over the model's input
  embeddings and ``d_max = max_r d_r`` *for that position* (so D in [e^-1, 1]);
* ``u_r = L~^lambda_L * D^lambda_D`` (product, default; Delta_u = 1) or
  ``lambda_L * L~ + lambda_D * D`` (additive; Delta_u = lambda_L + lambda_D);
* N_b equal-width buckets over [u_min, u_max], empty buckets skipped, bucket k drawn with
  P ∝ exp(eps * mean_u(k) / (2 Delta_u)), then a uniform member.

B. When ``logit_bound`` is not given it is calibrated once, at construction, from the model's logits on
``CALIBRATION_PROMPTS`` (five fixed public-domain style sentences shipped here, so B never depends on
user data): the 99.9th percentile of |logit| over all candidates at every position of those prompts.
The paper picks B from the logit histogram ("based on the maximum value"); the maximum is one outlier
(SmolLM2: max ~34, 99.9% ~23, median ~7), while the 99.9% quantile clips only about the top 0.1%
(~50 tokens per position) and keeps the rest of the range resolved. B is reported in ``params()``.

Candidates. The model's vocabulary without special / added-special tokens, tokens whose text is empty
after stripping whitespace, tokens that decode to an incomplete UTF-8 sequence (U+FFFD) or contain a
control character other than whitespace, and BERT's ``[unusedN]`` placeholders (a fixed,
data-independent set; SmolLM2: 48,636 of 49,152). A candidate's
output text is ``tokenizer.decode([id])`` without its leading whitespace (and without WordPiece's
``##``); the original piece's leading whitespace is kept. Capitalisation is *not* copied from the
original token (that would leak the original's case outside the accounting; the model vocabulary is
cased anyway).

Kept verbatim (policy, reported in ``kept`` by reason): NLTK's 179 stopwords when the piece is a whole
word (a stopword-looking piece inside a longer word, like ``don`` of ``don't``, is perturbed) and the
32 ASCII punctuation characters (pieces made only of them; other symbols are perturbed). Numbers are
perturbed like every other token by default (``numbers="perturb"``, the paper's behaviour: every
non-stopword, non-punctuation token); ``numbers="random-digits"`` instead replaces digits by uniform
random digits of the same format (0-DP for the digits, leaks only the format). SmolLM2 tokenizes
numbers digit by digit.

Privacy accounting (reported per record, in ``Accounting.extra``):

* ``eps_per_token`` = eps, the exponential mechanism's parameter;
* ``eps_prime_mean`` / ``eps_prime_max`` and ``eps_total_mean`` / ``eps_total_max``: the paper's
  per-token ``eps + eps'`` with ``eps' = ln(max|b| / min|b|)`` over the non-empty buckets of that
  position. eps' is **data dependent** (a function of the private text, itself not privatized: keep
  the stamp local) and, as reconstructed, **not a worst-case bound**: for some pairs of inputs the
  exact log-ratio exceeds eps + eps' of either input (``tests/test_cape.py`` has one).
* ``composed_eps`` = sum over perturbed tokens of (eps + eps'_i), the paper's accounting under basic
  composition (each position's mechanism is bounded against any change of the whole record, since
  Delta_u is the utility's range; positions use independent randomness).
* what is provable: per token, against another input y, eps + eps'(x) + eps'(y)
  (:func:`cape_utility.pairwise_bound`), and without looking at data ``eps_per_token_worst_case``
  (:func:`cape_utility.worst_case_eps`; SmolLM2, N_b = 50: 14.7 / 16.0 / 17.6 / 19.7 at eps = 1 / 3 /
  6 / 10); ``composed_eps_worst_case`` is n times that. With |C| ~ 49k candidates in 50 buckets the
  bucket sizes are very uneven: eps' averages ~8.7 per token on news text, so eps' and not eps
  dominates every reported figure.

The context model runs locally and sees the raw text (it is the client-side model of the paper);
nothing but the sampled tokens leaves. The token structure is public by construction: the output has
one piece per input piece, each with the original's leading whitespace.

Randomness. Each record draws two uniforms per perturbed position (bucket, member) from its own
generator, in position order, before anything else (then random digits, if that policy is used).
``batching`` decides how far float rounding may depend on the batch. "record": forward passes and head
products are batched within a record, never across records, so a record's rounding depends on the
record alone and seeded output is bit-identical whatever the batch size or order (mixing records in one
padded batch changes rounding enough to flip a bucket edge now and then). "mixed": records share padded
forward passes (1.1x the prompts/s of "record" in batches of 8 50-token prompts, 1.5x in batches of
32, on a 2-core CPU; bench/sanitize_cape.py). "auto" (the default): "record" on seeded runs, "mixed" on OS-entropy runs, whose output is not reproducible anyway.

Cost and memory. Per perturbed position: the LM head restricted to the candidates and the distances
to all candidates (two [c, d] x [d, |C|] products, ~3 GFLOP per 50-token prompt for SmolLM2, on top
of the ~11 GFLOP forward pass), then ~20 elementwise passes over the [c, |C|] utility rows, processed
``chunk_elements // |C|`` rows at a time (86 rows, ~100 MB of temporaries for SmolLM2). The causal
forward pass is batched under a token budget; a masked LM gets one masked copy per perturbed position.
``dtype="bfloat16"`` runs the forward pass and both products in bf16 (about 4x faster matrix products
on CPUs with AVX512-BF16/AMX and on GPUs; utilities then agree with float32 to ~1e-2).

Implemented as a :class:`~ppt.mechanisms.base.Mechanism` (not a ``TokenMechanism``): its "space" is a
model's vocabulary and its utility needs the whole record, not a row of a fixed table; it reuses the
shared :class:`Policy` and ``TokenMechanism.plan`` (with Cape's stopword/punctuation refinements),
:class:`~ppt.spaces.tokenizers.HFTokenizer` and :func:`~ppt.spaces.tokens.rebuild`.
"""

from __future__ import annotations

import dataclasses
import math
import re
import string
import unicodedata
from collections import Counter
from typing import Any, ClassVar

import numpy as np
import torch

from ppt.mechanisms import cape_utility as cu
from ppt.mechanisms.base import (
    DIGITS, DROP, KEEP, PERTURB, UNIFORM, Accounting, Mechanism, Policy, Sanitized, TokenMechanism,
    random_digits,
)
from ppt.spaces.tokens import SPACE, Tokens, rebuild

CALIBRATION_PROMPTS = (
    "The committee will meet on Tuesday to review the annual budget.",
    "She bought fresh bread and a bottle of milk at the corner shop.",
    "Heavy rain caused delays on several train lines this morning.",
    "Please send me the report before the end of the week.",
    "The museum opened a new exhibition about ancient maps and old globes.",
)
CALIBRATION_QUANTILE = 0.999
CANDIDATE_RULE = "vocabulary minus special/added-special tokens, whitespace-only, U+FFFD (partial UTF-8), control-character and [unusedN] tokens"
ASCII_PUNCT = frozenset(string.punctuation)
CONTEXTS = ("auto", "causal", "masked")
BATCHING = ("auto", "record", "mixed")
_UNUSED_RE = re.compile(r"^\[unused\d+\]$")
_DEFAULT_CHUNK_ELEMENTS = 1 << 22  # utility rows per chunk = this // |C| (about 86 rows for SmolLM2)
_TOKEN_BUDGET = 8192  # tokens per forward pass (padded length x rows)


# --------------------------------------------------------------------------------------------------
# context model
# --------------------------------------------------------------------------------------------------


def _model_kind(model) -> str | None:
    name = type(model).__name__
    if "MaskedLM" in name:
        return "masked"
    if "CausalLM" in name or "LMHeadModel" in name:
        return "causal"
    return None


def _kind_from_name(name: str) -> str:
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


def _length_groups(lengths: list[int], items: list[int], budget: int) -> list[list[int]]:
    """Split forward-pass jobs into padded batches of at most ``budget`` tokens, shortest first."""
    groups: list[list[int]] = []
    for length, item in sorted(zip(lengths, items)):  # ascending: the job just added sets the padded length
        if groups and (len(groups[-1]) + 1) * length <= budget:
            groups[-1].append(item)
        else:
            groups.append([item])
    return groups


class ContextModel:
    """A causal or masked LM restricted to a candidate set: hidden features at requested positions, and
    candidate logits from features (the LM head applied only to the candidate rows)."""

    def __init__(self, model, tokenizer, kind: str, candidates: torch.Tensor, window: int | None = None):
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.kind = kind
        self.device = next(model.parameters()).device
        cfg = model.config
        max_pos = getattr(cfg, "max_position_embeddings", None) or 512
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
        pad = tokenizer.pad_token_id
        self.pad_id = int(pad if pad is not None else (tokenizer.eos_token_id or 0))
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
    def features(self, ids_list: list[np.ndarray], positions_list: list[np.ndarray], mix_records: bool = False) -> torch.Tensor:
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
            budget = _TOKEN_BUDGET
        else:  # full logits [rows, length, V] per forward pass: keep them near 64 MB
            budget = max(64, (1 << 24) // max(1, self.model.config.vocab_size))
        if mix_records:
            jobs_by_text = [[j for text_jobs in jobs_by_text for j in text_jobs]]
        groups: list[list[int]] = []
        for text_jobs in jobs_by_text:
            groups += _length_groups([len(jobs[j][0]) for j in text_jobs], text_jobs, budget)
        for group in groups:
            length = len(jobs[group[-1]][0])
            x = torch.full((len(group), length), self.pad_id, dtype=torch.long)
            mask = torch.zeros((len(group), length), dtype=torch.long)
            b_idx, h_idx, o_idx = [], [], []
            for r, j in enumerate(group):
                inp, hid, rows_out = jobs[j]
                x[r, : len(inp)] = torch.as_tensor(inp)
                mask[r, : len(inp)] = 1
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


def candidate_set(tokenizer, n_rows: int) -> tuple[torch.Tensor, list[str]]:
    """Candidate ids and their output texts (see the module docstring for the rule)."""
    n = min(len(tokenizer), n_rows)
    special = set(int(i) for i in tokenizer.all_special_ids)
    for tid, tok in getattr(tokenizer, "added_tokens_decoder", {}).items():
        if getattr(tok, "special", False):
            special.add(int(tid))
    texts = tokenizer.batch_decode([[i] for i in range(n)], skip_special_tokens=False, clean_up_tokenization_spaces=False)
    prefix = None
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None and type(backend.model).__name__ == "WordPiece":
        prefix = getattr(backend.model, "continuing_subword_prefix", "##") or None
    ids, out = [], []
    for i, t in enumerate(texts):
        if i in special:
            continue
        s = t.lstrip()
        if prefix and s.startswith(prefix) and len(s) > len(prefix):
            s = s[len(prefix) :]
        if not s.strip() or "\ufffd" in s or _UNUSED_RE.match(s) or any(unicodedata.category(ch) == "Cc" and not ch.isspace() for ch in s):
            continue
        ids.append(i)
        out.append(s)
    return torch.tensor(ids, dtype=torch.long), out


# --------------------------------------------------------------------------------------------------
# mechanism
# --------------------------------------------------------------------------------------------------


class Cape(Mechanism):
    """Cape: bucketized exponential mechanism over a context model's vocabulary (eps-LDP per token + eps')."""

    name: ClassVar[str] = "cape"
    notion: ClassVar[str] = "eps-LDP per token via bucketized exponential mechanism; reported eps + eps' (data dependent)"
    summary: ClassVar[str] = "Context-aware bucketized EM: LM logits (causal or masked) + input-embedding distance"
    default_eps: ClassVar[float] = 6.0
    default_space: ClassVar[str | None] = None
    default_model: ClassVar[str] = "smollm2"
    default_policy: ClassVar[Policy] = Policy(oov="drop", numbers="perturb", punct="keep", stopwords="keep")
    defaults: ClassVar[dict[str, Any]] = {
        "model": "smollm2", "lambda_l": 0.5, "lambda_d": 1.0, "buckets": 50, "utility": "product",
        "logit_bound": None, "context": "auto", "dtype": None, "batching": "auto",
    }

    def __init__(
        self,
        eps: float,
        model: Any = "smollm2",
        lambda_l: float = 0.5,
        lambda_d: float = 1.0,
        buckets: int = 50,
        utility: str = "product",
        logit_bound: float | None = None,
        device: str = "auto",
        context: str = "auto",
        dtype: str | None = None,
        policy: Policy | dict | None = None,
        quiet: bool = False,
        space: Any = None,
        chunk_elements: int = _DEFAULT_CHUNK_ELEMENTS,
        batching: str = "auto",
        **unknown: Any,
    ):
        super().__init__(eps)
        if unknown:
            raise ValueError(f"unknown Cape parameter(s): {', '.join(sorted(unknown))}; known: {', '.join(self.defaults)}, device, policy")
        if space is not None:
            raise ValueError("Cape uses its context model's input embeddings, not an embedding space: pass --model instead of --space")
        self.lambda_l = self._nonneg("lambda_l", lambda_l)
        self.lambda_d = self._nonneg("lambda_d", lambda_d)
        if self.lambda_l == 0 and self.lambda_d == 0:
            raise ValueError("lambda_l and lambda_d cannot both be 0")
        try:
            self.buckets = int(buckets)
        except (TypeError, ValueError):
            raise ValueError(f"buckets must be a positive integer (got {buckets!r})") from None
        if self.buckets < 1 or self.buckets != buckets:
            raise ValueError(f"buckets must be a positive integer (got {buckets!r})")
        if utility not in cu.UTILITIES:
            raise ValueError(f"utility must be one of {', '.join(cu.UTILITIES)} (got {utility!r})")
        self.utility = utility
        if logit_bound is not None:
            logit_bound = self._nonneg("logit_bound", logit_bound)
            if logit_bound <= 0:
                raise ValueError(f"logit_bound must be positive (got {logit_bound})")
        if context not in CONTEXTS:
            raise ValueError(f"context must be one of {', '.join(CONTEXTS)} (got {context!r})")
        self.policy = self._policy(policy)
        self.quiet = quiet
        self.chunk_elements = int(chunk_elements)
        if batching not in BATCHING:
            raise ValueError(f"batching must be one of {', '.join(BATCHING)} (got {batching!r})")
        self.batching = batching
        self.delta_u = cu.sensitivity(utility, self.lambda_l, self.lambda_d)
        self.policy.warn_leaks()

        self.dtype = dtype
        lm, tok, self.model_name, kind = self._load(model, context, device, dtype)
        from ppt.spaces.tokenizers import HFTokenizer

        self.tokenizer = HFTokenizer(tok)
        emb = lm.get_input_embeddings().weight.detach()
        self.device = emb.device
        n_rows = emb.shape[0]
        out_emb = lm.get_output_embeddings()
        if out_emb is not None and hasattr(out_emb, "weight"):
            n_rows = min(n_rows, out_emb.weight.shape[0])
        cand, self.cand_text = candidate_set(tok, n_rows)
        if cand.numel() < 2:
            raise ValueError("the context model has fewer than 2 candidate tokens")
        self.candidates = cand.to(self.device)
        self.embeddings = emb.float()  # [V_emb, d], rows for original tokens
        self.cand_emb = self.embeddings.index_select(0, self.candidates).contiguous()
        self.cand_sqnorm = self.cand_emb.pow(2).sum(1)
        self.mm_dtype = next(lm.parameters()).dtype
        self.cand_emb_mm = self.cand_emb if self.mm_dtype == torch.float32 else self.cand_emb.to(self.mm_dtype)
        self.lm = ContextModel(lm, tok, kind, self.candidates)
        self.context = kind
        if logit_bound is None:
            self.logit_bound = self.calibrate()
            self.bound_source = f"calibrated: {CALIBRATION_QUANTILE:.1%} quantile of |logit| over candidates, all positions of {len(CALIBRATION_PROMPTS)} built-in prompts"
        else:
            self.logit_bound = float(logit_bound)
            self.bound_source = "given"
        self.worst_case = cu.worst_case_eps(self.eps, int(self.candidates.numel()), self.buckets)

    # ---- construction helpers ---------------------------------------------------------------------

    @staticmethod
    def _nonneg(name: str, value: Any) -> float:
        try:
            v = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be a number (got {value!r})") from None
        if not math.isfinite(v) or v < 0:
            raise ValueError(f"{name} must be finite and >= 0 (got {value!r})")
        return v

    def _policy(self, policy: Policy | dict | None) -> Policy:
        if policy is None:
            return self.default_policy
        if isinstance(policy, Policy):
            return policy
        merged = dataclasses.asdict(self.default_policy)
        merged.update({k: v for k, v in dict(policy).items() if v is not None})
        return Policy(**merged)

    def _load(self, model: Any, context: str, device: str, dtype: str | None):
        if isinstance(model, (tuple, list)) and len(model) == 2:
            lm, tok = model
            kind = _model_kind(lm) if context == "auto" else context
            if kind is None:
                raise ValueError(f"cannot tell whether {type(lm).__name__} is causal or masked; pass context='causal' or 'masked'")
            name = getattr(lm.config, "_name_or_path", "") or type(lm).__name__
            if device != "auto":
                from ppt.models import resolve_device

                lm = lm.to(resolve_device(device))
            if dtype is not None:
                from ppt.models.device import resolve_dtype

                lm = lm.to(resolve_dtype(dtype, next(lm.parameters()).device))
            return lm, tok, name, kind
        if not isinstance(model, str) or not model.strip():
            raise ValueError(f"model must be a name/path or a (model, tokenizer) pair (got {model!r})")
        kind = _kind_from_name(model) if context == "auto" else context
        import ppt.models as models

        if kind == "causal":
            lm, tok = models.load_causal_lm(model, device=device, dtype=dtype)
        else:
            lm, tok = models.load_masked_lm(model, device=device)
            if dtype is not None:
                from ppt.models.device import resolve_dtype

                lm = lm.to(resolve_dtype(dtype, next(lm.parameters()).device))
        return lm, tok, model, kind

    @torch.inference_mode()
    def calibrate(self) -> float:
        """B = the 99.9% quantile of |candidate logits| at every position of the calibration prompts."""
        ids = [self.tokenizer.tokenize(p).ids for p in CALIBRATION_PROMPTS]
        feats = self.lm.features(ids, [np.arange(len(i)) for i in ids])
        logits = self.lm.candidate_logits(feats)
        bound = cu.calibrate_bound(logits.abs(), CALIBRATION_QUANTILE)
        if not math.isfinite(bound) or bound <= 0:
            raise ValueError(f"logit bound calibration failed (got {bound}); pass logit_bound explicitly")
        return bound

    def params(self) -> dict[str, Any]:
        return {
            "eps": self.eps,
            "model": self.model_name,
            "context": self.context,
            "lambda_l": self.lambda_l,
            "lambda_d": self.lambda_d,
            "buckets": self.buckets,
            "utility": self.utility,
            "delta_u": self.delta_u,
            "logit_bound": self.logit_bound,
            "logit_bound_source": self.bound_source,
            "distance": "euclidean over input embeddings; D = exp(-d / d_max), d_max per position",
            "candidates": CANDIDATE_RULE,
            "n_candidates": int(self.candidates.numel()),
            "context_window": self.lm.window,
            "dtype": str(next(self.lm.model.parameters()).dtype).removeprefix("torch."),
            "context_prefix_token": self.lm.prefix_id,
            "eps_per_token_worst_case": self.worst_case,
            "policy": dataclasses.asdict(self.policy) | {"stopwords_rule": "NLTK 179, whole words only", "punct_rule": "pieces of the 32 ASCII punctuation characters"},
        }

    # ---- planning ---------------------------------------------------------------------------------

    def plan(self, tokens: Tokens) -> tuple[np.ndarray, list[str]]:
        """The shared policy plan (whole-word stopwords), refined: punctuation only the 32 ASCII marks."""
        actions, reasons = TokenMechanism.plan(self, tokens)  # uses only self.policy
        for i, why in enumerate(reasons):
            if why == "punct" and not set(tokens.core[i]) <= ASCII_PUNCT:
                actions[i], reasons[i] = PERTURB, "perturbed"
        return actions, reasons

    # ---- perturbation -----------------------------------------------------------------------------

    def utilities(self, logits_c: torch.Tensor, orig_ids: torch.Tensor) -> torch.Tensor:
        """u [c, |C|] for rows with candidate logits ``logits_c`` (overwritten) and original token ids.

        The same formulas as :mod:`cape_utility` (``logit_term``, ``distance_term``, ``combine``), fused
        in place to keep the passes over the c x |C| matrix few: D^lambda_D = exp(-lambda_D d / d_max).
        """
        uniq, inv = torch.unique(orig_ids, return_inverse=True)
        e = self.embeddings.index_select(0, uniq)
        # ||e||^2 + ||c||^2 - 2 e.c: one matrix product for the distinct original tokens of the chunk
        if self.mm_dtype == torch.float32:
            sq = torch.addmm(self.cand_sqnorm.unsqueeze(0), e, self.cand_emb.T, alpha=-2.0)
        else:
            sq = (e.to(self.mm_dtype) @ self.cand_emb_mm.T).float().mul_(-2.0).add_(self.cand_sqnorm)
        dist = sq.add_(e.pow(2).sum(1, keepdim=True)).clamp_min_(0).sqrt_()
        dmax = dist.amax(dim=1, keepdim=True)
        dmax = torch.where(dmax > 0, dmax, torch.ones_like(dmax))
        product = self.utility == "product"
        dt = dist.mul_((-self.lambda_d if product else -1.0) / dmax).exp_()  # D^lambda_D (product) or D
        if not torch.equal(uniq, orig_ids):  # back to row order (skipped when rows are distinct and sorted)
            dt = dt.index_select(0, inv)
        b = self.logit_bound
        # L~ = (clip(l) + B) / 2B; the final clamp absorbs round-off (-B * (0.5 / B) + 0.5 can be -1e-8,
        # whose square root is NaN)
        lt = logits_c.clamp_(-b, b).mul_(0.5 / b).add_(0.5).clamp_(0.0, 1.0)
        if product:
            if self.lambda_l == 0.5:
                lt.sqrt_()
            elif self.lambda_l == 0:
                lt.fill_(1.0)
            elif self.lambda_l != 1:
                lt.pow_(self.lambda_l)
            return lt.mul_(dt)
        return lt.mul_(self.lambda_l).add_(dt, alpha=self.lambda_d)

    @property
    def mix_records(self) -> bool:
        """Whether forward passes and head products may mix records: ``batching="mixed"``, or "auto" on
        an unseeded run (OS-entropy output is not reproducible anyway, so nothing is lost)."""
        return self.batching == "mixed" or (self.batching == "auto" and not self.reproducible)

    def perturb(self, ids_list: list[np.ndarray], positions: list[np.ndarray], rand: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Candidate columns for all perturbed positions (text order) and per-position diagnostics."""
        mix = self.mix_records
        feats = self.lm.features(ids_list, positions, mix_records=mix)
        orig = torch.as_tensor(np.concatenate([np.asarray(i, dtype=np.int64)[p] for i, p in zip(ids_list, positions)]), device=self.device)
        rand = rand.to(self.device)
        chunk = max(1, self.chunk_elements // int(self.candidates.numel()))
        cols, diags = [], []
        bounds = np.cumsum([0] + [len(p) for p in positions])
        if mix:
            bounds = bounds[[0, -1]]
        # unmixed, chunks never straddle records: a record's head products have shapes set by the record alone
        spans = [(s, min(s + chunk, int(end))) for start, end in zip(bounds[:-1], bounds[1:]) for s in range(int(start), int(end), chunk)]
        with torch.inference_mode():
            for s, e in spans:
                u = self.utilities(self.lm.candidate_logits(feats[s:e]), orig[s:e])
                c, d = cu.sample_bucketized(u, self.eps, self.delta_u, self.buckets, rand[s:e, 0], rand[s:e, 1])
                d["changed"] = self.candidates[c] != orig[s:e]
                cols.append(c)
                diags.append(d)
        diag = {k: torch.cat([d[k] for d in diags]).cpu() for k in diags[0]}
        return torch.cat(cols).cpu(), diag

    def sanitize_batch(self, texts: list[str], generators: list[torch.Generator]) -> list[Sanitized]:
        toks = [self.tokenizer.tokenize(t) for t in texts]
        plans = [self.plan(t) for t in toks]
        positions = [np.flatnonzero(a == PERTURB) for a, _ in plans]
        # each record's randomness from its own generator, perturbation first: (bucket, member) per position
        draws = [torch.rand((len(p), 2), generator=g, dtype=torch.float64) for p, g in zip(positions, generators)]
        total = sum(len(p) for p in positions)
        if total:
            cols, diag = self.perturb([t.ids for t in toks], positions, torch.cat(draws))
            cols = cols.numpy()
        else:
            cols, diag = np.empty(0, np.int64), {}
        out, offset = [], 0
        ncand = int(self.candidates.numel())
        for tok, (actions, reasons), pos, g in zip(toks, plans, positions, generators):
            n = len(pos)
            mine = cols[offset : offset + n]
            my = {k: v[offset : offset + n] for k, v in diag.items()}
            offset += n
            n_uniform = int((actions == UNIFORM).sum())
            uniform = iter(torch.randint(0, ncand, (n_uniform,), generator=g).tolist())
            it = iter(mine.tolist())
            cores: list[str | None] = []
            for core, act in zip(tok.core, actions):
                if act == PERTURB:
                    cores.append(self.cand_text[next(it)])
                elif act == KEEP:
                    cores.append(core)
                elif act == DIGITS:
                    cores.append(random_digits(core, g))
                elif act == UNIFORM:
                    cores.append(self.cand_text[next(uniform)])
                else:
                    assert act == DROP
                    cores.append(None)
            kept = Counter(r for a, r in zip(actions, reasons) if a == KEEP and r != "whitespace")
            kept.update(r for a, r in zip(actions, reasons) if a == DIGITS)
            dropped = Counter(r for a, r in zip(actions, reasons) if a == DROP)
            extra: dict[str, Any] = {"eps_per_token_worst_case": self.worst_case, "composed_eps_worst_case": n * self.worst_case}
            if n:
                ep = my["eps_prime"].double()
                extra.update(
                    eps_prime_mean=float(ep.mean()),
                    eps_prime_max=float(ep.max()),
                    eps_total_mean=self.eps + float(ep.mean()),
                    eps_total_max=self.eps + float(ep.max()),
                )
                composed = float(n * self.eps + ep.sum())
            else:
                extra.update(eps_prime_mean=0.0, eps_prime_max=0.0, eps_total_mean=0.0, eps_total_max=0.0)
                composed = 0.0
            extra["composition"] = "basic: sum over perturbed tokens of (eps + eps'_i); eps'_i data dependent (paper's Theorem 4.1), see eps_per_token_worst_case"
            acc = Accounting(
                notion=self.notion,
                eps_per_token=self.eps,
                n_tokens=int(sum(1 for k in tok.kinds if k != SPACE)),
                n_perturbed=n,
                kept=dict(kept),
                dropped=dict(dropped),
                replaced_uniform=n_uniform,
                composed_eps=composed,
                extra=extra,
            )
            out.append(Sanitized(rebuild(tok, cores, case=self.policy.case), acc))
        return out


__all__ = ["Cape", "ContextModel", "candidate_set", "CALIBRATION_PROMPTS", "CALIBRATION_QUANTILE"]
