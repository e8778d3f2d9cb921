"""Cape (context-aware prompt perturbation, papers/cape.txt): a bucketized exponential mechanism per token
whose utility mixes a local language model's contextual logits with input-embedding distance.

Why this module: it wires the context model, the candidate set (:mod:`.candidates`) and the kernels
(:mod:`.utility`) into the shared token pipeline's hooks, and states the accounting: the data-independent
worst case per token is proven, the paper's eps + eps' (eps' data dependent) is a labelled claim.
Loading and calibration are :mod:`.loading`. The formulas, the logit bound B, the kept tokens, the
randomness and batching modes, cost and memory: docs/mechanisms/cape.md.
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
