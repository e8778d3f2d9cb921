"""The per-record Cape design before issue 13, kept as bench/sanitize_cape.py's reference (``--reference``).

What it did after the context model's forward pass: utility chunks never straddled records with
batching "record" (one chunk, head and distance product per record), a separate ``isfinite`` pass over
every utility matrix, the member found by a running count over the whole row, each record's
accounting from a dozen small tensor calls, and one tokenizer call per text. Installed on a live
mechanism with :func:`install`, removed with :func:`uninstall`; its seeded outputs equal the current
code's (the bench checks). Nothing here is used by ppt itself; tests/mechanisms/test_cape_batched.py checks
the batched accounting against :func:`record_accounts`.
"""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import torch

from ppt.mechanisms.cape import utility as cu
from ppt.samplers.exponential import sample_from_logits_inverse_cdf
from ppt.spaces.tokens import TokenBatch


def sample_bucketized(u, eps, delta_u, n_buckets, r_bucket, r_member):
    if not torch.isfinite(u).all():
        raise FloatingPointError("non-finite utilities")
    b, counts, means = cu.bucketize(u, n_buckets)
    k = sample_from_logits_inverse_cdf(cu.bucket_logits(counts, means, eps, delta_u), r_bucket.to(u.device))
    size = counts.gather(1, k.unsqueeze(1)).squeeze(1)
    j = (r_member.to(u.device).double().clamp(0.0, 1.0) * size.double()).floor().to(torch.int64)
    j = torch.minimum(j, size - 1)
    running = (b == k.unsqueeze(1)).cumsum(dim=1, dtype=torch.int32)
    cols = torch.searchsorted(running, (j + 1).to(torch.int32).unsqueeze(1)).squeeze(1)
    return cols, {
        "bucket": k,
        "bucket_size": size,
        "n_nonempty": (counts > 0).sum(1),
        "eps_prime": cu.eps_prime(counts),
    }


def perturb(mech, ids_list, positions, rand, reproducible=True):
    mix = mech.mix_records(reproducible)
    feats = mech.lm.features(ids_list, positions, mix_records=mix)
    orig = torch.as_tensor(
        np.concatenate([np.asarray(i, dtype=np.int64)[p] for i, p in zip(ids_list, positions)]), device=mech.device
    )
    rand = rand.to(mech.device)
    chunk = max(1, mech.chunk_elements // int(mech.candidates.numel()))
    cols, diags = [], []
    bounds = np.cumsum([0] + [len(p) for p in positions])
    if mix:
        bounds = bounds[[0, -1]]
    spans = [
        (s, min(s + chunk, int(end))) for start, end in pairwise(bounds) for s in range(int(start), int(end), chunk)
    ]
    with torch.inference_mode():
        for s, e in spans:
            u = mech.utilities(mech.lm.candidate_logits(feats[s:e]), orig[s:e])
            c, d = sample_bucketized(u, mech.eps, mech.delta_u, mech.buckets, rand[s:e, 0], rand[s:e, 1])
            d["changed"] = mech.candidates[c] != orig[s:e]
            cols.append(c)
            diags.append(d)
    diag = {k: torch.cat([d[k] for d in diags]).cpu() for k in diags[0]}
    return torch.cat(cols).cpu(), diag


def record_accounts(eps_prime, counts, eps):
    extras, offset = [], 0
    for n in counts:
        extra = {}
        if n:
            ep = eps_prime[offset : offset + n].double()
            extra.update(
                eps_prime_mean=float(ep.mean()),
                eps_prime_max=float(ep.max()),
                eps_total_mean=eps + float(ep.mean()),
                eps_total_max=eps + float(ep.max()),
            )
        else:
            extra.update(eps_prime_mean=0.0, eps_prime_max=0.0, eps_total_mean=0.0, eps_total_max=0.0)
        extra["composition"] = cu.COMPOSITION
        extras.append(extra)
        offset += n
    return extras


def install(mech) -> None:
    """Swap the reference hooks in on ``mech`` (instance attributes shadow the class's methods)."""
    mech.perturb = lambda ids, pos, rand, reproducible=True: perturb(mech, ids, pos, rand, reproducible)
    mech.tokenize_batch = lambda texts: TokenBatch.concat([mech.tokenizer.tokenize(t) for t in texts])
    mech.record_extras = lambda diag, counts: record_accounts(diag.get("eps_prime"), counts, mech.eps)


def uninstall(mech) -> None:
    for name in ("perturb", "tokenize_batch", "record_extras"):
        mech.__dict__.pop(name, None)


__all__ = ["install", "perturb", "record_accounts", "sample_bucketized", "uninstall"]
