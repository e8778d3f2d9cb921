"""RANTEXT (InferDPT, Tong et al., Algorithm 2): exponential mechanism over a random adjacency list.

For each perturbed token t:

1. Y_d ~ Laplace(0, Delta_d / Z(eps)) independently per dimension (Delta = the space's per-dimension
   sensitivity, max - min of the embeddings); r = ||Y||_2.
2. C_r(t) = {t' : ||phi(t) - phi(t')|| < r} (t itself always belongs: distance 0).
3. u(t, t') = 1 - ||phi(t) - phi(t')|| / r in (0, 1]; output t' in C_r(t) with P proportional to
   exp(eps / 2 * u(t, t')).

Privacy notion, stated honestly: the paper proves eps-LDP for the sampling step *given* the list
C_r(t) (inputs and outputs inside one list, utility with sensitivity 1). C_r itself is drawn from a
noise distribution centred on the private token and is not accounted for; the mechanism as a whole
is not eps-LDP over the vocabulary (a far-away token reaches t's neighbourhood only when its radius
is large). ppt reports eps per token and the basic composition n * eps, with that caveat in the
notion string.

Z(eps): ``z="calibrated"`` (default) fits Z per space so the median |C_r| / |V| follows the paper's
list sizes (see :mod:`ppt.mechanisms.calibration`); ``z="paper"`` uses the published formula
(:class:`ZConstants`), whose constants were fitted to ada-002 and do not transfer; a positive number
fixes Z.

Distances: the GEMM float32 distances rounded to float16, exactly as stored in the space's sorted-rows
table. Membership (d < r) and utilities both use these values on both paths, so the fast path and
the fallback implement the same mechanism. Rounding moves a distance by at most 2^-11 of itself.

Fast path (spaces up to ``SORTED_ROWS_MAX_VOCAB`` rows): each row of the sorted-rows table lists
the vocabulary by distance, so C_r(t) is the prefix of t's row below r. The float16 distances of a
row take few distinct values (an 11,000-token MiniLM row has ~400), so ppt keeps the rows in
run-length form (distinct distance + end of its run; artifact ``rantext-runs``, built once from the
sorted rows, ~30 MB for 11k tokens). Candidates of one run share one weight, so sampling picks a run by
cumulative weight count * exp(-eps/2 * d / r) and then the candidate inside the run uniformly, from
the same uniform: exactly the per-candidate inverse CDF with ~10x fewer terms. A vectorized binary
search over the memory-mapped runs gives every position's number of runs below r; positions are
sorted by that length and cut into consecutive blocks of at most ``chunk_entries`` run entries
(little padding), processed single-threaded (see :func:`single_threaded`). A position's draw does
not depend on the block it lands in (float32 exp is element-wise; sums run along each row). The draw
is mapped back to a token through the sorted row's indices. Larger spaces fall back to distance rows for
the batch's unique tokens (one matrix product per fixed-size block), sorted and run-length encoded on
the fly, then the same sampler.

Sampling rule: the same as :func:`ppt.mechanisms.base.sample_from_logits_inverse_cdf` (first candidate
whose running sum exceeds u times the total; the weights are the exponential-mechanism weights
divided by exp(eps/2), the token itself having weight 1), restricted to each position's own list: a
position's result depends only on its token, its radius and its uniform, never on the other positions
of a batch or the padding. Weights are computed in float32 (relative error ~1e-7) and summed in float64.
Randomness per record (``draw``): a Laplace vector per position, of which only the norm r is kept
(|Laplace| = scale * Exp(1), drawn by numpy in a stream seeded from the record's generator), then one
uniform per position. In a batch (``draw_batch``) the records' norms are drawn on two threads when torch
may use more than one (:mod:`ppt.parallel`); each record's stream is drawn whole by one of them.

Calibration caveat: the calibrated median is over vocabulary tokens drawn uniformly. Text is dominated
by frequent tokens, which sit in denser regions of MiniLM space, so the lists on real text are larger
(on cl100k-minilm at eps 6: median ~21% of V on Zipf-distributed text vs the 9% target).
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch

from ppt import parallel
from ppt.mechanisms import calibration
from ppt.mechanisms.base import Policy, TokenMechanism

DEFAULT_CHUNK_ENTRIES = 1 << 18 # run-length entries per sampling block (work arrays stay in cache)
FALLBACK_CHUNK_ENTRIES = 4_000_000  # distance entries per block of unique tokens on the fallback path
RUN_TABLE_VERSION = 1
MIN_SHARED_DRAWS = 1 << 16  # Laplace coordinates in a batch below which one thread draws them all
Z_MODES = ("calibrated", "paper")


@dataclass(frozen=True)
class ZConstants:
    """The paper's Z(eps) = eps if eps < 2 else a * ln(b * eps + c) + d (Eq. 13)."""

    a: float = 0.0165
    b: float = 19.0648
    c: float = -38.1294
    d: float = 9.3111
    threshold: float = 2.0

    def z(self, eps: float) -> float:
        if eps < self.threshold:
            return float(eps)
        arg = self.b * eps + self.c
        if arg <= 0:
            raise ValueError(f"Z constants give log of a non-positive number at eps={eps} (b*eps+c={arg})")
        value = self.a * math.log(arg) + self.d
        if value <= 0:
            raise ValueError(f"Z constants give a non-positive Z={value} at eps={eps}")
        return float(value)


def paper_z(eps: float, constants: ZConstants | None = None) -> float:
    return (constants or ZConstants()).z(eps)


def prefix_lengths(dist: np.ndarray, rows: np.ndarray, r: np.ndarray) -> np.ndarray:
    """For each position i, #{j : dist[rows[i], j] < r[i]} over rows sorted ascending.

    A vectorized binary search: ceil(log2(V + 1)) rounds, each one gather of one entry per position
    (so the cost is O(n log V), whatever the prefix lengths are). float16 entries are compared with the
    float64 radius exactly.
    """
    rows = np.asarray(rows, dtype=np.int64)
    V = dist.shape[1]
    flat = np.ascontiguousarray(dist).reshape(-1)
    base = rows * V
    lo = np.zeros(rows.size, dtype=np.int64)
    hi = np.full(rows.size, V, dtype=np.int64)
    for _ in range(int(V).bit_length()):
        active = lo < hi
        mid = (lo + hi) >> 1
        below = flat.take(base + np.minimum(mid, V - 1)) < r
        lo = np.where(active & below, mid + 1, lo)
        hi = np.where(active & ~below, mid, hi)
    return lo


def sample_prefix_block(d16: torch.Tensor, m: torch.Tensor, a: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Inverse-CDF sample of one column per row with weights exp(-a_i * d_ij) over columns j < m_i.

    The direct (uncompressed) form of the sampler, kept as the reference the run-length form is
    tested against. ``d16`` [k, M] distances (columns >= m_i are ignored whatever they hold), ``m`` [k]
    prefix lengths >= 1, ``a`` [k] = eps / (2 r), ``u`` [k] uniforms in [0, 1). Same rule as
    base.sample_from_logits_inverse_cdf: the first column whose running sum exceeds u * (the row's
    total over its prefix).
    """
    w = d16.float()
    w.mul_(a.to(torch.float32).clamp(max=1e30).neg().unsqueeze(1))
    w.exp_()
    cdf = torch.cumsum(w, dim=1, dtype=torch.float64)
    total = cdf.gather(1, (m - 1).unsqueeze(1))
    target = u.to(torch.float64).clamp(0.0, 1.0 - 1e-16).unsqueeze(1) * total
    col = torch.searchsorted(cdf, target, right=True).squeeze(1)
    return torch.minimum(col, m - 1)


def build_runs(d16: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Run-length form of sorted float16 distance rows [c, V].

    Returns (values [c, K] float16: each row's distinct distances ascending, +inf after its last run;
    ends [c, K] int32: exclusive end of each run in the sorted row, V after the last run), K the most
    runs in any row. On MiniLM token spaces an 11,000-entry row has ~400 distinct float16 distances.
    """
    c, V = d16.shape
    change = torch.ones((c, V), dtype=torch.bool, device=d16.device)
    change[:, 1:] = d16[:, 1:] != d16[:, :-1]
    n_runs = change.sum(1)
    K = int(n_runs.max()) if c else 1
    ri, cj = change.nonzero(as_tuple=True)  # row-major: runs of each row in order
    run_id = torch.cumsum(change.to(torch.int32), dim=1)[ri, cj] - 1
    values = torch.full((c, K), float("inf"), dtype=torch.float16, device=d16.device)
    values[ri, run_id] = d16[ri, cj]
    starts = torch.full((c, K + 1), V, dtype=torch.int32, device=d16.device)
    starts[ri, run_id] = cj.to(torch.int32)
    return values, starts[:, 1:].contiguous()


def sample_run_block(values: torch.Tensor, ends: torch.Tensor, kr: torch.Tensor, a: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """The prefix sampler on run-length rows: the same draw as :func:`sample_prefix_block`, fewer terms.

    ``values``/``ends`` [k, Kp] run-length rows (columns >= kr_i ignored), ``kr`` [k] runs below r,
    ``a`` [k] = eps / (2 r), ``u`` [k]. All candidates of a run share one weight, so the inverse CDF
    over candidates picks a run by cumulative weight (count * exp(-a * value)) and then the candidate
    inside it from where u * total falls within the run: a uniform position, from the same uniform.
    Returns the position in the sorted row.
    """
    counts = ends.clone()
    counts[:, 1:] -= ends[:, :-1]
    kr_np = kr.cpu().numpy().astype(np.int64)
    run, frac = pick_runs(values.cpu(), counts.cpu(), kr_np, _neg_a(a.cpu()), _clamp_u(u.cpu()))
    row = np.arange(kr_np.size)
    end = ends.cpu().numpy()[row, run].astype(np.int64)
    return torch.from_numpy(candidate_in_run(end, counts.cpu().numpy()[row, run].astype(np.int64), frac)).to(values.device)


def _neg_a(a: torch.Tensor) -> np.ndarray:
    """-a in float32, as the weights use it (float32 [k])."""
    return a.to(torch.float32).clamp(max=1e30).neg().numpy()


def _clamp_u(u: torch.Tensor) -> np.ndarray:
    """Uniforms clamped below 1, as the inverse CDF uses them (float64 [k])."""
    return u.to(torch.float64).clamp(0.0, 1.0 - 1e-16).numpy()


def pick_runs(values: torch.Tensor, counts: torch.Tensor, kr: np.ndarray, neg_a: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The run each row's uniform falls in, and where inside that run (a fraction in [0, 1]).

    ``values`` [k, Kp] float16 run distances and ``counts`` [k, Kp] run lengths (columns >= kr ignored),
    ``neg_a`` [k] = -eps / (2 r) in float32, ``u`` [k] clamped uniforms. Weights count * exp(-a * value)
    in float32, summed in float64 along each row: a row's result never depends on the other rows or
    on the padding.
    """
    w = values.float()
    w.mul_(torch.from_numpy(neg_a).unsqueeze(1))
    w.exp_()
    w.mul_(counts)
    cdf_t = torch.cumsum(w, dim=1, dtype=torch.float64)
    cdf = cdf_t.numpy()
    row = np.arange(kr.size)
    last = kr - 1
    target = u * cdf[row, last]
    run = torch.searchsorted(cdf_t, torch.from_numpy(target).unsqueeze(1), right=True).squeeze(1).numpy()
    run = np.minimum(run, last)
    hi = cdf[row, run]
    lo = np.where(run > 0, cdf[row, np.maximum(run - 1, 0)], 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        frac = np.clip((target - lo) / (hi - lo), 0.0, 1.0)
    return run, frac


def candidate_in_run(end: np.ndarray, count: np.ndarray, frac: np.ndarray) -> np.ndarray:
    """Position in the sorted row of the candidate at ``frac`` of a run of ``count`` ending at ``end``."""
    start = end - count
    with np.errstate(invalid="ignore"):
        j = start + np.floor(frac * count.astype(np.float64)).astype(np.int64)
    return np.minimum(j, end - 1)


@contextmanager
def single_threaded():
    """Run small element-wise torch kernels on one thread, restoring the setting afterwards.

    The sampling blocks are cache-sized; splitting them across intra-op threads costs more in
    synchronisation than it saves (on a shared 2-core machine, 100x more for a cumulative sum).
    """
    n = torch.get_num_threads()
    if n == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(n)


def length_chunks(m: np.ndarray, budget: int) -> list[np.ndarray]:
    """Positions sorted by length, cut into consecutive groups with rows * (longest in group) <= budget."""
    order = np.argsort(m, kind="stable")
    ms = np.maximum(m[order], 1)
    out, s = [], 0
    while s < order.size:
        # rows s..j fit while (j - s + 1) * ms[j] <= budget (non-decreasing in j); at least one row
        cost = np.arange(1, order.size - s + 1) * ms[s:]
        e = s + max(1, int(np.searchsorted(cost, budget, side="right")))
        out.append(order[s:e])
        s = e
    return out


def _plain(arr: np.ndarray) -> np.ndarray:
    """A plain ndarray view of a memory map (indexing a np.memmap pays for its subclass machinery)."""
    return arr.view(np.ndarray) if isinstance(arr, np.memmap) else arr


@dataclass
class RunTable:
    """Run-length sorted rows: ``values``/``ends`` [R, K] (see :func:`build_runs`) and ``idx`` [R, V]."""

    values: np.ndarray
    ends: np.ndarray
    idx: np.ndarray
    artifact: Any = None

    @cached_property
    def counts(self) -> np.ndarray:
        """Run lengths [R, K] (int16 when they fit), computed once from ``ends``."""
        ends = _plain(self.ends)
        dtype = np.int16 if ends.size == 0 or int(ends[:, -1].max()) <= np.iinfo(np.int16).max else np.int32
        out = np.empty(ends.shape, dtype=dtype)
        out[:, :1] = ends[:, :1]
        np.subtract(ends[:, 1:], ends[:, :-1], out=out[:, 1:], casting="unsafe")
        return out


def sample_runs(
    table: RunTable, rows: np.ndarray, r: np.ndarray, u: np.ndarray, eps: float, budget: int = DEFAULT_CHUNK_ENTRIES
) -> tuple[np.ndarray, np.ndarray]:
    """RANTEXT's steps 2-3 for positions whose sorted rows are ``table`` rows ``rows``.

    Returns (output vocabulary rows, |C_r| per position).
    """
    rows = np.asarray(rows, dtype=np.int64)
    r = np.maximum(np.asarray(r, dtype=np.float64), np.finfo(np.float64).tiny)  # r > 0: distance-0 tokens stay in
    values, ends, counts = _plain(table.values), _plain(table.ends), table.counts
    kr = np.maximum(prefix_lengths(values, rows, r), 1)  # runs below r (run 0 is distance 0)
    size = np.asarray(ends[rows, kr - 1], dtype=np.int64)
    neg_a = _neg_a(torch.from_numpy(eps / (2.0 * r)))
    u = _clamp_u(torch.from_numpy(np.asarray(u, dtype=np.float64)))
    run = np.empty(rows.size, dtype=np.int64)
    frac = np.empty(rows.size, dtype=np.float64)
    with single_threaded():
        for sel in length_chunks(kr, budget):
            Kp = int(kr[sel].max())
            rsel = rows[sel]
            v = torch.from_numpy(values[rsel, :Kp])
            c = torch.from_numpy(counts[rsel, :Kp])
            run[sel], frac[sel] = pick_runs(v, c, kr[sel], neg_a[sel], u[sel])
    col = candidate_in_run(ends[rows, run].astype(np.int64), counts[rows, run].astype(np.int64), frac)
    out = np.asarray(_plain(table.idx)[rows, col], dtype=np.int64)
    return out, size


def build_run_table_files(dist: np.ndarray, tmp: Path, chunk: int = 256) -> dict:
    """Write the run-length form of a sorted-rows distance table (values.npy float16, ends.npy int32)."""
    V = dist.shape[0]
    parts = []
    for s in range(0, V, chunk):
        v, e = build_runs(torch.from_numpy(np.array(dist[s : s + chunk])))
        parts.append((v.numpy(), e.numpy()))
    K = max(p[0].shape[1] for p in parts)
    values = np.full((V, K), np.inf, dtype=np.float16)
    ends = np.full((V, K), dist.shape[1], dtype=np.int32)
    s = 0
    for v, e in parts:
        values[s : s + v.shape[0], : v.shape[1]] = v
        ends[s : s + e.shape[0], : e.shape[1]] = e
        s += v.shape[0]
    np.save(tmp / "values.npy", values)
    np.save(tmp / "ends.npy", ends)
    return {"max_runs": int(K), "rows": int(V)}


class Rantext(TokenMechanism):
    """RANTEXT: per token, Laplace-sized random adjacency list, then the exponential mechanism in it."""

    name: ClassVar[str] = "rantext"
    notion: ClassVar[str] = "eps-LDP per token (RANTEXT, random adjacency list; C_r treated as fixed)"
    summary: ClassVar[str] = "InferDPT's RANTEXT: Laplace-sized random adjacency list + exponential mechanism"
    default_space: ClassVar[str] = "cl100k-minilm"
    default_policy: ClassVar[Policy] = Policy(oov="drop", numbers="random-digits", punct="keep", stopwords="perturb")
    defaults: ClassVar[dict[str, Any]] = {"z": "calibrated", "target_fraction": None}

    def __init__(
        self,
        eps: float,
        space=None,
        policy: Policy | None = None,
        device: str = "auto",
        quiet: bool = False,
        z: str | float = "calibrated",
        target_fraction: float | None = None,
        z_constants: ZConstants | dict | None = None,
        fast_path: bool | None = None,
        chunk_entries: int = DEFAULT_CHUNK_ENTRIES,
        calibration_tokens: int = 256,
        calibration_draws: int = 4,
        **params: Any,
    ):
        if params:
            raise ValueError(f"rantext: unknown parameter(s) {', '.join(sorted(params))}")
        if isinstance(z, str) and z not in Z_MODES:
            try:
                z = float(z)  # a number given as text (CLI)
            except ValueError:
                pass
        if isinstance(z, str):
            if z not in Z_MODES:
                raise ValueError(f"rantext: z must be one of {', '.join(Z_MODES)} or a positive number (got {z!r})")
            self.z_mode = z
            self._z_fixed = None
        else:
            try:
                zf = float(z)
            except (TypeError, ValueError):
                raise ValueError(f"rantext: z must be one of {', '.join(Z_MODES)} or a positive number (got {z!r})") from None
            if not math.isfinite(zf) or zf <= 0:
                raise ValueError(f"rantext: a numeric z must be positive and finite (got {z})")
            self.z_mode = "fixed"
            self._z_fixed = zf
        if target_fraction is not None:
            tf = float(target_fraction)
            if not (0.0 < tf <= 1.0):
                raise ValueError(f"rantext: target_fraction must be in (0, 1] (got {target_fraction})")
            if self.z_mode != "calibrated":
                raise ValueError("rantext: target_fraction only applies with z='calibrated'")
            target_fraction = tf
        if isinstance(z_constants, dict):
            z_constants = ZConstants(**z_constants)
        self.z_constants = z_constants or ZConstants()
        if int(chunk_entries) < 1:
            raise ValueError("rantext: chunk_entries must be positive")
        self.chunk_entries = int(chunk_entries)
        self.fast_path_opt = fast_path
        self.calibration_tokens = int(calibration_tokens)
        self.calibration_draws = int(calibration_draws)
        self._target_override = target_fraction
        super().__init__(eps, space=space, policy=policy, device=device, quiet=quiet)
        if self.z_mode == "paper":
            self.z_constants.z(self.eps)  # validate before any input is read

    # ---- noise scale --------------------------------------------------------------------------------

    @property
    def target_fraction(self) -> float | None:
        if self.z_mode != "calibrated":
            return None
        if self._target_override is not None:
            return self._target_override
        return calibration.target_fraction(self.eps)

    @cached_property
    def calibration(self) -> calibration.Calibration | None:
        if self.z_mode != "calibrated":
            return None
        return calibration.calibrated_z(self.space, self.target_fraction, self.calibration_tokens, self.calibration_draws)

    @cached_property
    def z(self) -> float:
        if self.z_mode == "fixed":
            return self._z_fixed
        if self.z_mode == "paper":
            return self.z_constants.z(self.eps)
        return self.calibration.z

    @cached_property
    def noise_scale(self) -> torch.Tensor:
        """Per-dimension Laplace scale Delta_d / Z (float64, CPU)."""
        return self.space.sensitivity.double().cpu() / self.z

    # ---- tables -------------------------------------------------------------------------------------

    @property
    def uses_fast_path(self) -> bool:
        from ppt.spaces import space as space_mod

        fits = self.space.size <= space_mod.SORTED_ROWS_MAX_VOCAB
        if self.fast_path_opt is None:
            return fits
        if self.fast_path_opt and not fits:
            raise ValueError(f"rantext: space {self.space.name} is too large for sorted rows; use fast_path=None")
        return bool(self.fast_path_opt)

    @cached_property
    def run_table(self) -> RunTable:
        """The space's sorted rows (indices) with their distances in run-length form (cached artifact)."""
        sr = self.space.sorted_rows(quiet=self.quiet)
        deps = {"space": self.space.name, "space_hash": self.space.hash, "metric": self.space.metric,
                "sorted_rows": sr.artifact.key, "version": RUN_TABLE_VERSION}
        art = self.space.cache.get_or_build("rantext-runs", deps, lambda tmp: build_run_table_files(sr.dist, tmp))
        values = np.load(art.file("values.npy"), mmap_mode="r")
        ends = np.load(art.file("ends.npy"), mmap_mode="r")
        return RunTable(values, ends, sr.idx, art)

    def precompute(self, quiet: bool = False) -> list:
        arts = []
        if self.uses_fast_path:
            arts.append(self.space.sorted_rows(quiet=quiet).artifact)
            arts.append(self.run_table.artifact)
        if self.calibration is not None and self.calibration.artifact is not None:
            arts.append(self.calibration.artifact)
        return arts

    def params(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "space": self.space.stamp(),
            "z": self.z_mode,
            "Z": self.z,
            "target_fraction": self.target_fraction,
            "noise": "Y_d ~ Laplace(0, Delta_d / Z); r = ||Y||_2; C_r(t) = {t': d(t, t') < r}",
            "distances": "float16-rounded (sorted-rows table)",
            "policy": asdict(self.policy),
        }
        if self.z_mode == "paper":
            out["z_constants"] = asdict(self.z_constants)
        if self.calibration is not None:
            out["calibration"] = self.calibration.to_dict()
        return out

    # ---- randomness and perturbation ----------------------------------------------------------------

    def draw(self, n: int, g: torch.Generator) -> dict[str, torch.Tensor]:
        """Per position: the radius r = ||Y||_2 of a fresh Laplace vector, then one uniform."""
        r = calibration.laplace_norms(n, self.noise_scale, g)
        u = torch.rand(n, generator=g, dtype=torch.float64)
        return {"r": r, "u": u}

    @cached_property
    def _scale2(self) -> np.ndarray:
        """Squared per-dimension Laplace scales (what :func:`calibration.laplace_norms` uses)."""
        return self.noise_scale.double().cpu().numpy() ** 2

    def _seeds_and_uniforms(self, counts: list[int], generators: list[torch.Generator]) -> tuple[list[int], np.ndarray]:
        """Each record's draws from its generator, in ``draw``'s order: its Laplace stream seed, then its uniforms."""
        seeds, us = [], []
        for n, g in zip(counts, generators):
            seeds.append(calibration.laplace_seed(g))
            us.append(torch.rand(n, generator=g, dtype=torch.float64))
        return seeds, torch.cat(us).numpy() if us else np.empty(0)

    def _laplace_norms(self, counts: list[int], seeds: list[int]) -> np.ndarray:
        """Every record's Laplace norms from its seed (numpy only; records shared with the helper thread,
        each drawn whole by one thread, so the result is the same as on one thread)."""
        starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        r = np.empty(int(starts[-1]), dtype=np.float64)
        scale2 = self._scale2

        def draw(i: int) -> None:
            r[starts[i] : starts[i + 1]] = calibration.laplace_norms_seeded(counts[i], scale2, seeds[i])

        parallel.for_each(draw, len(counts), share=r.size * scale2.size >= MIN_SHARED_DRAWS)
        return r

    def draw_batch(self, counts: list[int], generators: list[torch.Generator]) -> dict[str, torch.Tensor]:
        """``draw`` for every record. The record's generator gives its stream seed and then its uniforms,
        as in ``draw``; the Laplace norms come from the seeds alone, after all generator draws."""
        seeds, u = self._seeds_and_uniforms(counts, generators)
        if not counts:
            return {}
        return {"r": torch.from_numpy(self._laplace_norms(counts, seeds)), "u": torch.from_numpy(u)}

    def _sample(self, rows: np.ndarray, r: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Steps 2-3 for positions with given radii and uniforms (numpy): (output rows, |C_r|)."""
        if rows.size == 0:
            return np.empty(0, np.int64), np.empty(0, np.int64)
        if self.uses_fast_path:
            return sample_runs(self.run_table, rows, r, u, self.eps, self.chunk_entries)
        return self._sample_fallback(rows, r, u)

    def perturb_rows(self, rows: torch.Tensor, rand: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        out, size = self.sample_given_radius(rows, rand["r"], rand["u"])
        return out, {"cr_size": size}

    def sample_given_radius(self, rows, r, u) -> tuple[torch.Tensor, torch.Tensor]:
        """Steps 2-3 of RANTEXT for given radii and uniforms: (output rows, |C_r|), both int64 [n]."""
        rows_np = torch.as_tensor(rows).cpu().numpy().astype(np.int64, copy=False)
        r_np = torch.as_tensor(r).double().cpu().numpy()
        u_np = torch.as_tensor(u).double().cpu().numpy()
        out, size = self._sample(rows_np, r_np, u_np)
        return torch.from_numpy(out), torch.from_numpy(size)

    def _sample_fallback(self, rows: np.ndarray, r: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Spaces without a sorted-rows table: distance rows for the batch's unique tokens (one matrix
        product per fixed-size block), sorted and run-length encoded like the table, then the same sampler."""
        uniq, inv = np.unique(rows, return_inverse=True)
        V = self.space.size
        per = max(1, FALLBACK_CHUNK_ENTRIES // V)
        out = np.empty(rows.size, dtype=np.int64)
        size = np.empty(rows.size, dtype=np.int64)
        for start in range(0, uniq.size, per):
            ids = torch.from_numpy(uniq[start : start + per])
            d = calibration.distance_rows(self.space, ids)
            vals, order = torch.sort(d, dim=1, stable=True)
            values, ends = build_runs(vals.half())
            table = RunTable(values.cpu().numpy(), ends.cpu().numpy(), order.cpu().numpy())
            pos = np.flatnonzero((inv >= start) & (inv < start + per))
            o, m = sample_runs(table, inv[pos] - start, r[pos], u[pos], self.eps, self.chunk_entries)
            out[pos] = o
            size[pos] = m
        return out, size

    def record_extras(self, diag: dict[str, torch.Tensor], counts: list[int]) -> list[dict[str, Any]]:
        """Each record's adjacency-list sizes (median, min, max), for all records at once: sizes sorted
        per record, the median being the lower middle one (as torch.median)."""
        s = diag.get("cr_size")
        if s is None:
            return [{} for _ in counts]
        sizes = s.numpy()
        rec = np.repeat(np.arange(len(counts)), counts)
        srt = sizes[np.lexsort((sizes, rec))].tolist()
        out, lo = [], 0
        for n in counts:
            if n:
                mid = float(srt[lo + (n - 1) // 2])
                out.append({"adjacency_list_size": {"median": mid, "min": int(srt[lo]), "max": int(srt[lo + n - 1])}})
            else:
                out.append({})
            lo += n
        return out


__all__ = [
    "Rantext", "ZConstants", "paper_z", "prefix_lengths", "sample_prefix_block", "sample_runs", "sample_run_block", "length_chunks",
    "pick_runs", "candidate_in_run",
]
