"""The token pipeline every token-level mechanism shares: tokenize, plan, draw, perturb, rebuild.

Why one pipeline: the steps around a mechanism's own sampling rule (which pieces it may touch, the
order in which each record's generator is drawn from, how kept and dropped pieces are counted, how
the text is rebuilt, which token replaced which) are the same for every mechanism, and doing them once
over the whole batch with array operations keeps them identical and fast.

:class:`TokenPipeline` holds those steps and names the hooks a mechanism fills in: ``tokenize_batch``
(the batch's pieces), ``plan_codes`` (the shared policy plan, which a mechanism may refine), ``draw``
(one record's randomness, from that record's generator, so results never depend on batching),
``perturb_batch`` (all perturbed positions of a batch at once), ``output_texts`` / ``uniform_texts``
(the text of a new token, of uniformly random replacements) and ``record_extras`` (each record's extra
accounting counts; privacy figures come from the mechanism's events, never from here). :class:`TokenMechanism` fills them in for mechanisms
over an embedding space (``perturb_rows``: new rows for rows, tensor code); Cape
(:mod:`ppt.mechanisms.cape`) fills them in with its context model's tokenizer, ids and positions.
"""

from __future__ import annotations

from abc import abstractmethod
from operator import itemgetter
from typing import Any, ClassVar

import numpy as np

from ppt.lazy import lazy_module

torch = lazy_module("torch")

from ppt.mechanisms.accounting import Accounting, reason_counts
from ppt.mechanisms.base import Mechanism, Sanitized
from ppt.mechanisms.policy import (
    DIGITS,
    DROP,
    KEEP,
    PERTURB,
    R_WHITESPACE,
    REASON_NAMES,
    UNIFORM,
    Policy,
    plan_codes,
)
from ppt.spaces.tokens import SPACE_CODE, TokenBatch, Tokens, rebuild_pieces


def random_digits(core: str, g: np.random.Generator) -> str:
    """Same format, fresh uniformly random digits (a leading digit stays non-zero), from the record's
    generator ``g`` (:func:`ppt.rng.record_generator`)."""
    digits = [i for i, c in enumerate(core) if c.isdigit()]
    if not digits:
        return core
    draws = g.integers(0, 10, size=len(digits)).tolist()
    chars = list(core)
    for j, (i, d) in enumerate(zip(digits, draws)):
        if j == 0 and len(digits) > 1 and d == 0:
            d = 1 + int(g.integers(0, 9))
        chars[i] = str(d)
    return "".join(chars)


def token_batch_size(device: Any) -> int:
    """The token mechanisms' records per batch on ``device``: 256 on the CPU (RANTEXT on 2 cores: ~7%
    faster end to end than 64), 4096 on a GPU (a batch is then a few kernels over the device-resident
    tables)."""
    return 4096 if str(device).startswith("cuda") else 256


class TokenPipeline(Mechanism):
    """The shared per-token pipeline (``sanitize_batch``) and the hooks a mechanism fills in.

    A subclass sets ``policy`` and implements ``tokenize_batch``, ``draw``, ``perturb_batch``,
    ``output_texts`` and ``uniform_texts``; ``plan_codes``, ``draw_batch`` and ``record_extras``
    have shared defaults.
    """

    default_policy: ClassVar[Policy] = Policy()
    keeps_words: ClassVar[bool] = False  # True when the mechanism itself may keep a word (SanText+ p)
    policy: Policy
    detector: Any = None  # --protect detected (ppt.detect): only detected spans are replaced; None: all text

    # ---- per-mechanism parts ----------------------------------------------------------------------

    @abstractmethod
    def tokenize_batch(self, texts: list[str]) -> TokenBatch:
        """The batch's pieces, concatenated; ``rows`` are what ``perturb_batch`` perturbs and ``pairs`` report."""

    @abstractmethod
    def draw(self, n: int, g: np.random.Generator) -> dict[str, Any]:
        """Randomness for n perturbed positions of one record (first dimension n), drawn from the record's
        numpy generator ``g`` (:func:`ppt.rng.record_generator`): numpy arrays (a mechanism whose
        ``perturb_batch`` wants tensors may return them as tensors)."""

    @abstractmethod
    def perturb_batch(
        self, tb: TokenBatch, perturb: np.ndarray, counts: list[int], rand: dict[str, torch.Tensor], reproducible: bool
    ) -> tuple[np.ndarray, dict[str, torch.Tensor]]:
        """New rows (int64, on the CPU) for the batch's pieces under the mask ``perturb`` (``counts`` of
        them per record, records' positions in order), and per-position diagnostics (on the CPU)."""

    @abstractmethod
    def output_texts(self, new_rows: np.ndarray) -> np.ndarray:
        """The output text (object array) of each new row."""

    @abstractmethod
    def uniform_texts(self, n: int, g: np.random.Generator) -> np.ndarray:
        """n uniformly random replacements (object array), drawn from the record's generator ``g``."""

    def mechanism_leaks(self) -> list[str]:
        """Words the mechanism itself may release verbatim, by its design (SanText+'s 1-p); warned like
        the policy's leaks."""
        return []

    def warn_leaks(self) -> None:
        """LeakWarning for every way raw words get through: the policy's settings and the mechanism's own."""
        from ppt.log import LeakWarning, warn

        self.policy.warn_leaks()
        for msg in self.mechanism_leaks():
            warn(f"{msg}: those words are unprotected, outside the accounting", LeakWarning)

    def record_extra(self, diag: dict[str, torch.Tensor]) -> dict[str, Any]:
        """Per-record additions to the accounting from this record's diagnostics."""
        return {}

    # ---- shared pipeline ----------------------------------------------------------------------------

    def plan(self, tokens: Tokens) -> tuple[np.ndarray, list[str]]:
        """Action per piece and the reason for it."""
        actions, why = self.plan_codes(tokens.kind_codes(), tokens.rows, tokens.lead, tokens.core)
        return actions, REASON_NAMES[why].tolist()

    def plan_codes(
        self, codes: np.ndarray, rows: np.ndarray, lead: list[str], core: list[str], starts: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """``plan`` on arrays: actions and reason codes (``REASONS``), both int8 [n] (:func:`policy.plan_codes`).

        The pieces of several texts can be planned at once, concatenated, with ``starts`` the index of
        each text's first piece (whole-word stopword checks never look across texts).
        """
        return plan_codes(self.policy, codes, rows, lead, core, starts)

    def draw_batch(self, counts: list[int], generators: list[np.random.Generator]) -> dict[str, Any]:
        """Every record's randomness (``draw``, from that record's generator), concatenated."""
        draws = [self.draw(n, g) for n, g in zip(counts, generators)]
        return {k: _concat([d[k] for d in draws]) for k in draws[0]} if draws else {}

    def draw_and_perturb(
        self,
        tb: TokenBatch,
        perturb: np.ndarray,
        counts: list[int],
        generators: list[np.random.Generator],
        reproducible: bool = True,
    ) -> tuple[np.ndarray, dict[str, torch.Tensor]]:
        """Draw every record's randomness (``draw_batch``; also for records with nothing to perturb),
        then perturb the batch's pieces under ``perturb`` (``perturb_batch``): new rows and
        diagnostics, on the CPU."""
        rand = self.draw_batch(counts, generators)
        if not perturb.any():
            return np.empty(0, np.int64), {}
        return self.perturb_batch(tb, perturb, counts, rand, reproducible)

    def record_extras(self, diag: dict[str, torch.Tensor], counts: list[int]) -> list[dict[str, Any]]:
        """``record_extra`` of each record, from the batch's diagnostics (records' positions in order)."""
        out, offset = [], 0
        for n in counts:
            out.append(self.record_extra({k: v[offset : offset + n] for k, v in diag.items()}) if n else {})
            offset += n
        return out

    def sanitize_batch(
        self, texts: list[str], generators: list[np.random.Generator], *, reproducible: bool = True
    ) -> list[Sanitized]:
        # the batch's pieces, concatenated: every per-piece step below is an array operation
        tb = self.tokenize_batch(texts)
        n_texts, bounds, core, codes, rows = len(tb), tb.bounds.tolist(), tb.core, tb.codes, tb.rows
        rec = tb.text_index
        actions, why = self.plan_codes(codes, rows, tb.lead, core, tb.bounds[:-1])
        spans = span_index = None
        if self.detector is not None:  # --protect detected: only what the detector marks is replaced
            from ppt.mechanisms.protect import detected_span_index, keep_undetected

            spans = self.detector.detect(texts)
            span_index = detected_span_index(tb, spans)
            keep_undetected(actions, why, span_index >= 0)
        perturb = actions == PERTURB
        counts = np.bincount(rec[perturb], minlength=n_texts).tolist()
        # each record's randomness from its own generator, in a fixed order: perturbation first
        new_rows, diag = self.draw_and_perturb(tb, perturb, counts, generators, reproducible)
        # per piece: its output text (the original object when kept, None when dropped)
        out_core = np.empty(len(core), dtype=object)
        out_core[:] = core
        out_core[perturb] = self.output_texts(new_rows)
        out_core[actions == DROP] = None
        # then, per record: uniformly random replacements, then random digits (front to back); a
        # record with none draws nothing (a size-0 draw would not advance its generator either)
        uniform = np.flatnonzero(actions == UNIFORM)
        n_uniform = np.bincount(rec[uniform], minlength=n_texts).tolist()
        for b in np.flatnonzero(n_uniform).tolist():
            out_core[uniform[rec[uniform] == b]] = self.uniform_texts(n_uniform[b], generators[b])
        for i in np.flatnonzero(actions == DIGITS).tolist():
            out_core[i] = random_digits(core[i], generators[rec[i]])
        kept = reason_counts(rec, why, (actions == KEEP) & (why != R_WHITESPACE), n_texts)
        # numbers given random digits are replaced, not kept: counted apart (their format still shows)
        n_digits = np.bincount(rec[actions == DIGITS], minlength=n_texts).tolist()
        dropped = reason_counts(rec, why, actions == DROP, n_texts)
        n_tokens = np.bincount(rec[codes != SPACE_CODE], minlength=n_texts).tolist()
        extras = self.record_extras(diag, counts)
        out_list = out_core.tolist()
        texts_out, parts = [], []
        part_bounds = [0]
        for b in range(n_texts):
            lo, hi = bounds[b], bounds[b + 1]
            texts_out.append(
                rebuild_pieces(
                    tb.lead[lo:hi],
                    core[lo:hi],
                    tb.kinds[lo:hi],
                    out_list[lo:hi],
                    case=self.policy.case,
                    parts_out=parts,
                )
            )
            part_bounds.append(len(parts))
        pairs = token_pairs(
            rows[perturb],
            new_rows,
            np.flatnonzero(perturb),
            actions != DROP,
            rec[perturb],
            parts,
            part_bounds,
            texts_out,
        )
        pair_bounds = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64).tolist()
        if spans is not None:  # where every replaced piece of a detected span landed (perturbed, uniform, digits)
            replaced = np.flatnonzero((actions != KEEP) & (actions != DROP) & (span_index >= 0))
            zeros = np.zeros(replaced.size, dtype=np.int64)
            at = token_pairs(zeros, zeros, replaced, actions != DROP, rec[replaced], parts, part_bounds, texts_out)
            at_rec, at_span = rec[replaced], span_index[replaced]
        out = []
        for b in range(n_texts):
            n = counts[b]
            acc = Accounting(
                n_tokens=n_tokens[b],
                n_perturbed=n,
                kept=kept[b],
                dropped=dropped[b],
                replaced_uniform=n_uniform[b],
                digits_replaced=n_digits[b],
                extra=extras[b],
            )
            mine = pairs[pair_bounds[b] : pair_bounds[b + 1]]
            mapping = None
            if spans is not None:  # which output text stands for which detected span (--mapping, ppt restore)
                from ppt.mechanisms.protect import span_mapping

                mapping = span_mapping(texts[b], texts_out[b], spans[b], at_span[at_rec == b], at[at_rec == b])
            out.append(Sanitized(texts_out[b], acc, mine, mapping))
        return out


class TokenMechanism(TokenPipeline):
    """Per-token mechanisms over an embedding space, with explicit policies.

    Subclasses implement ``draw`` (one record's randomness for n perturbed positions, drawn from that
    record's generator) and ``perturb_rows`` (all perturbed positions of a batch at once).
    """

    def __init__(self, eps: float, space=None, policy: Policy | None = None, device: str = "auto", quiet: bool = False):
        super().__init__(eps)
        self.policy = policy or self.default_policy
        self.quiet = quiet
        self.space = space if space is not None else self.load_default_space(device, quiet)
        self.device = self.space.device
        self.warn_leaks()

    def default_batch_size(self) -> int:
        return token_batch_size(self.device)

    @property
    def unit(self) -> str:
        """What a metric-DP eps is per unit of: the space's distance (SanText, TEM)."""
        return f"{self.space.metric} distance in {self.space.name}"

    def load_default_space(self, device: str, quiet: bool):
        from ppt.spaces import load_space

        return load_space(self.default_space, device=device, quiet=quiet)

    default_space: ClassVar[str] = "cl100k-minilm"

    @abstractmethod
    def perturb_rows(
        self, rows: torch.Tensor, rand: dict[str, torch.Tensor]
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """New rows for all perturbed positions of a batch, plus per-position diagnostics (tensors; a
        mechanism with a numpy sampler runs it here when :attr:`backend` is ``"numpy"``)."""

    # ---- sampling backend: numpy on the CPU, torch on a GPU ------------------------------------------

    perturb_rows_np = None  # a mechanism's numpy sampler: (rows int64 [n], numpy draws) -> (rows, diag)
    backend_override: ClassVar[str | None] = None  # "numpy" / "torch" for every instance (tests)
    _backend: str | None = None

    @property
    def backend(self) -> str:
        """Where the sampler runs: ``"numpy"`` (no torch import: the one-record CPU path) when the space is
        on the CPU and the mechanism has a numpy sampler, ``"torch"`` otherwise (tensors on the space's
        device). Both implement the same mechanism from the same draws (the statistical tests run both);
        outputs may differ in the last bits of float rounding, so a seeded run is reproducible on one
        backend. Set ``mech.backend = "torch"`` (or ``backend_override``) to choose."""
        forced = self._backend or type(self).backend_override
        if forced == "numpy" and self.perturb_rows_np is None:
            forced = "torch"
        if forced:
            return forced
        return "numpy" if self.perturb_rows_np is not None and str(self.device) == "cpu" else "torch"

    @backend.setter
    def backend(self, value: str) -> None:
        if value not in ("numpy", "torch"):
            raise ValueError(f"backend must be 'numpy' or 'torch' (got {value!r})")
        self._backend = value

    def _rows_via_numpy(self, rows: torch.Tensor, rand: dict[str, Any]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """``perturb_rows`` on the numpy backend: tensors in and out, the numpy sampler in between."""
        out, diag = self.perturb_rows_np(
            torch.as_tensor(rows).cpu().numpy().astype(np.int64, copy=False),
            {k: np.asarray(torch.as_tensor(v).cpu()) for k, v in rand.items()},
        )
        return torch.from_numpy(np.asarray(out)), {k: torch.from_numpy(np.asarray(v)) for k, v in diag.items()}

    # ---- the pipeline's hooks, over the space's rows -------------------------------------------------

    def tokenize_batch(self, texts: list[str]) -> TokenBatch:
        return self.space.tokenize_batch(texts)

    def perturb_batch(
        self, tb: TokenBatch, perturb: np.ndarray, counts: list[int], rand: dict[str, torch.Tensor], reproducible: bool
    ) -> tuple[np.ndarray, dict[str, torch.Tensor]]:
        """``perturb_rows`` on the perturbed pieces' rows (a row's new row depends on the row alone); the
        numpy backend never touches torch."""
        if self.backend == "numpy":
            out, diag = self.perturb_rows_np(
                np.asarray(tb.rows[perturb], dtype=np.int64), {k: np.asarray(v) for k, v in rand.items()}
            )
            return np.asarray(out, dtype=np.int64), diag
        rows = torch.from_numpy(tb.rows[perturb]).to(self.device)
        new_rows, diag = self.perturb_rows(rows, {k: torch.as_tensor(v).to(self.device) for k, v in rand.items()})
        return new_rows.cpu().numpy(), {k: v.cpu() for k, v in diag.items()}

    def output_texts(self, new_rows: np.ndarray) -> np.ndarray:
        return self.space.vocab_array[new_rows]

    def uniform_texts(self, n: int, g: np.random.Generator) -> np.ndarray:
        return self.space.vocab_array[g.integers(0, self.space.size, size=n)]


def _concat(parts: list) -> Any:
    """Concatenate one record's draws after another: numpy arrays, or tensors where ``draw`` gave tensors."""
    if parts and not isinstance(parts[0], np.ndarray):
        import torch

        return torch.cat(parts)
    return np.concatenate(parts)


def token_pairs(
    orig_rows: np.ndarray,
    new_rows: np.ndarray,
    piece_idx: np.ndarray,
    surviving: np.ndarray,
    piece_rec: np.ndarray,
    parts: list[str],
    part_bounds: list[int],
    texts: list[str],
) -> np.ndarray:
    """[orig_row, new_row, start, end] of every perturbed piece of a batch (int64 [n, 4], records' pieces in order).

    ``piece_idx`` are the perturbed pieces' indices in the batch, ``surviving`` marks every piece that
    is not dropped (each has one part in ``parts``, the concatenated output of ``rebuild_pieces`` over
    the batch's records, record b's parts at ``part_bounds[b]:part_bounds[b + 1]``). A part is the
    piece's leading whitespace and its output core, so the core ends where the part ends and is as long
    as the stripped part; the record's text is its parts joined and stripped (the leading whitespace
    shifts every span, the trailing one can only cut the last).
    """
    n = piece_idx.size
    out = np.empty((n, 4), dtype=np.int64)
    out[:, 0] = orig_rows
    out[:, 1] = new_rows
    if not n:
        return out
    lens = np.fromiter(map(len, parts), dtype=np.int64, count=len(parts))
    ends = np.cumsum(lens)
    k = (np.cumsum(surviving) - 1)[piece_idx]  # each perturbed piece's part
    # each perturbed piece's part without its leading whitespace (itemgetter and map stay in C)
    mine = itemgetter(*k.tolist())(parts) if n > 1 else (parts[int(k[0])],)
    core_len = np.fromiter(map(len, map(str.lstrip, mine)), dtype=np.int64, count=n)
    base = np.empty(len(texts), dtype=np.int64)  # where each record's stripped text starts in ``parts``
    for b in np.unique(piece_rec).tolist():
        j, stop, skip = part_bounds[b], part_bounds[b + 1], 0
        while j < stop:  # whitespace the final strip removes from the front (usually within the first part)
            rest = parts[j].lstrip()
            skip += len(parts[j]) - len(rest)
            if rest:
                break
            j += 1
        base[b] = (ends[part_bounds[b] - 1] if part_bounds[b] else 0) + skip
    text_len = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    end = ends[k] - base[piece_rec]
    out[:, 2] = end - core_len
    out[:, 3] = np.minimum(end, text_len[piece_rec])
    return out


__all__ = ["TokenMechanism", "TokenPipeline", "random_digits", "token_batch_size", "token_pairs"]
