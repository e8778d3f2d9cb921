"""TEM, the truncated exponential mechanism (Carvalho et al., "TEM: High Utility Metric Differential
Privacy on Text").

For an input word x over a vocabulary V with metric d (Euclidean distance of the space's embeddings):

    gamma = (2 / eps) * ln(((1 - beta) / beta) * (|V| - 1))
    L_x   = {y : d(x, y) <= gamma}, each scored -d(x, y)
    bottom, scored -gamma + (2 / eps) * ln|V \\ L_x|

Pick the argmax of score + Gumbel(scale 2 / eps), i.e. sample with P proportional to
exp(eps / 2 * score); the bottom element is replaced by a uniformly random word outside L_x.

Privacy notion, checked rather than quoted: the output distribution is exactly
P[y | x] proportional to exp(-eps / 2 * min(d(x, y), gamma)) over all of V (each word outside L_x gets
exp(-eps * gamma / 2), the bottom's mass split evenly). min(d, gamma) is 1-Lipschitz in x, so both the
score and the normaliser move by at most eps / 2 * d(x, x'), and
P[y | x] <= exp(eps * d(x, x')) * P[y | x']: metric DP (d_X-privacy) with eps per unit of embedding
distance -- not eps-LDP; two words at distance 3 are only 3 * eps-indistinguishable. beta trades
utility for truncation: with probability about 1 - beta the output lies in L_x. The metric is the
space's distance in float64, exact on the space's integer grid (ppt.spaces.distances.distance_rows:
float32 let a word at distance ~gamma fall inside or outside L_x from one run to the next); its rounding
(~1e-15) is ignored by the bound. gamma comes from a correctly rounded logarithm and the weights from
the portable exponential (ppt.samplers.portable, exponent on a 2**-20 grid): a seeded draw is the same
on every CPU (issue 36).

Implementation: per unique id of the batch, exact distance rows in fixed-size
blocks and one cumulative table over [L_x scores | bottom]; each position draws one uniform for the inverse CDF
and one that picks its word outside L_x by rank. No Python loop over the vocabulary or the positions.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, ClassVar

import numpy as np
import torch

from ppt.accounting import MetricDpEvent, SelfComposedEvent
from ppt.mechanisms.params import Param
from ppt.mechanisms.pipeline import TokenMechanism
from ppt.mechanisms.policy import Policy
from ppt.mechanisms.privacy import warn_worst_case
from ppt.samplers import portable
from ppt.samplers.exponential import grouped_searchsorted
from ppt.samplers.portable import LOG2E_GRID, exp2_grid_np, exp2_grid_torch
from ppt.spaces.distances import diameter_bound, distance_rows

DEFAULT_CHUNK_ENTRIES = 4_000_000  # distance entries per block of unique ids


class TEM(TokenMechanism):
    """Truncated exponential mechanism: exponential mechanism on -min(d, gamma), bottom -> uniform outside."""

    name: ClassVar[str] = "tem"
    notion: ClassVar[str] = (
        "metric LDP (d_X-privacy): eps per unit of embedding distance; worst case eps * min(D, gamma) over the vocabulary"
    )
    summary: ClassVar[str] = "Carvalho et al.'s TEM: exponential mechanism within gamma, uniform word beyond"
    default_space: ClassVar[str] = "glove-6b-50d"
    default_policy: ClassVar[Policy] = Policy()
    # eps 0.8: worst case 0.8 * D = 18.2 (<= 20) on glove-6b-50d; names came through unchanged 96.6% of
    # the time at the old default 6 and 0% at 0.8 (CHANGELOG)
    defaults: ClassVar[dict[str, Any]] = {"eps": 0.8}
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param(
            "beta",
            0.001,
            "probability that the output leaves the gamma-ball (sets gamma)",
            low=0.0,
            high=1.0,
            open_low=True,
            open_high=True,
        ),
        Param(
            "chunk_entries",
            DEFAULT_CHUNK_ENTRIES,
            "distance entries per block of unique ids",
            type="int",
            low=1,
            internal=True,
        ),
    )

    def __init__(
        self,
        eps: float,
        space=None,
        policy: Policy | None = None,
        device: str = "auto",
        quiet: bool = False,
        **params: Any,
    ):
        p = self.check_params(params)
        self.beta = float(p["beta"])
        self.chunk_entries = p["chunk_entries"]
        super().__init__(eps, space=space, policy=policy, device=device, quiet=quiet)
        if self.space.size < 2:
            raise ValueError("tem: the space needs at least two words")
        warn_worst_case(self.name, self.eps, self.worst_case_eps, self.unit)

    # ---- privacy ------------------------------------------------------------------------------------

    @property
    def worst_case_eps(self) -> float:
        """eps * min(D, gamma): min(d, gamma) moves by at most min(d(x, x'), gamma) in the score and in the
        normaliser, and d(x, x') <= D over the vocabulary (:func:`diameter_bound`). eps * gamma =
        2 ln(((1 - beta) / beta)(|V| - 1)) does not depend on eps."""
        return self.eps * min(diameter_bound(self.space), self.gamma)

    def audit_model(self):
        """This mechanism's output distribution for `ppt audit` (:mod:`ppt.mechanisms.exact`)."""
        from ppt.mechanisms.exact import TEMModel

        return TEMModel(self)

    def privacy_events(self, acc, *, diagnostics: bool = False) -> list:
        return [
            SelfComposedEvent(
                MetricDpEvent(self.eps, unit=self.unit, worst_case_eps=self.worst_case_eps), int(acc.n_perturbed)
            )
        ]

    def signature_params(self) -> dict[str, Any]:
        return {"beta": self.beta}

    @property
    def gamma(self) -> float:
        """Truncation radius (2 / eps) ln(((1 - beta) / beta)(|V| - 1))."""
        return 2.0 / self.eps * portable.ln((1.0 - self.beta) / self.beta * (self.space.size - 1))

    @property
    def _bottom_weight(self) -> float:
        """exp(-eps/2 * gamma), the weight of each word outside L_x, by the portable exponential."""
        t = np.array([-(self.eps / 2.0) * self.gamma * LOG2E_GRID])
        return float(exp2_grid_np(t)[0])

    def params(self) -> dict[str, Any]:
        return {
            "space": self.space.stamp(),
            "beta": self.beta,
            "gamma": self.gamma,
            "distances": f"{self.space.metric} float64",
            "policy": asdict(self.policy),
        }

    def draw(self, n: int, g: np.random.Generator) -> dict[str, np.ndarray]:
        """Per position: the inverse-CDF uniform, then the uniform that picks a word outside L_x."""
        u = g.random(n)
        u2 = g.random(n)
        return {"u": u, "u2": u2}

    def perturb_rows(
        self, rows: torch.Tensor, rand: dict[str, torch.Tensor]
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        dev = self.space.device
        rows = rows.to(dev)
        u = torch.as_tensor(rand["u"]).to(dev, torch.float64)
        u2 = torch.as_tensor(rand["u2"]).to(dev, torch.float64)
        V = self.space.size
        half = self.eps / 2.0
        gamma = self.gamma
        uniq, inv = torch.unique(rows, return_inverse=True)
        out = torch.empty_like(rows)
        in_l = torch.empty_like(rows)
        bottom = torch.zeros(rows.numel(), dtype=torch.bool, device=dev)
        per = max(1, self.chunk_entries // (V + 1))
        for start in range(0, uniq.numel(), per):
            ids = uniq[start : start + per]
            pos = torch.nonzero((inv >= start) & (inv < start + ids.numel())).squeeze(1)
            loc = inv[pos] - start
            d = distance_rows(self.space, ids, dtype=torch.float64)  # [c, V]
            inside = d <= gamma
            n_out = V - inside.sum(1)
            # weights exp(eps/2 * score) by the portable exponential (the same bits on every CPU, issue 36):
            # exp(-eps/2 d) inside L_x, 0 outside; the bottom's n_out * exp(-eps/2 gamma) (no logarithm);
            # the cumulative sum in column order (no softmax: only the ratios matter to the inverse CDF)
            w = torch.empty((ids.numel(), V + 1), dtype=torch.float64, device=dev)
            w[:, :V] = exp2_grid_torch(d * (-half * LOG2E_GRID)).masked_fill_(~inside, 0.0)
            w[:, V] = n_out.double() * self._bottom_weight
            cdf = w.cumsum(1)
            target = u[pos].clamp(0.0, 1.0 - 1e-16) * cdf[loc, -1]
            col = grouped_searchsorted(cdf, loc, target, right=True).clamp_(max=V)
            is_bottom = col == V
            res = col.clone()
            if bool(is_bottom.any()):
                b_pos = torch.nonzero(is_bottom).squeeze(1)
                b_loc = loc[b_pos]
                m = n_out[b_loc]
                rank = torch.minimum((u2[pos[b_pos]] * m.double()).floor().to(torch.int64), m - 1)
                outside_count = (~inside).to(torch.int32).cumsum(1)  # [c, V]
                # the (rank+1)-th word outside L_x: first index whose running count reaches rank + 1
                res[b_pos] = grouped_searchsorted(outside_count, b_loc, rank + 1, right=False)
            out[pos] = res
            bottom[pos] = is_bottom
            in_l[pos] = (V - n_out)[loc]
        return out, {"bottom": bottom, "l_size": in_l}

    def record_extra(self, diag: dict[str, torch.Tensor]) -> dict[str, Any]:
        s = diag.get("l_size")
        if s is None or s.numel() == 0:
            return {}
        s = s.double()
        return {
            "truncated_set_size": {"median": float(s.median()), "min": int(s.min()), "max": int(s.max())},
            "bottom_draws": int(diag["bottom"].sum()),
        }


__all__ = ["TEM"]
