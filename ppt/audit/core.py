"""`ppt audit`'s engine: certified lower bounds on a mechanism's per-token privacy loss.

For a mechanism (built, with its tables) and the claim its stamped record makes, :func:`audit`

1. picks input tokens the pipeline really perturbs (each one-token text goes through ``sanitize_batch``
   once; a token the policy keeps or drops is not an input of the per-token mechanism);
2. searches neighbouring pairs (x, x') and outputs y for the largest ln P(y|x) / P(y|x'): every ordered
   pair on a small vocabulary, otherwise each sampled token against its nearest neighbours, its
   farthest token and random others (CusText: the members of its group, the only pairs it claims);
   exact probabilities from the mechanism's tables (:mod:`ppt.audit.models`), RANTEXT's from sampled
   radii with KL-Chernoff bounds on the means;
3. runs the attaining pairs end to end: each one-token text sanitized ``e2e_samples`` times with
   per-record generators, outputs counted, and Clopper-Pearson bounds (lower for P(y|x), upper for
   P(y|x')) turned into a certified lower bound. Where the model is exact, an end-to-end bound above the
   exact value means the sampler does not draw from the distribution its tables (and stamp) describe.

Every bound is at level ``alpha`` overall (split evenly, Bonferroni, over the bounds it combines), so the
certified figure is below the true loss of the implemented mechanism with probability >= 1 - alpha.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ppt.audit.bounds import clopper_pearson, log_ratio
from ppt.audit.search import audit_exact, audit_sampled, max_distance, perturbable
from ppt.mechanisms.exact import RantextModel
from ppt.rng import record_generator

TOL_ABS, TOL_REL = 1e-3, 1e-4


@dataclass
class Claim:
    """What the stamped record claims per token: eps under a notion (per unit distance when metric)."""

    eps_per_token: float | None
    notion: str = ""
    metric: bool = False
    source: str = "ppt.sanitize.privacy.proven"

    @classmethod
    def from_accounting(cls, acc: dict | None) -> Claim:
        acc = acc or {}
        eps = acc.get("eps_per_token")
        proven = acc.get("proven", True) is not False
        eps = float(eps) if isinstance(eps, (int, float)) and proven and math.isfinite(eps) else None
        notion = str(acc.get("notion", ""))
        return cls(eps, notion, metric="metric" in notion.lower() or "d_x" in notion.lower())


def _num(x: float) -> float | str:
    return x if math.isfinite(x) else ("inf" if x > 0 else "-inf")


def tol(claim: float) -> float:
    return TOL_ABS + TOL_REL * abs(claim)


# ---- inputs -------------------------------------------------------------------------------------------

# ---- end to end ----------------------------------------------------------------------------------------


def e2e_counts(
    mech, text: str, targets: list[int], n: int, seed: int | None, tag: Any, batch: int = 4096
) -> np.ndarray:
    """How often ``sanitize_batch`` turned the one-token ``text`` into each target (n runs)."""
    counts = np.zeros(len(targets), dtype=np.int64)
    pos = {t: i for i, t in enumerate(targets)}
    for s in range(0, n, batch):
        m = min(batch, n - s)
        gens = [record_generator(seed, ["audit", tag, s + i]) for i in range(m)]
        for out in mech.sanitize_batch([text] * m, gens, reproducible=False):
            if out.pairs is not None and len(out.pairs) == 1:
                j = pos.get(int(out.pairs[0, 1]))
                if j is not None:
                    counts[j] += 1
    return counts


def run_e2e(mech, pairs: list[dict], texts: dict[int, str], n: int, alpha: float, seed: int | None) -> list[dict]:
    """Clopper-Pearson certified log-ratio of each (x, x', y) from ``n`` end-to-end runs of each text."""
    if not pairs or n <= 0:
        return []
    a = alpha / (4 * len(pairs))
    cache: dict[int, dict[int, int]] = {}
    wanted: dict[int, set[int]] = {}
    for p in pairs:
        wanted.setdefault(p["x_row"], set()).add(p["y_row"])
        wanted.setdefault(p["x_prime_row"], set()).add(p["y_row"])
    for row, ys in wanted.items():
        ys_l = sorted(ys)
        cache[row] = dict(zip(ys_l, e2e_counts(mech, texts[row], ys_l, n, seed, row).tolist()))
    out = []
    for p in pairs:
        kx, kx2 = cache[p["x_row"]][p["y_row"]], cache[p["x_prime_row"]][p["y_row"]]
        lo, hi_x = clopper_pearson(kx, n, a)
        lo_x2, hi = clopper_pearson(kx2, n, a)
        cert = log_ratio(float(lo), float(hi))
        out.append(
            {
                **{k: p[k] for k in ("x", "x_prime", "y", "x_row", "x_prime_row", "y_row")},
                "count_x": kx,
                "count_x_prime": kx2,
                "n": n,
                "p_x_lower": float(lo),
                "p_x_prime_upper": float(hi),
                "p_x_upper": float(hi_x),
                "p_x_prime_lower": float(lo_x2),
                "certified": cert,
            }
        )
    return out


# ---- the audit --------------------------------------------------------------------------------------------


def audit(
    mech,
    claim: Claim,
    *,
    pairs: int = 200,
    samples: int = 1_000_000,
    e2e_samples: int = 100_000,
    alpha: float = 1e-6,
    seed: int | None = 0,
    top: int = 3,
    space_name: str | None = None,
    context: str = "",
) -> dict[str, Any]:
    """Audit one built mechanism against its stamped claim; one JSON-ready result. The mechanism's
    ``audit_model()`` gives its output distribution (None: it cannot be audited)."""
    if context and not mech.rows_in_model_space:
        raise ValueError("an audit context applies to mechanisms over a context model (Cape)")
    model = mech.audit_model(context=context) if context else mech.audit_model()
    if model is None:
        raise ValueError(
            f"ppt audit does not know {mech.name}'s output distribution (the mechanism has no audit_model())"
        )
    g = np.random.default_rng(None if seed is None else [seed, 0xA0D17])
    eps = mech.eps
    res: dict[str, Any] = {
        "mechanism": mech.name,
        "eps": eps,
        "space": space_name
        or (
            mech.space.name if hasattr(mech, "space") and mech.space is not None else getattr(mech, "model_name", None)
        ),
        "claim": {
            "eps_per_token": claim.eps_per_token,
            "notion": claim.notion,
            "source": claim.source,
            "unit": "per unit distance" if claim.metric else "per token",
        },
        "alpha": alpha,
        "confidence": 1 - alpha,
        **({"context": context} if context else {}),
        "notes": [],
    }
    if isinstance(model, RantextModel):
        found = audit_sampled(mech, model, pairs, samples, alpha / 2, seed, g, top, res)
    else:
        found = audit_exact(mech, model, claim, pairs, alpha / 2, seed, g, top, res)
    texts, best = found
    e2e = run_e2e(mech, best, texts, e2e_samples, alpha / 2, seed)
    res["end_to_end"] = {
        "samples_per_text": e2e_samples,
        "method": "sanitize_batch counts, Clopper-Pearson",
        "certified": _num(max((p["certified"] for p in e2e), default=-math.inf)),
        "pairs": [{**p, "certified": _num(p["certified"])} for p in e2e],
    }
    # the sampler against the model: each end-to-end interval must contain the model's probability (exact
    # models) or meet its confidence interval (RANTEXT's sampled radii); a gap means the sampler does not
    # draw from the distribution the mechanism's tables and stamp describe
    mismatch = []
    for p, m in zip(e2e, best):
        for side, key in (("x", "p_x"), ("x_prime", "p_x_prime")):
            lo_e, hi_e = (
                p["p_x_lower" if side == "x" else "p_x_prime_lower"],
                p["p_x_upper" if side == "x" else "p_x_prime_upper"],
            )
            lo_m, hi_m = m.get(f"{key}_lower", m[key]), m.get(f"{key}_upper", m[key])
            if lo_e > hi_m * (1 + 1e-6) + 1e-12 or hi_e < lo_m * (1 - 1e-6) - 1e-12:
                mismatch.append(
                    {
                        "x": p["x"],
                        "x_prime": p["x_prime"],
                        "y": p["y"],
                        "input": side,
                        "model": [lo_m, hi_m],
                        "end_to_end": [lo_e, hi_e],
                    }
                )
    res["sampler_mismatch"] = mismatch
    if mismatch:
        res["notes"].append(
            "end-to-end output frequencies fall outside the mechanism's own distribution: "
            "the sampler does not do what its tables and stamp say"
        )
    model_cert = res.pop("_model_certified")
    cert = max([model_cert] + [p["certified"] for p in e2e])
    res["certified"] = _num(cert)
    # the claim, pair by pair for metric DP (eps * d(x, x')), and its worst case over the vocabulary
    if claim.eps_per_token is None:
        status = "no-claim"
    else:
        c = claim.eps_per_token
        if claim.metric:
            dmax, i, j = max_distance(model.space)
            worst = c * dmax + max((p.get("allowance", 0.0) for p in res.get("_scored", best)), default=0.0)
            res["claim"].update(
                max_distance=dmax, max_distance_pair=[model.space.vocab[i], model.space.vocab[j]], worst_case_eps=worst
            )
            bound = lambda p: c * p["distance"] + p.get("allowance", 0.0)  # noqa: E731
            over = [p for p in best if p["loss"] > bound(p) + tol(bound(p))]
            over += [q for q, p in zip(e2e, best) if q["certified"] > bound(p) + tol(bound(p))]
            violated = bool(over) or cert > worst + tol(worst)
            res["certified_per_unit"] = _num(
                max(
                    (
                        (p["loss"] - p.get("allowance", 0.0)) / p["distance"]
                        if p["distance"] > 0
                        else (math.inf if p["loss"] > p.get("allowance", 0.0) else 0.0)
                        for p in res["_scored"]
                    ),
                    default=0.0,
                )
            )
            for q, p in zip(e2e, best):
                if p["distance"] > 0:
                    per_unit = (q["certified"] - p.get("allowance", 0.0)) / p["distance"]
                    res["certified_per_unit"] = _num(max(_f(res["certified_per_unit"]), per_unit))
        else:
            violated = cert > c + tol(c)
        status = "violated" if (violated or mismatch) else "holds"
    res.pop("_scored", None)
    res["status"] = status
    return res


def _f(x) -> float:
    return float(x) if not isinstance(x, str) else (math.inf if x == "inf" else -math.inf)


__all__ = ["Claim", "audit", "clopper_pearson", "max_distance", "perturbable"]
