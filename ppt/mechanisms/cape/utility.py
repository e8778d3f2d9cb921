"""Cape's tensor kernels: the hybrid utility and the bucketized exponential mechanism, batched.

Everything here works on a ``[n, V]`` utility (or logit/distance) matrix, one row per perturbed
position, V candidates per row; there are no Python loops over rows or candidates (``record_accounts``
keeps one torch sum per record, so each record's figures have the bits they have alone). The mechanism
(:mod:`ppt.mechanisms.cape.mechanism`) feeds it row chunks, across records, so memory stays at ``chunk x V``.

Privacy: the paper's eps + eps' is data dependent and computed from one input only; what is proven for
two inputs is :func:`pairwise_bound`, and for every pair without looking at the data :func:`worst_case_eps`.
The mechanism reports all three. The utility and bucketized-EM formulas and the bounds' reasoning:
docs/mechanisms/cape.md ("Kernels").
"""

from __future__ import annotations

import math
from itertools import pairwise

import numpy as np
import torch

from ppt.samplers.exponential import sample_from_logits_inverse_cdf

UTILITIES = ("product", "additive")


def logit_term(logits: torch.Tensor, bound: float) -> torch.Tensor:
    """L~ = (clip(l, -B, B) + B) / (2B), in [0, 1]."""
    return (logits.clamp(-bound, bound) + bound) / (2.0 * bound)


def distance_term(dist: torch.Tensor) -> torch.Tensor:
    """D = exp(-d / d_max) with d_max the row maximum (a constant row of zeros gives D = 1)."""
    dmax = dist.amax(dim=1, keepdim=True)
    dmax = torch.where(dmax > 0, dmax, torch.ones_like(dmax))
    return torch.exp(-dist / dmax)


def combine(
    lt: torch.Tensor, dt: torch.Tensor, lambda_l: float, lambda_d: float, form: str = "product"
) -> torch.Tensor:
    """Hybrid utility from the logit term and the distance term."""
    if form == "product":
        out = torch.ones_like(lt)
        if lambda_l != 0:
            out = out * lt.pow(lambda_l)
        if lambda_d != 0:
            out = out * dt.pow(lambda_d)
        return out
    if form == "additive":
        return lambda_l * lt + lambda_d * dt
    raise ValueError(f"utility must be one of {', '.join(UTILITIES)} (got {form!r})")


def in_row_blocks(fn, x: torch.Tensor, rows: int | None) -> torch.Tensor:
    """``fn(x)`` for a row-wise ``fn`` (a matrix product), run on blocks of exactly ``rows`` rows (the last
    one zero-padded) when ``rows`` is given, else on ``x`` at once.

    Why: a BLAS product may round a row differently depending on how many rows it multiplies (a
    one-row product can take a matrix-vector path). With every block the same shape, a row's result
    depends on the row alone, so records can share products and still get bit-identical results
    whatever else is in their batch.
    """
    n = x.shape[0]
    if rows is None or n == 0:
        return fn(x)
    pad = -n % rows
    if pad:
        x = torch.cat([x, x.new_zeros((pad, *x.shape[1:]))])
    out = torch.cat([fn(x[s : s + rows]) for s in range(0, n + pad, rows)]) if n + pad > rows else fn(x)
    return out[:n] if pad else out


def fused_utility(
    logits_c: torch.Tensor,
    orig_ids: torch.Tensor,
    embeddings: torch.Tensor,
    cand_emb: torch.Tensor,
    cand_emb_mm: torch.Tensor,
    cand_sqnorm: torch.Tensor,
    *,
    form: str,
    lambda_l: float,
    lambda_d: float,
    bound: float,
    gemm_rows: int | None = None,
) -> torch.Tensor:
    """u [c, |C|] for rows with candidate logits ``logits_c`` (overwritten) and original token ids.

    ``logit_term``, ``distance_term`` and ``combine`` fused in place to keep the passes over the
    c x |C| matrix few (D^lambda_D = exp(-lambda_D d / d_max)). ``embeddings``: the model's input
    embeddings (float32); ``cand_emb`` the candidates' rows, ``cand_emb_mm`` the same in the matrix
    product's dtype (the model's), ``cand_sqnorm`` their squared norms. ``gemm_rows``: run the
    distance product in blocks of exactly that many rows (:func:`in_row_blocks`), so a row's distances
    do not depend on which other tokens share the chunk.
    """
    uniq, inv = torch.unique(orig_ids, return_inverse=True)
    e = embeddings.index_select(0, uniq)
    # ||e||^2 + ||c||^2 - 2 e.c: one matrix product for the distinct original tokens of the chunk
    if cand_emb_mm.dtype == torch.float32:
        sq = in_row_blocks(lambda x: torch.addmm(cand_sqnorm.unsqueeze(0), x, cand_emb.T, alpha=-2.0), e, gemm_rows)
    else:
        sq = in_row_blocks(
            lambda x: (x.to(cand_emb_mm.dtype) @ cand_emb_mm.T).float().mul_(-2.0).add_(cand_sqnorm), e, gemm_rows
        )
    dist = sq.add_(e.pow(2).sum(1, keepdim=True)).clamp_min_(0).sqrt_()
    dmax = dist.amax(dim=1, keepdim=True)
    dmax = torch.where(dmax > 0, dmax, torch.ones_like(dmax))
    product = form == "product"
    dt = dist.mul_((-lambda_d if product else -1.0) / dmax).exp_()  # D^lambda_D (product) or D
    if not torch.equal(uniq, orig_ids):  # back to row order (skipped when rows are distinct and sorted)
        dt = dt.index_select(0, inv)
    b = bound
    # L~ = (clip(l) + B) / 2B; the final clamp absorbs round-off (-B * (0.5 / B) + 0.5 can be -1e-8,
    # whose square root is NaN)
    lt = logits_c.clamp_(-b, b).mul_(0.5 / b).add_(0.5).clamp_(0.0, 1.0)
    if product:
        if lambda_l == 0.5:
            lt.sqrt_()
        elif lambda_l == 0:
            lt.fill_(1.0)
        elif lambda_l != 1:
            lt.pow_(lambda_l)
        return lt.mul_(dt)
    return lt.mul_(lambda_l).add_(dt, alpha=lambda_d)


def sensitivity(form: str, lambda_l: float, lambda_d: float) -> float:
    """Delta_u: the range of the utility (1 for the product form, lambda_L + lambda_D for the sum)."""
    return 1.0 if form == "product" else float(lambda_l + lambda_d)


def bucketize(u: torch.Tensor, n_buckets: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Bucket id per candidate ``[n, V]`` (int64), member count ``[n, N_b]`` (int64) and mean
    utility ``[n, N_b]`` (float64; 0 where the bucket is empty).

    Counts and sums are one ``scatter_add_`` each along the bucket dimension (no one-hot matrix).
    """
    b, block_counts, means = _bucketize(u, n_buckets, v_block=u.shape[1] or 1)
    return b, block_counts.squeeze(1), means


def _bucketize(
    u: torch.Tensor, n_buckets: int, v_block: int, block_sums: bool | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``bucketize`` with the member counts per block of ``v_block`` columns (``[n, blocks, N_b]``;
    summed over blocks they are the counts).

    The block counts are the counts' own ``scatter_add_``, into one slot per (block, bucket) instead
    of per bucket: :func:`nth_member` finds a member's block from them without another pass over the
    row, and a GPU's atomic adds spread over blocks x N_b addresses per row instead of N_b.
    ``block_sums`` (default: on CUDA) sums utilities the same way; float sums then round in another
    order (CUDA's ``scatter_add_`` has no fixed order anyway), so the CPU keeps one sum per bucket.
    Fails closed (FloatingPointError) on a non-finite utility: a row's min and max are finite exactly
    when all of it is (both propagate NaN), which spares a separate pass over ``u``.
    """
    n, v = u.shape
    lo, hi = torch.aminmax(u, dim=1, keepdim=True)
    if not bool((torch.isfinite(lo) & torch.isfinite(hi)).all()):  # a NaN would land in a garbage bucket
        raise FloatingPointError("non-finite utilities")
    span = hi - lo
    scale = torch.where(span > 0, n_buckets / span.clamp_min(torch.finfo(u.dtype).tiny), torch.zeros_like(span))
    # (u - lo) * scale >= 0, so truncation is floor; clamping first puts u_max in the last bucket
    b = torch.addcmul(-lo * scale, u, scale).clamp_(0, n_buckets - 1).to(torch.int64)
    blocks = -(-v // v_block)
    slot = b if blocks == 1 else b + (torch.arange(v, device=u.device) // v_block) * n_buckets
    block_counts = torch.zeros((n, blocks * n_buckets), dtype=torch.int64, device=u.device)
    block_counts.scatter_add_(1, slot, torch.ones(1, 1, dtype=torch.int64, device=u.device).expand(n, v))
    block_counts = block_counts.view(n, blocks, n_buckets)
    counts = block_counts.sum(1)
    if u.is_cuda if block_sums is None else block_sums:
        sums = torch.zeros((n, blocks * n_buckets), dtype=u.dtype, device=u.device).scatter_add_(1, slot, u)
        sums = sums.view(n, blocks, n_buckets).sum(1)
    else:
        sums = torch.zeros((n, n_buckets), dtype=u.dtype, device=u.device).scatter_add_(1, b, u)
    means = sums.double() / counts.clamp_min(1)
    # a mean lies within the row's [u_min, u_max]; keep float rounding of the sum from stepping outside
    means = torch.where(
        counts > 0, torch.minimum(torch.maximum(means, lo.double()), hi.double()), torch.zeros_like(means)
    )
    return b, block_counts, means


def bucket_logits(counts: torch.Tensor, means: torch.Tensor, eps: float, delta_u: float) -> torch.Tensor:
    """eps * u_bar_k / (2 Delta_u) for non-empty buckets, -inf for empty ones (float64)."""
    z = means * (eps / (2.0 * delta_u))
    return torch.where(counts > 0, z, torch.full_like(z, float("-inf")))


def eps_prime(counts: torch.Tensor) -> torch.Tensor:
    """ln(max|b| / min|b|) over the non-empty buckets of each row (float64)."""
    c = counts.double()
    mx = c.amax(dim=1)
    mn = torch.where(counts > 0, c, torch.full_like(c, float("inf"))).amin(dim=1)
    return torch.log(mx / mn)


MEMBER_BLOCK = 1024  # columns per block in nth_member's two-level search on CUDA


def nth_member(
    b: torch.Tensor, k: torch.Tensor, j: torch.Tensor, block_counts: torch.Tensor, block: int
) -> torch.Tensor:
    """The column of the ``j[i]``-th (0-based, column order) entry of row i of ``b`` equal to ``k[i]``
    (``j[i]`` below that row's count of them), from ``block_counts`` [n, blocks, N_b] (entries equal
    to each value per block of ``block`` columns, see ``_bucketize``).

    With one block (``block`` >= V, the CPU's choice) a running count over the whole row. With several
    (CUDA), two levels: the block holding the member by ``searchsorted`` on the running sum of bucket
    k's block counts, then a running count inside that one block, so the scan covers ``block`` columns
    per row instead of V and the counts' atomic adds spread over blocks x N_b addresses. Integer
    arithmetic throughout: the same column either way.
    """
    n, v = b.shape
    target = (j + 1).to(torch.int32).unsqueeze(1)
    if block >= v:
        return torch.searchsorted((b == k.unsqueeze(1)).cumsum(1, dtype=torch.int32), target).squeeze(1)
    per_block = block_counts.gather(2, k.view(n, 1, 1).expand(n, block_counts.shape[1], 1)).squeeze(2)
    running = per_block.cumsum(1, dtype=torch.int32)
    blk = torch.searchsorted(running, target).squeeze(1).clamp_(max=running.shape[1] - 1)
    before = torch.where(
        blk > 0,
        running.gather(1, (blk - 1).clamp_min(0).unsqueeze(1)).squeeze(1),
        torch.zeros_like(blk, dtype=torch.int32),
    )
    # the block's columns; in a short last block the ones past v repeat column v - 1, which lies after
    # the member (j is below the row's count), so they never change the answer
    cols = (blk.unsqueeze(1) * block + torch.arange(block, device=b.device)).clamp_(max=v - 1)
    inside = (b.gather(1, cols) == k.unsqueeze(1)).cumsum(1, dtype=torch.int32)
    within = torch.searchsorted(inside, (target.squeeze(1) - before).unsqueeze(1)).squeeze(1)
    return blk * block + within


def sample_bucketized(
    u: torch.Tensor,
    eps: float,
    delta_u: float,
    n_buckets: int,
    r_bucket: torch.Tensor,
    r_member: torch.Tensor,
    member_block: int | None = None,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """One candidate column per row of ``u`` [n, V] with two uniforms per row.

    ``r_bucket`` picks the bucket by inverse CDF over the bucket probabilities, ``r_member`` the
    ``floor(r_member * |b_k|)``-th member (in column order) of the chosen bucket (:func:`nth_member`;
    ``member_block`` columns per block, default ``MEMBER_BLOCK`` on CUDA and the whole row on a CPU,
    where one scan is cheaper than the block counts; the result is the same).
    Returns the columns and diagnostics (``bucket``, ``bucket_size``, ``n_nonempty``, ``eps_prime``).
    """
    if member_block is None:
        member_block = MEMBER_BLOCK if u.is_cuda else max(1, u.shape[1])
    b, block_counts, means = _bucketize(u, n_buckets, member_block)
    counts = block_counts.sum(1)
    k = sample_from_logits_inverse_cdf(bucket_logits(counts, means, eps, delta_u), r_bucket.to(u.device))
    size = counts.gather(1, k.unsqueeze(1)).squeeze(1)
    j = (r_member.to(u.device).double().clamp(0.0, 1.0) * size.double()).floor().to(torch.int64)
    j = torch.minimum(j, size - 1)
    cols = nth_member(b, k, j, block_counts, member_block)
    diag = {
        "bucket": k,
        "bucket_size": size,
        "n_nonempty": (counts > 0).sum(1),
        "eps_prime": eps_prime(counts),
    }
    return cols, diag


def closed_form(u: torch.Tensor, eps: float, delta_u: float, n_buckets: int) -> torch.Tensor:
    """P(r) for every candidate of every row, from the definition (float64) — for tests and audits."""
    b, counts, means = bucketize(u, n_buckets)
    pk = torch.softmax(bucket_logits(counts, means, eps, delta_u), dim=1)
    per_member = pk / counts.clamp_min(1).double()
    return per_member.gather(1, b)


def pairwise_bound(counts_x: torch.Tensor, counts_y: torch.Tensor, eps: float) -> torch.Tensor:
    """The provable bound on |ln P(r|x) - ln P(r|y)| for two inputs: eps + eps'(x) + eps'(y)."""
    return eps + eps_prime(counts_x) + eps_prime(counts_y)


def worst_case_eps(eps: float, n_candidates: int, n_buckets: int) -> float:
    """A data-independent bound on ln P(r|x) / P(r|x') over all utility vectors in [0, Delta_u].

    sup_x P(r|x) <= c / (c + 1) with c = e^{eps/2} (r alone in a top bucket, one other bucket), and
    inf_x P(r|x) >= 1 / max_m (|V| - m + 1)(1 + (m - 1) c), m <= min(N_b, |V|) non-empty buckets
    (r in the one big bottom bucket, m - 1 singleton top buckets). With one candidate it is 0.
    """
    if n_candidates <= 1:
        return 0.0
    c = math.exp(eps / 2.0)
    m = np.arange(1, min(n_buckets, n_candidates) + 1, dtype=np.float64)
    worst = np.max(np.log(n_candidates - m + 1) + np.log1p((m - 1) * c))
    return float(math.log(c / (c + 1.0)) + worst)


def calibrate_bound(abs_logits: torch.Tensor, quantile: float) -> float:
    """The ``quantile`` of |logit| (exact order statistic, linear interpolation as numpy's default)."""
    a = abs_logits.detach().reshape(-1).double().cpu().numpy()
    return float(np.quantile(a, quantile))


COMPOSITION = "basic: sum over perturbed tokens of (eps + eps'_i); eps'_i data dependent (paper's Theorem 4.1), the proven worst case is in the privacy block"


def record_accounts(eps_prime: torch.Tensor | None, counts: list[int], eps: float) -> list[dict]:
    """Per record (``counts[b]`` of the batch's positions, records' positions in order): the accounting's
    extra fields (eps' mean and max, eps + eps' mean and max; the data-independent worst case is an event of its own). The privacy events turn them into figures (``Cape.privacy_events``).

    Maxima are one segment reduction over the batch; each record's sum stays torch's own sum of its
    slice (a segmented or padded sum adds in another order and moves the last bit), the one call per
    record left here, and the mean is that sum / n (as torch's mean computes it).
    """
    n_arr = np.asarray(counts, dtype=np.int64)
    total = int(n_arr.sum())
    ep = eps_prime.double().cpu() if total else torch.zeros(0, dtype=torch.float64)
    offsets = np.concatenate([[0], np.cumsum(n_arr)]).tolist()
    sums = [float(ep[a:b].sum()) if b > a else 0.0 for a, b in pairwise(offsets)]
    maxima = np.zeros(len(counts))
    has = n_arr > 0
    if total:
        maxima[has] = torch.segment_reduce(ep, "max", lengths=torch.from_numpy(n_arr[has])).numpy()
    extras = []
    for n, total_b, mx in zip(counts, sums, maxima.tolist()):
        if n:
            mean = total_b / n
            stats = {
                "eps_prime_mean": mean,
                "eps_prime_max": mx,
                "eps_total_mean": eps + mean,
                "eps_total_max": eps + mx,
            }
        else:
            stats = {"eps_prime_mean": 0.0, "eps_prime_max": 0.0, "eps_total_mean": 0.0, "eps_total_max": 0.0}
        extras.append(
            {
                **stats,
                "composition": COMPOSITION,
            }
        )
    return extras


__all__ = [
    "UTILITIES",
    "logit_term",
    "distance_term",
    "combine",
    "fused_utility",
    "sensitivity",
    "bucketize",
    "bucket_logits",
    "eps_prime",
    "in_row_blocks",
    "nth_member",
    "sample_bucketized",
    "closed_form",
    "pairwise_bound",
    "worst_case_eps",
    "calibrate_bound",
    "COMPOSITION",
    "record_accounts",
]
