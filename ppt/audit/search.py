"""The pair search of `ppt audit`: which (x, x', y) come closest to (or go past) the stamped claim.

Exact models (:mod:`ppt.mechanisms.exact`) are scored on every ordered pair of a small vocabulary,
otherwise on each sampled token against its nearest and farthest neighbours and random others (CusText:
its group; no metric space: random partners); RANTEXT's on sampled radii with KL-Chernoff bounds.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ppt.audit.bounds import kl_bounds, log_ratio
from ppt.mechanisms.exact import ExactModel, RantextModel
from ppt.rng import record_generator
from ppt.spaces.distances import distance_rows

EXHAUSTIVE_MAX = 64  # vocabularies up to this size: every ordered pair


def _num(x: float) -> float | str:
    return x if math.isfinite(x) else ("inf" if x > 0 else "-inf")


def perturbable(mech, model, rows: list[int], seed: int | None) -> dict[int, str]:
    """The rows whose one-token text (``model.token_texts``) the pipeline perturbs as exactly that row, with
    the text."""
    found: dict[int, str] = {}
    todo = list(dict.fromkeys(int(r) for r in rows))
    for variant in range(3):
        cand = [(r, model.token_texts(r)) for r in todo if r not in found]
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


def candidate_rows(
    mech, model: ExactModel, n_pairs: int, g: np.random.Generator
) -> tuple[list[int], list[tuple[int, int]]]:
    """Input rows to evaluate and the ordered pairs among them to score."""
    universe = model.universe()
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
    if model.space is None:  # no metric space (Cape's token ids): random partners
        others = [int(r) for r in g.choice(universe, size=min(len(universe), n_pairs), replace=False)]
        rows.update(others)
        pairs = [(a, b) for a in sample for b in others[:16] if a != b]
        pairs += [(b, a) for a, b in pairs]
        return sorted(rows), pairs
    d = distance_rows(model.space, torch.tensor(sample)).cpu().numpy()
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
    lp = np.concatenate([model.logp_claimed(np.asarray(rows[s : s + 256])) for s in range(0, len(rows), 256)])
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


def pair_record(model: ExactModel, p: dict, y_row: int) -> dict:
    """The (x, x', y) of a scored pair, as texts and rows."""
    return {
        "x": model.input_text(p["x_row"]).strip(),
        "x_prime": model.input_text(p["x_prime_row"]).strip(),
        "y": model.output_text(y_row),
        "x_row": p["x_row"],
        "x_prime_row": p["x_prime_row"],
        "y_row": y_row,
    }


def audit_exact(mech, model: ExactModel, claim, n_pairs, alpha, seed, g, top, res) -> tuple[dict[int, str], list[dict]]:
    """Exact max_y ln P(y|x)/P(y|x') over the searched pairs; the pairs nearest the claim, for end to end."""
    rows, pairs = candidate_rows(mech, model, n_pairs, g)
    texts = perturbable(mech, model, rows, seed)
    model.texts = texts
    rows = [r for r in rows if r in texts]
    if not rows:
        from ppt.io import ExitCode, PptError

        raise PptError(
            f"{mech.name}: no searched token is perturbed alone"
            + (
                " after the context (its words must be ones the policy keeps, e.g. 'in the ')"
                if getattr(model, "context", "")
                else ""
            ),
            ExitCode.USAGE,
        )
    pairs = [(a, b) for a, b in pairs if a in texts and b in texts]
    if model.group_of is not None:
        pairs = [(a, b) for a, b in pairs if model.group_of[a] == model.group_of[b]]
        res["notes"].append("pairs within one group only (the notion claims nothing across groups)")
    scope = model.claim_mask()
    if scope is not None:  # e.g. SanText+: the proven metric claim covers sensitive words only
        inside, why = scope
        outside = sum(1 for a, b in pairs if not (inside[a] and inside[b]))
        pairs = [(a, b) for a, b in pairs if inside[a] and inside[b]]
        res["notes"].append(f"pairs inside the claim's scope only ({outside} pairs left out): {why}")
    scored = score_pairs(model, rows, pairs)
    if model.metric and scored:
        dist = model.distance(np.array([s["x_row"] for s in scored]), np.array([s["x_prime_row"] for s in scored]))
        for s, d in zip(scored, dist.tolist()):
            s["distance"] = d
    if scored:  # what the claim adds for each pair (SanText+: ln(1/p) across the sensitivity classes)
        extra = model.allowance(np.array([s["x_row"] for s in scored]), np.array([s["x_prime_row"] for s in scored]))
        for s, a in zip(scored, extra.tolist()):
            s["allowance"] = a
        if any(extra):
            res["notes"].append(
                f"{int(np.count_nonzero(extra))} pairs carry the claim's additive term (SanText+: ln(1/p) = "
                f"{float(max(extra)):.4g} between a non-sensitive and a sensitive input); outputs a word kept verbatim "
                "gives are outside the proven figure (the stamp lists them as unprotected) and are not scored"
            )
    c = claim.eps_per_token
    for s in scored:
        s["y_row"] = int(model.out_ids[s["y_index"]])
        bound = (c * s["distance"] if model.metric else c) if c is not None else 0.0
        s["excess"] = s["loss"] - bound - s["allowance"]
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
            **pair_record(model, s, s["y_row"]),
            "loss": s["loss"],
            "p_x": s["p_x"],
            "p_x_prime": s["p_x_prime"],
        }
        if model.metric:
            rec["distance"] = s["distance"]
        if s["allowance"]:
            rec["allowance"] = s["allowance"]
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


def audit_sampled(
    mech, model: RantextModel, n_pairs, samples, alpha, seed, g, top, res
) -> tuple[dict[int, str], list[dict]]:
    """RANTEXT: P(y|x) exact per sampled radius, KL-Chernoff bounds on the means over radii."""
    V = mech.space.size
    sample = (
        [int(r) for r in g.choice(V, size=min(n_pairs, V), replace=False)] if V > EXHAUSTIVE_MAX else list(range(V))
    )
    # the periphery too (the tokens farthest from the mean row): their lists C_r cover the vocabulary least
    # often, where the conditional figure fails first (second reading, row 16)
    # (many peripheral rows are sub-word pieces that never stand alone in text: the first perturbable ones)
    n_edge = max(1, min(16, n_pairs // 4))
    far_out = [int(r) for r in model.periphery(min(V, 16 * n_edge))]
    edge_texts = perturbable(mech, model, far_out, seed)
    edge = [r for r in far_out if r in edge_texts][:n_edge]
    sample = list(dict.fromkeys(sample + edge))
    texts = perturbable(mech, model, sample, seed)
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
    edge_set = {int(r) for r in edge}
    # the most likely output of a peripheral input is certified too, beside the overall top ones: there the
    # lists of far inputs rarely reach y, which the overall ranking by P(y|x) does not favour
    edge_first = [c for c in cands if c[1] in edge_set][:1]
    triples = []
    for py, x, y in edge_first + [c for c in cands if c not in edge_first]:
        if len(triples) >= max(top, 1) + len(edge_first):
            break
        idx, _ = model.sorted_row(y)
        far = [int(r) for r in idx[::-1][:8]]
        # x': among the tokens farthest from y, one whose own text the pipeline perturbs
        probe = perturbable(mech, model, far, seed)
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
            **pair_record(model, {"x_row": x, "x_prime_row": x2}, y),
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
        f"inputs: {len(edge)} peripheral tokens (the perturbable ones farthest from the mean row) beside the random "
        "sample; the most likely output of one of them is certified beside the overall top ones"
    )
    res["notes"].append(
        "x' is the token farthest from y whose text the pipeline perturbs; the certified figure is "
        "capped by the sample size (about ln(samples / ln(1/alpha)) + ln P(y|x))"
    )
    return texts, best


__all__ = [
    "EXHAUSTIVE_MAX",
    "perturbable",
    "audit_exact",
    "audit_sampled",
    "candidate_rows",
    "max_distance",
    "score_pairs",
]
