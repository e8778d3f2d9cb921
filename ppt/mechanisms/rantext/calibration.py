"""RANTEXT noise calibration: Z fitted per space so the adjacency lists have a target size.

RANTEXT's Laplace scale is Delta_d / Z(eps), with Z fitted by the paper to ada-002's geometry; on other
spaces the paper's Z makes the random adjacency list C_r either the whole vocabulary or a few dozen
tokens. So ppt fits Z per space such that the **median** of |C_r| / |V|, over tokens and noise draws,
follows a target curve (:data:`TARGET_POINTS`) that never increases with eps, so the list never shrinks
as eps falls (issue 16). ``target_fraction=`` overrides the curve with a fixed fraction; ``z='paper'``
and a numeric ``z`` skip calibration (see :mod:`ppt.mechanisms.rantext.mechanism`).

The fit is exact (one pass, what bisection would converge to). Calibration randomness is not privacy
noise: the fitted Z is a deterministic function of (space, target), cached with the space (artifact
kind ``rantext-calibration``). The target curve, why monotone matters, the fit:
docs/mechanisms/rantext.md ("Calibration").
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ppt.lazy import lazy_module

torch = lazy_module("torch")

from ppt.samplers import portable
from ppt.samplers.laplace import laplace_norms
from ppt.spaces.distances import distance_rows

# (eps, median |C_r| / |V|) the paper sized its random adjacency lists to (a third-party reading of its
# appendix). They grow with eps, so they are not the default target as such: see monotone_envelope.
PAPER_POINTS: tuple[tuple[float, float], ...] = ((2.0, 0.015), (6.0, 0.09), (10.0, 0.10), (14.0, 0.105))
WHOLE_VOCAB_EPS = 1.0  # at and below this eps the target list is the whole vocabulary


def monotone_envelope(points: tuple[tuple[float, float], ...]) -> tuple[tuple[float, float], ...]:
    """The smallest non-increasing curve never below ``points``: each fraction raised to the largest at
    its eps or any larger one (a suffix maximum)."""
    out, best = [], 0.0
    for eps, f in reversed(points):
        best = max(best, f)
        out.append((eps, best))
    return tuple(reversed(out))


# The default target: whole vocabulary up to eps 1, then the paper's sizes' monotone envelope (10.5%).
TARGET_POINTS: tuple[tuple[float, float], ...] = ((WHOLE_VOCAB_EPS, 1.0),) + monotone_envelope(PAPER_POINTS)
CALIBRATION_VERSION = 2  # 2: exact distances (ppt.spaces.distances) and exactly summed Laplace norms (issue 36)
CALIBRATION_SEED = 0x5EED_CA1B


def target_fraction(eps: float, points: tuple[tuple[float, float], ...] = TARGET_POINTS) -> float:
    """Target median |C_r| / |V| at ``eps``: log-linear between the points, clamped outside them."""
    xs = [p[0] for p in points]
    if eps <= xs[0]:
        return float(points[0][1])
    if eps >= xs[-1]:
        return float(points[-1][1])
    for (x0, f0), (x1, f1) in zip(points, points[1:]):
        if x0 <= eps <= x1:
            t = (eps - x0) / (x1 - x0)
            return portable.exp((1 - t) * portable.ln(f0) + t * portable.ln(f1))  # not libm: same bits everywhere
    raise AssertionError("unreachable")


@dataclass(frozen=True)
class Calibration:
    z: float
    target_fraction: float
    k: int  # target median |C_r| in tokens
    realized_median_fraction: float  # median |C_r| / |V| on the calibration sample at z
    tokens: int
    draws: int
    seed: int
    artifact_hash: str | None = None
    artifact: Any = field(default=None, compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "Z": self.z,
            "target_fraction": self.target_fraction,
            "target_size": self.k,
            "realized_median_fraction": self.realized_median_fraction,
            "sample_tokens": self.tokens,
            "draws_per_token": self.draws,
            "seed": self.seed,
            "artifact": self.artifact_hash,
        }


def fit_z(space, target: float, tokens: int = 256, draws: int = 4, seed: int = CALIBRATION_SEED) -> dict[str, Any]:
    """Z such that the median |C_r| over a fixed sample of (token, draw) pairs is round(target * |V|).

    Distances are the float16-rounded ones the mechanism uses (see ppt.mechanisms.rantext.mechanism).
    """
    V = space.size
    k = int(min(V, max(2, round(target * V)))) if V >= 2 else 1
    g = torch.Generator().manual_seed(seed)
    sample = torch.randperm(V, generator=g)[: min(tokens, V)]
    d = distance_rows(space, sample).cpu().half().double()  # [s, V]
    kth = d.kthvalue(k, dim=1).values  # k-th smallest, the token itself (0) first
    radii = laplace_norms(sample.numel() * draws, space.sensitivity, g).reshape(sample.numel(), draws)  # Z * r
    with torch.no_grad():
        q = radii / kth.unsqueeze(1)  # inf where the k-th neighbour sits at distance 0
    # the (lower) median of |C_r| is >= k iff more than half of the q exceed Z: place Z between the two
    # order statistics around the median of q (geometric midpoint), so the realized median is k
    qs = q.flatten().sort().values
    j = (qs.numel() - 1) // 2
    z = float(qs[j]) if j == 0 else float(torch.sqrt(qs[j - 1] * qs[j]))
    if not math.isfinite(z) or z <= 0:
        raise ValueError(
            f"cannot calibrate RANTEXT on space {space.name}: the target list size {k} is reached at "
            f"distance 0 (duplicate embeddings) or the space has no spread; pass z='paper' or a number"
        )
    sizes = (d.unsqueeze(1) < (radii / z).unsqueeze(2)).sum(2)  # [s, draws]
    realized = float(sizes.flatten().double().median()) / V
    return {
        "z": z,
        "target_fraction": float(target),
        "k": k,
        "realized_median_fraction": realized,
        "tokens": int(sample.numel()),
        "draws": int(draws),
        "seed": int(seed),
    }


_MEMO: dict[str, Calibration] = {}


def calibrated_z(space, target: float, tokens: int = 256, draws: int = 4, seed: int = CALIBRATION_SEED) -> Calibration:
    """The fitted Z for (space, target), from the cache or fitted and cached now.

    Z depends on eps only through the target fraction, so the artifact is keyed by the target (eps
    values that map to the same target share it).
    """
    deps = {
        "space": space.name,
        "space_hash": space.hash,
        "metric": space.metric,
        "target_fraction": repr(float(target)),
        "tokens": int(tokens),
        "draws": int(draws),
        "seed": int(seed),
        "version": CALIBRATION_VERSION,
    }
    key = json.dumps(deps, sort_keys=True) + str(space.cache.root)
    if key in _MEMO:
        return _MEMO[key]

    def build(tmp: Path) -> dict:
        fit = fit_z(space, target, tokens, draws, seed)
        (tmp / "calibration.json").write_text(json.dumps(fit, sort_keys=True))
        return {"Z": fit["z"], "target_fraction": fit["target_fraction"]}

    art = space.cache.get_or_build("rantext-calibration", deps, build)
    fit = json.loads(art.file("calibration.json").read_text())
    cal = Calibration(
        z=float(fit["z"]),
        target_fraction=float(fit["target_fraction"]),
        k=int(fit["k"]),
        realized_median_fraction=float(fit["realized_median_fraction"]),
        tokens=int(fit["tokens"]),
        draws=int(fit["draws"]),
        seed=int(fit["seed"]),
        artifact_hash=art.content_hash,
        artifact=art,
    )
    _MEMO[key] = cal
    return cal


__all__ = [
    "PAPER_POINTS",
    "TARGET_POINTS",
    "WHOLE_VOCAB_EPS",
    "monotone_envelope",
    "Calibration",
    "calibrated_z",
    "fit_z",
    "target_fraction",
]
