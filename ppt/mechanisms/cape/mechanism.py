"""Cape (context-aware prompt perturbation, papers/cape.txt): a bucketized exponential mechanism per token
whose utility mixes a local language model's contextual logits with input-embedding distance.

Mechanism (a reconstruction: our copy of the paper lost its equations; see ``shared/docs/MECHANISMS.md``
and :mod:`ppt.mechanisms.cape.utility` for the formulas). For every token t_i of the prompt that is not
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

Privacy accounting (the stamp's figures come from ``privacy_events``; per record, in ``Accounting.extra``):

* the exponential mechanism's parameter eps per perturbed token;
* ``eps_prime_mean`` / ``eps_prime_max`` and ``eps_total_mean`` / ``eps_total_max``: the paper's
  per-token ``eps + eps'`` with ``eps' = ln(max|b| / min|b|)`` over the non-empty buckets of that
  position. eps' is **data dependent** (a function of the private text, itself not privatized: keep
  the stamp local) and, as reconstructed, **not a worst-case bound**: for some pairs of inputs the
  exact log-ratio exceeds eps + eps' of either input (``tests/mechanisms/test_cape.py`` has one).
* the paper's accounting: the sum over perturbed tokens of (eps + eps'_i) under basic composition
  (``--diagnostics`` renders it as the claimed figure) (each position's mechanism is bounded against any change of the whole record, since
  Delta_u is the utility's range; positions use independent randomness).
* what is provable: per token, against another input y, eps + eps'(x) + eps'(y)
  (:func:`ppt.mechanisms.cape.utility.pairwise_bound`), and without looking at data ``eps_per_token_worst_case``
  (:func:`ppt.mechanisms.cape.utility.worst_case_eps`; SmolLM2, N_b = 50: 14.7 / 16.0 / 17.6 / 19.7 at eps = 1 / 3 /
  6 / 10); ``composed_eps_worst_case`` is n times that. With |C| ~ 49k candidates in 50 buckets the
  bucket sizes are very uneven: eps' averages ~8.7 per token on news text, so eps' and not eps
  dominates every reported figure.

The context model runs locally and sees the raw text (it is the client-side model of the paper);
nothing but the sampled tokens leaves. The token structure is public by construction: the output has
one piece per input piece, each with the original's leading whitespace.

Randomness. Each record draws two uniforms per perturbed position (bucket, member) from its own
generator, in position order, before anything else (then random digits, if that policy is used).
``batching`` decides how far float rounding may depend on the batch. After the forward pass every mode
treats the batch's perturbed positions as one stream of rows: head product, distances, utilities,
buckets and sampling run ``chunk_elements // |C|`` rows at a time, chunks running across records (no
per-record or per-token Python loop). "record": forward passes are batched within a record, never
across records, and the two products run on blocks of exactly 64 rows (the last zero-padded:
:func:`~ppt.mechanisms.cape.utility.in_row_blocks`; everything else works row by row), so a record's
rounding depends on the record alone and seeded output is bit-identical whatever the batch size or
order (mixing records in one padded forward pass changes rounding enough to flip a bucket edge now
and then); on the CPU it also runs on one intra-op thread, since the thread count changes rounding the
same way, so seeded output is the same for any ``--workers N`` (each worker has cores/N threads). "mixed": records also share padded forward passes, and products take whole chunks (1.1x
the prompts/s of "record" in batches of 8 50-token prompts, 1.5x in batches of 32, on a 2-core CPU;
bench/sanitize_cape.py). "auto" (the default): "record" on seeded runs, "mixed" on OS-entropy runs,
whose output is not reproducible anyway.

Cost and memory. Per perturbed position: the LM head restricted to the candidates and the distances
to all candidates (two [c, d] x [d, |C|] products, ~3 GFLOP per 50-token prompt for SmolLM2, on top
of the ~11 GFLOP forward pass), then ~20 elementwise passes over the [c, |C|] utility rows, processed
``chunk_elements // |C|`` rows at a time (default 2^22 elements on a CPU: 86 rows, ~100 MB of
temporaries for SmolLM2; 2^26 on CUDA: ~1,380 rows, ~2 GB). The causal forward pass is batched under
a token budget; a masked LM gets one masked copy per perturbed position. ``dtype="bfloat16"`` runs the
forward pass and both products in bf16 (about 4x faster matrix products on CPUs with AVX512-BF16/AMX
and on GPUs; utilities then agree with float32 to ~1e-2); it is the default when the context model is
on CUDA (float16 on GPUs without bf16), float32 on the CPU. ``params()`` states the dtype and how it was
chosen (``dtype_source``), and the compact signature names any dtype other than float32.

Implemented on the shared token pipeline (:class:`~ppt.mechanisms.pipeline.TokenPipeline`: its plan,
draw order, rebuild, pair spans and kept/dropped counting): Cape fills in its hooks with the context
model's tokenizer (:class:`~ppt.spaces.tokenizers.HFTokenizer`, whose rows are token ids), the ASCII-only
punctuation rule, a perturbation over ids and positions (the context model needs the whole record, not
a row of a fixed table), candidate texts, and its data-dependent accounting. Parameter checks, model
loading and calibration are in :mod:`ppt.mechanisms.cape.loading`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import string
from itertools import pairwise
from typing import Any, ClassVar

import numpy as np
import torch

from ppt import parallel
from ppt.accounting import ClaimedEvent, PureDpEvent, SelfComposedEvent
from ppt.lm.context import ContextModel
from ppt.mechanisms.cape import utility as cu
from ppt.mechanisms.cape.candidates import CANDIDATE_RULE, candidate_set
from ppt.mechanisms.cape.candidates import output_texts as candidate_output_texts
from ppt.mechanisms.cape.loading import (
    BATCHING,
    CALIBRATION_PROMPTS,
    CALIBRATION_QUANTILE,
    CONTEXTS,
    calibrate_logit_bound,
    default_dtype,
    load_context_model,
    merge_policy,
)
from ppt.mechanisms.params import Param
from ppt.mechanisms.pipeline import TokenPipeline
from ppt.mechanisms.policy import PERTURB, R_PERTURBED, R_PUNCT, Policy
from ppt.spaces.tokenizers import tokenize_batch
from ppt.spaces.tokens import TokenBatch

ASCII_PUNCT = frozenset(string.punctuation)
_DEFAULT_CHUNK_ELEMENTS = 1 << 22  # utility rows per chunk = this // |C| (about 86 rows for SmolLM2)
_DEFAULT_CHUNK_ELEMENTS_CUDA = 1 << 26  # on a GPU: ~1,380 rows for SmolLM2, ~2 GB of temporaries
GEMM_ROWS = 64  # rows per head / distance product when records must not share rounding (batching "record")


class Cape(TokenPipeline):
    """Cape: bucketized exponential mechanism over a context model's vocabulary (eps-LDP per token + eps')."""

    name: ClassVar[str] = "cape"
    rows_in_model_space: ClassVar[bool] = True
    notion: ClassVar[str] = (
        "eps-LDP per token at the bucketized exponential mechanism's data-independent worst case; the paper's eps + eps' is a claim"
    )
    summary: ClassVar[str] = "Context-aware bucketized EM: LM logits (causal or masked) + input-embedding distance"
    default_eps: ClassVar[float] = 6.0
    default_space: ClassVar[str | None] = None
    default_model: ClassVar[str] = "smollm2"
    default_policy: ClassVar[Policy] = Policy(oov="drop", numbers="perturb", punct="keep", stopwords="keep")
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param("model", "smollm2", "context model: an offline alias, a path or a hub id", type="any"),
        Param("lambda_l", 0.5, "weight of the context model's logit term", low=0.0),
        Param("lambda_d", 1.0, "weight of the embedding-distance term", low=0.0),
        Param("buckets", 50, "buckets of the bucketized exponential mechanism", type="int", low=1),
        Param("utility", "product", "how the two terms combine", type="str", choices=cu.UTILITIES),
        Param(
            "logit_bound",
            None,
            "clip bound B of the logits (default: from the model)",
            low=0.0,
            open_low=True,
            nullable=True,
        ),
        Param("context", "auto", "causal (left context) or masked (both sides)", type="str", choices=CONTEXTS),
        Param("dtype", None, "the context model's dtype (default: the device's)", type="any"),
        Param("batching", "auto", "record (one record per forward) or mixed", type="str", choices=BATCHING),
        Param(
            "chunk_elements",
            None,
            "candidate-distance elements per block",
            type="int",
            low=1,
            nullable=True,
            internal=True,
        ),
    )

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
        chunk_elements: int | None = None,
        batching: str = "auto",
        **unknown: Any,
    ):
        super().__init__(eps)
        if space is not None:
            raise ValueError(
                "Cape uses its context model's input embeddings, not an embedding space: pass --model instead of --space"
            )
        p = self.check_params(
            {
                "model": model,
                "lambda_l": lambda_l,
                "lambda_d": lambda_d,
                "buckets": buckets,
                "utility": utility,
                "logit_bound": logit_bound,
                "context": context,
                "dtype": dtype,
                "batching": batching,
                "chunk_elements": chunk_elements,
                **unknown,
            }
        )
        self.lambda_l, self.lambda_d = float(p["lambda_l"]), float(p["lambda_d"])
        if self.lambda_l == 0 and self.lambda_d == 0:
            raise ValueError("cape: lambda_l and lambda_d cannot both be 0")
        self.buckets, self.utility, self.batching = p["buckets"], p["utility"], p["batching"]
        logit_bound, context, chunk_elements = p["logit_bound"], p["context"], p["chunk_elements"]
        self.policy = merge_policy(self.default_policy, policy)
        self.quiet = quiet
        self.delta_u = cu.sensitivity(utility, self.lambda_l, self.lambda_d)
        self.policy.warn_leaks()

        self.dtype = dtype
        lm, tok, self.model_name, kind = load_context_model(model, context, device, dtype)
        lm, self.dtype_source = default_dtype(lm, dtype)
        from ppt.spaces.tokenizers import HFTokenizer

        self.tokenizer = HFTokenizer(tok)
        emb = lm.get_input_embeddings().weight.detach()
        self.device = emb.device
        if chunk_elements is None:
            chunk_elements = _DEFAULT_CHUNK_ELEMENTS_CUDA if self.device.type == "cuda" else _DEFAULT_CHUNK_ELEMENTS
        self.chunk_elements = int(chunk_elements)
        n_rows = emb.shape[0]
        out_emb = lm.get_output_embeddings()
        if out_emb is not None and hasattr(out_emb, "weight"):
            n_rows = min(n_rows, out_emb.weight.shape[0])
        cand, self.cand_text = candidate_set(tok, n_rows)
        if cand.numel() < 2:
            raise ValueError("the context model has fewer than 2 candidate tokens")
        self.candidates = cand.to(self.device)
        # output texts by candidate column (uniform replacements) and by token id (perturbed pieces)
        self.cand_text_array, self.id_text = candidate_output_texts(cand, self.cand_text, n_rows)
        self.candidate_ids = cand.numpy()
        self.embeddings = emb.float()  # [V_emb, d], rows for original tokens
        self.cand_emb = self.embeddings.index_select(0, self.candidates).contiguous()
        self.cand_sqnorm = self.cand_emb.pow(2).sum(1)
        self.mm_dtype = next(lm.parameters()).dtype
        self.cand_emb_mm = self.cand_emb if self.mm_dtype == torch.float32 else self.cand_emb.to(self.mm_dtype)
        self.lm = ContextModel(lm, tok, kind, self.candidates)
        self.context = kind
        from ppt.models.fingerprint import weights_fingerprint

        self.model_hash = weights_fingerprint(lm)
        if logit_bound is None:
            self.logit_bound = calibrate_logit_bound(self.tokenizer, self.lm)
            self.bound_source = f"calibrated: {CALIBRATION_QUANTILE:.1%} quantile of |logit| over candidates, all positions of {len(CALIBRATION_PROMPTS)} built-in prompts"
        else:
            self.logit_bound = float(logit_bound)
            self.bound_source = "given"
        self.worst_case = cu.worst_case_eps(self.eps, int(self.candidates.numel()), self.buckets)

    def default_batch_size(self) -> int:
        """512 prompts on a GPU (one forward pass of the context model per batch keeps it busy); 64 on the CPU."""
        return 512 if str(self.device).startswith("cuda") else 64

    def params(self) -> dict[str, Any]:
        return {
            "eps": self.eps,
            "model": self.model_name,
            "model_hash": self.model_hash,
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
            "dtype": self.model_dtype,
            "dtype_source": self.dtype_source,
            "context_prefix_token": self.lm.prefix_id,
            "eps_per_token_worst_case": self.worst_case,
            "policy": dataclasses.asdict(self.policy)
            | {
                "stopwords_rule": "NLTK 179, whole words only",
                "punct_rule": "pieces of the 32 ASCII punctuation characters",
            },
        }

    # ---- the pipeline's hooks ----------------------------------------------------------------------

    def tokenize_batch(self, texts: list[str]) -> TokenBatch:
        """The context model's tokens: a piece's row is its token id."""
        return tokenize_batch(self.tokenizer, texts)

    def plan_codes(
        self, codes: np.ndarray, rows: np.ndarray, lead: list[str], core: list[str], starts: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The shared policy plan (whole-word stopwords), refined: punctuation only the 32 ASCII marks
        (other punctuation pieces are perturbed)."""
        actions, why = super().plan_codes(codes, rows, lead, core, starts)
        punct = np.flatnonzero(why == R_PUNCT)
        other = punct[
            np.fromiter((not ASCII_PUNCT.issuperset(core[i]) for i in punct.tolist()), dtype=bool, count=punct.size)
        ]
        actions[other], why[other] = PERTURB, R_PERTURBED
        return actions, why

    def draw(self, n: int, g: np.random.Generator) -> dict[str, torch.Tensor]:
        """Two uniforms per perturbed position: bucket, member."""
        return {"rand": torch.from_numpy(g.random((n, 2)))}

    def perturb_batch(
        self, tb: TokenBatch, perturb: np.ndarray, counts: list[int], rand: dict[str, torch.Tensor], reproducible: bool
    ) -> tuple[np.ndarray, dict[str, torch.Tensor]]:
        """``perturb`` on each record's ids and perturbed positions; new rows are candidate token ids."""
        spans = list(pairwise(tb.bounds.tolist()))
        ids = [tb.rows[lo:hi] for lo, hi in spans]
        positions = [np.flatnonzero(perturb[lo:hi]) for lo, hi in spans]
        cols, diag = self.perturb(ids, positions, rand["rand"], reproducible)
        return self.candidate_ids[cols.numpy()], diag

    def output_texts(self, new_rows: np.ndarray) -> np.ndarray:
        return self.id_text[new_rows]

    def uniform_texts(self, n: int, g: np.random.Generator) -> np.ndarray:
        return self.cand_text_array[g.integers(0, len(self.cand_text_array), size=n)]

    CLAIM: ClassVar[str] = "Cape paper: eps+eps' (eps' data dependent, see --diagnostics)"
    CLAIM_EPS_ONLY: ClassVar[str] = (
        "Cape paper's eps only: eps' depends on the raw text, so eps+eps' is in --diagnostics"
    )

    def audit_model(self, context: str = ""):
        """This mechanism's output distribution for `ppt audit` (:mod:`ppt.mechanisms.exact`), at the position
        after ``context`` (words the policy keeps, e.g. "and the "; empty: a one-token prompt)."""
        from ppt.mechanisms.exact import CapeModel

        return CapeModel(self, context)

    def privacy_events(self, acc, *, diagnostics: bool = False) -> list:
        """Proven: the data-independent worst case per token (``worst_case_eps``, ~17.6 at eps 6 on
        SmolLM2). The paper's eps + eps' is a labelled claim; without --diagnostics it is stated as eps
        per token, since eps' depends on the raw text."""
        n = int(acc.n_perturbed)
        with_prime = bool(diagnostics and n)
        claimed = float(acc.extra.get("eps_total_mean", self.eps)) if with_prime else self.eps
        label = self.CLAIM if with_prime else self.CLAIM_EPS_ONLY  # the label says what the figure is
        return [
            SelfComposedEvent(PureDpEvent(self.worst_case), n),
            SelfComposedEvent(ClaimedEvent(claimed, label), n),
        ]

    @property
    def model_dtype(self) -> str:
        return str(next(self.lm.model.parameters()).dtype).removeprefix("torch.")

    def signature_params(self) -> dict[str, Any]:
        """The compact signature's parameters; the context model's dtype only when it is not float32
        (bf16 utilities differ from float32 ones by ~1e-2, so such outputs say so)."""
        out = {
            "model": f"{self.model_name}#{self.model_hash[:8]}",
            "context": self.context,
            "buckets": self.buckets,
            "utility": self.utility,
            "lambda_l": self.lambda_l,
            "lambda_d": self.lambda_d,
            "B": float(f"{self.logit_bound:.6g}"),
        }
        if self.model_dtype != "float32":
            out["dtype"] = self.model_dtype
        return out

    def record_extras(self, diag: dict[str, torch.Tensor], counts: list[int]) -> list[dict[str, Any]]:
        """Per record: eps' summaries (data dependent: --diagnostics only) next to the data-independent
        worst case."""
        return cu.record_accounts(diag.get("eps_prime"), counts, self.eps)

    # ---- perturbation -----------------------------------------------------------------------------

    def utilities(self, logits_c: torch.Tensor, orig_ids: torch.Tensor, gemm_rows: int | None = None) -> torch.Tensor:
        """u [c, |C|] for rows with candidate logits ``logits_c`` (overwritten) and original token ids.

        The same formulas as :mod:`ppt.mechanisms.cape.utility` (``logit_term``, ``distance_term``, ``combine``), fused
        in place (:func:`~ppt.mechanisms.cape.utility.fused_utility`).
        """
        return cu.fused_utility(
            logits_c,
            orig_ids,
            self.embeddings,
            self.cand_emb,
            self.cand_emb_mm,
            self.cand_sqnorm,
            form=self.utility,
            lambda_l=self.lambda_l,
            lambda_d=self.lambda_d,
            bound=self.logit_bound,
            gemm_rows=gemm_rows,
        )

    def mix_records(self, reproducible: bool = True) -> bool:
        """Whether forward passes and head products may mix records: ``batching="mixed"``, or "auto" on
        an unseeded run (OS-entropy output is not reproducible anyway, so nothing is lost)."""
        return self.batching == "mixed" or (self.batching == "auto" and not reproducible)

    def chunk_rows(self, mix: bool) -> int:
        """Utility rows per chunk: ``chunk_elements // |C|``; unmixed, a multiple of ``GEMM_ROWS`` (so
        only a batch's last chunk pads its products)."""
        rows = max(1, self.chunk_elements // int(self.candidates.numel()))
        return rows if mix else max(GEMM_ROWS, rows // GEMM_ROWS * GEMM_ROWS)

    def perturb(
        self, ids_list: list[np.ndarray], positions: list[np.ndarray], rand: torch.Tensor, reproducible: bool = True
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Candidate columns for all perturbed positions (text order) and per-position diagnostics.

        After the context model's forward pass, the whole batch's positions go through the head and
        distance products, utilities and sampling together, ``chunk_rows`` at a time (records share
        chunks). Unmixed (``batching="record"``), the forward passes are per record and the two
        products run on blocks of exactly ``GEMM_ROWS`` rows (:func:`~ppt.mechanisms.cape.utility.in_row_blocks`);
        every other step works row by row, so a record's output does not depend on its batch.
        """
        mix = self.mix_records(reproducible)
        # unmixed (the reproducible mode) on the CPU: one intra-op thread, since the forward pass's float
        # reductions depend on the thread count (2 threads and 1 gave 4 different records in 32 seeded
        # BBC prompts) and ``--workers N`` runs each worker on cores/N threads
        with parallel.one_thread() if not mix and self.device.type == "cpu" else contextlib.nullcontext():
            return self._perturb(ids_list, positions, rand, mix)

    def _perturb(
        self, ids_list: list[np.ndarray], positions: list[np.ndarray], rand: torch.Tensor, mix: bool
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        feats = self.lm.features(ids_list, positions, mix_records=mix)
        orig = torch.as_tensor(
            np.concatenate([np.asarray(i, dtype=np.int64)[p] for i, p in zip(ids_list, positions)]), device=self.device
        )
        rand = rand.to(self.device)
        n = int(orig.numel())
        chunk = self.chunk_rows(mix)
        gemm_rows = None if mix else GEMM_ROWS
        cols, diags = [], []
        with torch.inference_mode():
            for s in range(0, n, chunk):
                e = min(n, s + chunk)
                logits = cu.in_row_blocks(self.lm.candidate_logits, feats[s:e], gemm_rows)
                u = self.utilities(logits, orig[s:e], gemm_rows)
                c, d = cu.sample_bucketized(u, self.eps, self.delta_u, self.buckets, rand[s:e, 0], rand[s:e, 1])
                d["changed"] = self.candidates[c] != orig[s:e]
                cols.append(c)
                diags.append(d)
        diag = {k: torch.cat([d[k] for d in diags]).cpu() for k in diags[0]}
        return torch.cat(cols).cpu(), diag


__all__ = ["Cape", "CALIBRATION_PROMPTS", "CALIBRATION_QUANTILE"]
