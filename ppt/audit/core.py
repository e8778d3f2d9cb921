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
import torch

from ppt.audit.bounds import clopper_pearson, kl_bounds, log_ratio
from ppt.audit.models import CapeModel, ExactModel, RantextModel, exact_model
from ppt.mechanisms.cape.mechanism import Cape
from ppt.mechanisms.rantext.mechanism import Rantext
from ppt.rng import record_generator
from ppt.spaces.distances import distance_rows

EXHAUSTIVE_MAX = 64  # vocabularies up to this size: every ordered pair
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


def token_text(mech, row: int) -> list[str]:
    """Candidate one-token texts for an input row (space row, or Cape's token id)."""
    if isinstance(mech, Cape):
        col = int(torch.nonzero(mech.candidates.cpu() == row)[0, 0])
        t = mech.cand_text[col]
        return [t, " " + t]
    t = mech.space.vocab[row]
    return [t, " " + t, t.lower()]


def perturbable(mech, rows: list[int], seed: int | None) -> dict[int, str]:
    """The rows whose one-token text the pipeline perturbs as exactly that row, with the text."""
    found: dict[int, str] = {}
    todo = list(dict.fromkeys(int(r) for r in rows))
    for variant in range(3):
        cand = [(r, token_text(mech, r)) for r in todo if r not in found]
        cand = [(r, ts[variant]) for r, ts in cand if variant < len(ts)]
        if not cand:
            break
        for s in range(0, len(cand), 2048):
            part = cand[s : s + 2048]
            gens = [record_generator(seed, ["audit-probe", r]) for r, _ in part]
            res = mech.sanitize_batch([t for _, t in part], gens, reproducible=False)
            for (r, t), out in zip(part, res):
                p = out.pairs
                if p is not None and len(p) == 1 and int(p[0, 0]) == r and out.accounting.n_perturbed == 1:
                    found[r] = t
    return found


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


# ---- exact search ---------------------------------------------------------------------------------------


def candidate_rows(
    mech, model: ExactModel, n_pairs: int, g: np.random.Generator
) -> tuple[list[int], list[tuple[int, int]]]:
    """Input rows to evaluate and the ordered pairs among them to score."""
    universe = model.out_ids if isinstance(model, CapeModel) else np.arange(mech.space.size)
    if len(universe) <= EXHAUSTIVE_MAX:
        rows = [int(r) for r in universe]
        return rows, [(a, b) for a in rows for b in rows if a != b]
    sample = [int(r) for r in g.choice(universe, size=min(n_pairs, len(universe)), replace=False)]
    pairs: list[tuple[int, int]] = []
    rows = set(sample)
    if model.group_of is not None:  # CusText: every other member of the group
        for x in sample:
            mem = np.flatnonzero(model.group_of == model.group_of[x])
            rows.update(int(m) for m in mem)
            pairs += [(x, int(m)) for m in mem if m != x] + [(int(m), x) for m in mem if m != x]
        return sorted(rows), pairs
    if isinstance(mech, Cape):
        others = [int(r) for r in g.choice(universe, size=min(len(universe), n_pairs), replace=False)]
        rows.update(others)
        pairs = [(a, b) for a in sample for b in others[:16] if a != b]
        pairs += [(b, a) for a, b in pairs]
        return sorted(rows), pairs
    d = distance_rows(mech.space, torch.tensor(sample)).cpu().numpy()
    for i, x in enumerate(sample):
        order = np.argsort(d[i], kind="stable")
        near = [int(r) for r in order[1:5]]
        far = [int(r) for r in order[-2:]]
        rand = [int(r) for r in g.choice(sample, size=min(6, len(sample)), replace=False) if r != x]
        for b in near + far + rand:
            rows.add(b)
            pairs += [(x, b), (b, x)]
    return sorted(rows), list(dict.fromkeys(pairs))


def score_pairs(model: ExactModel, rows: list[int], pairs: list[tuple[int, int]]) -> list[dict]:
    """Exact max_y ln P(y|x) / P(y|x') for each ordered pair, with the attaining y."""
    index = {r: i for i, r in enumerate(rows)}
    lp = np.concatenate([model.logp(np.asarray(rows[s : s + 256])) for s in range(0, len(rows), 256)])
    out = []
    by_a: dict[int, list[int]] = {}
    for a, b in pairs:
        by_a.setdefault(a, []).append(b)
    for a, bs in by_a.items():
        la = lp[index[a]]
        lb = lp[[index[b] for b in bs]]
        with np.errstate(invalid="ignore"):
            diff = np.where(np.isfinite(la)[None, :], la[None, :] - lb, -np.inf)
        ys = diff.argmax(1)
        for b, y, v in zip(bs, ys.tolist(), diff[np.arange(len(bs)), ys].tolist()):
            out.append(
                {
                    "x_row": a,
                    "x_prime_row": b,
                    "y_index": y,
                    "loss": v,
                    "p_x": float(np.exp(la[y])),
                    "p_x_prime": float(np.exp(lp[index[b], y])),
                }
            )
    return out


def max_distance(space) -> tuple[float, int, int]:
    """The largest distance between two words of the space, and the pair (full pass, GEMM blocks)."""
    best, pair = -1.0, (0, 0)
    ids = torch.arange(space.size)
    for s in range(0, space.size, 1024):
        d = distance_rows(space, ids[s : s + 1024])
        v, j = d.max(1)
        k = int(v.argmax())
        if float(v[k]) > best:
            best, pair = float(v[k]), (s + k, int(j[k]))
    return best, pair[0], pair[1]


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
) -> dict[str, Any]:
    """Audit one built mechanism against its stamped claim; one JSON-ready result."""
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
        "notes": [],
    }
    if isinstance(mech, Rantext):
        found = _audit_rantext(mech, pairs, samples, alpha / 2, seed, g, top, res)
    else:
        found = _audit_exact(mech, claim, pairs, alpha / 2, seed, g, top, res)
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
            dmax, i, j = max_distance(mech.space)
            worst = c * dmax
            res["claim"].update(
                max_distance=dmax, max_distance_pair=[mech.space.vocab[i], mech.space.vocab[j]], worst_case_eps=worst
            )
            over = [p for p in best if p["loss"] > c * p["distance"] + tol(c * p["distance"])]
            over += [q for q, p in zip(e2e, best) if q["certified"] > c * p["distance"] + tol(c * p["distance"])]
            violated = bool(over) or cert > worst + tol(worst)
            res["certified_per_unit"] = _num(
                max(
                    (
                        p["loss"] / p["distance"] if p["distance"] > 0 else (math.inf if p["loss"] > 0 else 0.0)
                        for p in res["_scored"]
                    ),
                    default=0.0,
                )
            )
            for q, p in zip(e2e, best):
                if p["distance"] > 0:
                    res["certified_per_unit"] = _num(max(_f(res["certified_per_unit"]), q["certified"] / p["distance"]))
        else:
            violated = cert > c + tol(c)
        status = "violated" if (violated or mismatch) else "holds"
    res.pop("_scored", None)
    res["status"] = status
    return res


def _f(x) -> float:
    return float(x) if not isinstance(x, str) else (math.inf if x == "inf" else -math.inf)


def _pair_record(mech, p: dict, texts: dict[int, str], y_row: int) -> dict:
    vocab = (lambda r: texts.get(r) or str(r)) if isinstance(mech, Cape) else (lambda r: mech.space.vocab[r])
    if isinstance(mech, Cape):
        col = int(torch.nonzero(mech.candidates.cpu() == y_row)[0, 0])
        y_text = mech.cand_text[col]
    else:
        y_text = mech.space.vocab[y_row]
    return {
        "x": vocab(p["x_row"]).strip(),
        "x_prime": vocab(p["x_prime_row"]).strip(),
        "y": y_text,
        "x_row": p["x_row"],
        "x_prime_row": p["x_prime_row"],
        "y_row": y_row,
    }


def _audit_exact(mech, claim: Claim, n_pairs, alpha, seed, g, top, res) -> tuple[dict[int, str], list[dict]]:
    model = exact_model(mech)
    if model is None:
        raise ValueError(f"ppt audit does not know how to compute {mech.name}'s output distribution")
    rows, pairs = candidate_rows(mech, model, n_pairs, g)
    texts = perturbable(mech, rows, seed)
    if isinstance(model, CapeModel):
        model.texts = texts
    rows = [r for r in rows if r in texts]
    pairs = [(a, b) for a, b in pairs if a in texts and b in texts]
    if model.group_of is not None:
        pairs = [(a, b) for a, b in pairs if model.group_of[a] == model.group_of[b]]
        res["notes"].append("pairs within one group only (the notion claims nothing across groups)")
    if getattr(mech, "keeps_words", False):  # SanText+: the proven metric claim covers sensitive words only
        sens = mech._is_sensitive.cpu().numpy()
        outside = sum(1 for a, b in pairs if not (sens[a] and sens[b]))
        pairs = [(a, b) for a, b in pairs if sens[a] and sens[b]]
        res["notes"].append(
            f"pairs of sensitive words only ({outside} pairs with a non-sensitive word left out): a non-sensitive "
            "word is kept verbatim with probability 1-p, infinite loss, which the stamp lists as unprotected "
            "and outside its proven figure"
        )
    scored = score_pairs(model, rows, pairs)
    if model.metric and scored:
        dist = model.distance(np.array([s["x_row"] for s in scored]), np.array([s["x_prime_row"] for s in scored]))
        for s, d in zip(scored, dist.tolist()):
            s["distance"] = d
    c = claim.eps_per_token
    for s in scored:
        s["y_row"] = int(model.out_ids[s["y_index"]])
        bound = (c * s["distance"] if model.metric else c) if c is not None else 0.0
        s["excess"] = s["loss"] - bound
    scored.sort(key=lambda s: (-s["excess"], -s["loss"]))
    # the finite pairs closest to (or furthest past) the claim, the largest finite loss, and one output
    # the table gives probability 0 under x' (infinite loss) -- the one most likely under x
    finite = [s for s in scored if math.isfinite(s["loss"])]
    chosen = finite[:top]
    if finite:
        worst = max(finite, key=lambda s: s["loss"])
        if worst not in chosen:
            chosen.append(worst)
    infinite = [s for s in scored if s["loss"] == math.inf]
    if infinite:
        chosen.append(max(infinite, key=lambda s: s["p_x"]))
        res["infinite_pairs"] = len(infinite)
    best = []
    for s in chosen:
        rec = {
            **_pair_record(mech, s, texts, s["y_row"]),
            "loss": s["loss"],
            "p_x": s["p_x"],
            "p_x_prime": s["p_x_prime"],
        }
        if model.metric:
            rec["distance"] = s["distance"]
        best.append(rec)
    res["method"] = f"exact ({model.kind}: {type(model).__name__.removesuffix('Model')})"
    res["inputs_searched"] = len(rows)
    res["pairs_searched"] = len(scored)
    res["pairs"] = [{**b, "loss": _num(b["loss"])} for b in best]
    res["_model_certified"] = max((s["loss"] for s in scored), default=-math.inf)
    res["_scored"] = scored
    if infinite:
        res["notes"].append(
            f"{len(infinite)} of the pairs searched have an output with probability > 0 under x and exactly 0 "
            "under x' in the mechanism's own distribution (infinite loss: SanText+ keeps non-sensitive "
            "words; SanText's float64 sampler reaches probabilities down to ~1e-32 and 0 below)"
        )
    return texts, best


def _audit_rantext(mech: Rantext, n_pairs, samples, alpha, seed, g, top, res) -> tuple[dict[int, str], list[dict]]:
    model = RantextModel(mech)
    V = mech.space.size
    sample = (
        [int(r) for r in g.choice(V, size=min(n_pairs, V), replace=False)] if V > EXHAUSTIVE_MAX else list(range(V))
    )
    texts = perturbable(mech, sample, seed)
    sample = [r for r in sample if r in texts]
    tg = torch.Generator().manual_seed(int(g.integers(2**62)))
    r_search = model.radii(min(samples, 8192), tg)
    cands = []
    for x in sample:
        idx, _ = model.sorted_row(x)
        ys = idx[:3]
        p = model.cond_probs(x, ys, r_search).mean(0)
        for y, py in zip(ys.tolist(), p.tolist()):
            cands.append((py, x, y))
    cands.sort(reverse=True)
    triples = []
    for py, x, y in cands:
        if len(triples) >= max(top, 1):
            break
        idx, _ = model.sorted_row(y)
        far = [int(r) for r in idx[::-1][:8]]
        # x': among the tokens farthest from y, one whose own text the pipeline perturbs
        probe = perturbable(mech, far, seed)
        if not probe:
            continue
        x2 = next(r for r in far if r in probe)
        texts[x2] = probe[x2]
        triples.append((x, x2, y))
    r_cert = model.radii(samples, tg)
    a = alpha / (4 * max(len(triples), 1))
    best = []
    for x, x2, y in triples:
        px = float(model.cond_probs(x, np.array([y]), r_cert).mean())
        px2 = float(model.cond_probs(x2, np.array([y]), r_cert).mean())
        lo, hi_x = kl_bounds(px, samples, a)
        lo_x2, hi = kl_bounds(px2, samples, a)
        loss = log_ratio(lo, hi)
        rec = {
            **_pair_record(mech, {"x_row": x, "x_prime_row": x2}, texts, y),
            "loss": loss,
            "p_x": px,
            "p_x_prime": px2,
            "p_x_lower": lo,
            "p_x_upper": hi_x,
            "p_x_prime_lower": lo_x2,
            "p_x_prime_upper": hi,
            "distance_x_y": float(model.distances(x)[y]),
            "distance_x_prime_y": float(model.distances(x2)[y]),
        }
        best.append(rec)
    best.sort(key=lambda b: -b["loss"])
    res["method"] = (
        f"sampled radius: C_r and the exponential mechanism exact per radius, {samples} radii drawn as the "
        "mechanism draws them, KL-Chernoff bounds on the means"
    )
    res["inputs_searched"] = len(sample)
    res["pairs"] = [{**b, "loss": _num(b["loss"])} for b in best]
    res["_model_certified"] = max((b["loss"] for b in best), default=-math.inf)
    res["notes"].append(
        "x' is the token farthest from y whose text the pipeline perturbs; the certified figure is "
        "capped by the sample size (about ln(samples / ln(1/alpha)) + ln P(y|x))"
    )
    return texts, best


__all__ = ["Claim", "audit", "clopper_pearson", "max_distance", "perturbable"]
