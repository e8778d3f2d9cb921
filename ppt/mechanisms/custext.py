"""CusText and CusText+ (Chen et al., 2023): eps-LDP sampling within fixed, disjoint groups of K words.

Every word of the space belongs to exactly one group of up to K similar words (built once per space, in
frequency order; the groups do not depend on eps). A word is replaced by a member y of its own group G,
drawn with ``P[y | x] = softmax_G(eps * s~_y / 2)``, s~ the cosine similarity min-max normalised over
the group: eps-LDP among the members of a group, nothing claimed across groups.

Words outside the mapping (out of the space's vocabulary) follow the policy: by default replaced by a
uniformly random vocabulary word, never passed through silently. CusText+ keeps NLTK's 179 English
stopwords verbatim (reported in the accounting).

The mapping (and why the groups must be disjoint, unlike the reference code's), similarity, the sampling
rule and its bound, the cached artifacts: docs/mechanisms/custext.md.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ppt.lazy import lazy_module

torch = lazy_module("torch")

from ppt.accounting import ConditionalDpEvent, SelfComposedEvent
from ppt.mechanisms.params import Param
from ppt.mechanisms.pipeline import TokenMechanism
from ppt.mechanisms.policy import Policy
from ppt.progress import progress_bar, stage

GROUPS_FORMAT = "custext-groups-v2"  # v2: exact cosines, ties by row (issue 36)
TABLE_FORMAT = "custext-cdf-f64-v2"  # v2: exact cosines, portable exponential (issue 36)
SIMILARITY = "cosine"

BUILD_COUNTS: Counter = Counter()


def freq_order(freq_rank: np.ndarray) -> np.ndarray:
    """Rows from most to least frequent (ties by row index)."""
    return np.lexsort((np.arange(len(freq_rank)), np.asarray(freq_rank, dtype=np.int64)))


def build_groups(
    emb: torch.Tensor, freq_rank: np.ndarray, k: int, chunk: int = 128, progress=None
) -> tuple[np.ndarray, np.ndarray]:
    """Greedy disjoint groups: (members [V] int64 in group order, offsets [G+1] int64).

    Sequential over groups (|V|/K steps, each one masked top-k over the vocabulary); the cosine distances
    of the next ``chunk`` unassigned words in frequency order come from one exact product
    (:class:`ppt.spaces.distances.ExactGrid`: the same bits on every CPU, issue 36). A group is its
    leader, then the K - 1 nearest unassigned words by (distance, row): ties broken by row index, not by
    whatever order a top-k kernel leaves them in.
    """
    from ppt.spaces.distances import ExactGrid

    v = emb.shape[0]
    grid = ExactGrid(emb)
    order = torch.from_numpy(freq_order(freq_rank)).to(emb.device)
    assigned = torch.zeros(v, dtype=torch.bool, device=emb.device)
    members: list[torch.Tensor] = []
    sizes: list[int] = []
    remaining = v
    ptr = 0  # position in frequency order before which every word is assigned
    while remaining > 0:
        # the next `chunk` unassigned words in frequency order: the upcoming leaders (mostly)
        while bool(assigned[order[ptr]]):
            ptr += 1
        window = order[ptr : ptr + 4 * chunk]
        pending = window[~assigned[window]][:chunk]
        dist = grid.distances(pending, "cosine")  # [c, V] exact 1 - cos
        for i, leader in enumerate(pending.tolist()):
            if bool(assigned[leader]):
                continue
            row = dist[i].masked_fill(assigned, float("inf"))
            row[leader] = float("-inf")  # itself first, whatever ties
            m = min(k, remaining)
            kth = torch.topk(row, m, largest=False, sorted=True).values[-1]  # the values are exact
            cand = torch.nonzero(row <= kth).squeeze(1)  # ascending rows: the stable sort breaks ties by row
            top = cand[torch.sort(row[cand], stable=True).indices[:m]]
            assigned[top] = True
            members.append(top)
            sizes.append(m)
            remaining -= m
            if progress:
                progress(m)
            if remaining == 0:
                break
    offsets = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    return torch.cat(members).cpu().numpy().astype(np.int64), offsets


def build_cdf(emb: torch.Tensor, members: np.ndarray, offsets: np.ndarray, k: int, eps: float) -> np.ndarray:
    """[V, k] float64 cumulative rows: row x holds P[. | x] over its group's members (group order),
    padded with 1.0 past the group's size.

    The same bits on every CPU (issue 36): cosines from the exact integer dot products of
    :class:`ppt.spaces.distances.ExactGrid` (each later operation one correctly rounded IEEE operation),
    weights by the portable exponential (:func:`ppt.samplers.portable.exp2_grid_torch`, no softmax), the
    cumulative sum column by column in group order."""
    from ppt.samplers.portable import LOG2E_GRID, exp2_grid_torch
    from ppt.spaces.distances import ExactGrid, sqrt_

    v = emb.shape[0]
    sizes = np.diff(offsets)
    n_groups = len(sizes)
    grid = ExactGrid(emb.cpu())
    # [G, k] member rows, -1 padded
    idx = np.full((n_groups, k), -1, dtype=np.int64)
    col = np.arange(len(members)) - np.repeat(offsets[:-1], sizes)
    grp = np.repeat(np.arange(n_groups), sizes)
    idx[grp, col] = members
    idx_t = torch.from_numpy(idx)
    valid = idx_t >= 0
    safe = idx_t.clamp(min=0)
    vecs = grid.rows[safe] * valid.unsqueeze(2)  # [G, k, d] integers
    dots = vecs @ vecs.transpose(1, 2)  # [G, k(x), k(y)]: integer products and sums below 2**53, exact in any order
    norm = sqrt_(grid.sq.clone())[safe] * valid  # [G, k]
    den = norm.unsqueeze(2) * norm.unsqueeze(1)
    sims = torch.where(den > 0, dots / torch.where(den > 0, den, torch.ones_like(den)), torch.zeros_like(den))
    pair_ok = valid.unsqueeze(1) & valid.unsqueeze(2)
    hi = sims.masked_fill(~pair_ok, float("-inf")).amax(2, keepdim=True)
    lo = sims.masked_fill(~pair_ok, float("inf")).amin(2, keepdim=True)
    span = hi - lo
    norm = torch.where(
        span > 0, (sims - lo) / torch.where(span > 0, span, torch.ones_like(span)), torch.zeros_like(sims)
    )
    # weights exp(eps/2 * (norm - 1)) (the row's largest is 1), on the portable exponential's grid
    logits = (eps / 2.0) * (norm - 1.0)
    w = exp2_grid_torch(logits * LOG2E_GRID).masked_fill(~pair_ok, 0.0)
    w[~valid] = 1.0  # padded x rows: a harmless distribution (never used)
    cdf = torch.empty_like(w)
    acc = torch.zeros_like(w[:, :, 0])
    for j in range(k):  # a fixed order: column by column
        acc = acc + w[:, :, j]
        cdf[:, :, j] = acc
    cdf = cdf / cdf[:, :, -1:]
    cdf = torch.where(valid.unsqueeze(1).expand_as(cdf), cdf, torch.ones_like(cdf))
    out = np.ones((v, k), dtype=np.float64)
    out[members] = cdf[valid].numpy()
    return out


class CusText(TokenMechanism):
    """CusText: each word resampled within its fixed group of K similar words (eps-LDP per group)."""

    name: ClassVar[str] = "custext"
    notion: ClassVar[str] = (
        "eps-LDP only among the K words of the input word's group (conditional; other groups distinguishable with certainty)"
    )
    summary: ClassVar[str] = "CusText: resample each word within its fixed group of K similar words (GloVe, K=20)"
    defaults: ClassVar[dict[str, Any]] = {"eps": 1.0}
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param(
            "k", 20, "group size: each word is resampled among the K most similar words of its group", type="int", low=1
        ),
    )
    default_space: ClassVar[str] = "glove-6b-50d"
    default_policy: ClassVar[Policy] = Policy(oov="uniform", numbers="random-digits", punct="keep", stopwords="perturb")

    def __init__(
        self,
        eps: float = 1.0,
        space=None,
        policy: Policy | None = None,
        device: str = "auto",
        quiet: bool = False,
        **params: Any,
    ):
        self.k = int(self.check_params({k: v for k, v in params.items() if v is not None})["k"])
        super().__init__(eps, space=space, policy=policy, device=device, quiet=quiet)
        self.groups_artifact = None
        self.table_artifact = None
        self._loaded = False

    def audit_model(self):
        """This mechanism's output distribution for `ppt audit` (:mod:`ppt.mechanisms.exact`)."""
        from ppt.mechanisms.exact import CusTextModel

        return CusTextModel(self)

    def privacy_events(self, acc, *, diagnostics: bool = False) -> list:
        """eps-DP only among the K words of the input's group: conditional on the group, never proven over
        the vocabulary (a word of another group has a disjoint output set: distinguishable with certainty)."""
        cond = f"the input's group of {self.k} words"
        return [SelfComposedEvent(ConditionalDpEvent(self.eps, cond), int(acc.n_perturbed))]

    def signature_params(self) -> dict[str, Any]:
        return {"k": self.k}

    def params(self) -> dict[str, Any]:
        return {
            "eps": self.eps,
            "k": self.k,
            "similarity": SIMILARITY,
            "space": self.space.name,
            "space_hash": self.space.hash,
            "oov": self.policy.oov,
            "numbers": self.policy.numbers,
            "punct": self.policy.punct,
            "stopwords": self.policy.stopwords,
        }

    # ---- artifacts ---------------------------------------------------------------------------------

    def groups_deps(self) -> dict[str, Any]:
        freq = hashlib.sha256(
            np.ascontiguousarray(np.asarray(self.space.freq_rank, dtype=np.int64)).tobytes()
        ).hexdigest()[:16]
        return self.space._table_deps(
            "custext-groups", k=self.k, similarity=SIMILARITY, order="freq_rank", freq=freq, format=GROUPS_FORMAT
        )

    def load_groups(self) -> tuple[np.ndarray, np.ndarray]:
        sp = self.space

        def build(tmp: Path) -> dict:
            BUILD_COUNTS["custext-groups"] += 1
            with (
                stage(f"building CusText groups of {sp.name} (k={self.k})", self.quiet, tmp),
                progress_bar(sp.size, f"custext groups {sp.name} k={self.k}", self.quiet, unit="word") as bar,
            ):
                members, offsets = build_groups(sp.embeddings, sp.freq_rank, self.k, progress=bar.update)
                np.save(tmp / "members.npy", members)
                np.save(tmp / "offsets.npy", offsets)
            return {"k": self.k, "n_groups": len(offsets) - 1, "similarity": SIMILARITY}

        art = sp.cache.get_or_build("custext-groups", self.groups_deps(), build)
        self.groups_artifact = art
        return np.load(art.file("members.npy")), np.load(art.file("offsets.npy"))

    def _load(self) -> None:
        if self._loaded:
            return
        sp = self.space
        members, offsets = self.load_groups()
        deps = {
            "groups": self.groups_artifact.content_hash,
            "groups_key": self.groups_artifact.key,
            "eps": self.eps,
            "format": TABLE_FORMAT,
        }

        def build(tmp: Path) -> dict:
            BUILD_COUNTS["custext-table"] += 1
            np.save(tmp / "cdf.npy", build_cdf(sp.embeddings, members, offsets, self.k, self.eps))
            return {"k": self.k, "eps": self.eps}

        art = sp.cache.get_or_build("custext-table", deps, build)
        self.table_artifact = art
        sizes = np.diff(offsets)
        group_of = np.full(sp.size, -1, dtype=np.int64)
        group_of[members] = np.repeat(np.arange(len(sizes)), sizes)
        # numpy (the cdf memory-mapped: a batch reads only its words' rows); tensors made on first use
        self.np_tables = {
            "members": members,
            "offsets": offsets,
            "group_of": group_of,
            "group_size": sizes,
            "cdf": np.load(art.file("cdf.npy"), mmap_mode="r"),
        }
        self._loaded = True

    def _tensor(self, name: str) -> torch.Tensor:
        self._load()
        cache = self.__dict__.setdefault("_tensors", {})
        if name not in cache:
            cache[name] = torch.from_numpy(np.array(self.np_tables[name])).to(self.device)
        return cache[name]

    members = property(lambda self: self._tensor("members"))
    offsets = property(lambda self: self._tensor("offsets"))
    group_of = property(lambda self: self._tensor("group_of"))
    group_size = property(lambda self: self._tensor("group_size"))
    cdf = property(lambda self: self._tensor("cdf"))

    def precompute(self, quiet: bool = False) -> list:
        self._load()
        return [self.groups_artifact, self.table_artifact]

    def group_members(self, row: int) -> list[int]:
        """The output set of a word (its group's rows, leader first)."""
        self._load()
        t = self.np_tables
        g = int(t["group_of"][row])
        return t["members"][int(t["offsets"][g]) : int(t["offsets"][g + 1])].tolist()

    # ---- sampling ----------------------------------------------------------------------------------

    def draw(self, n: int, g: np.random.Generator) -> dict[str, np.ndarray]:
        return {"u": g.random(n)}

    def perturb_rows_np(
        self, rows: np.ndarray, rand: dict[str, np.ndarray]
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """The numpy sampler: the same inverse CDF over the same cumulative rows as :meth:`perturb_rows`
        (count of cdf entries <= u is searchsorted(right=True) on a nondecreasing row)."""
        self._load()
        t = self.np_tables
        grp = t["group_of"][rows]
        if (grp < 0).any():  # cannot happen: the mapping covers the space's vocabulary
            raise RuntimeError("custext: a word outside the mapping reached the sampler")
        c = np.asarray(t["cdf"][rows])  # [n, k]
        u = np.clip(np.asarray(rand["u"], dtype=np.float64), 0.0, 1.0 - 2**-53)
        j = (c <= u[:, None]).sum(1)
        j = np.minimum(j, t["group_size"][grp] - 1)
        return t["members"][t["offsets"][grp] + j], {}

    def perturb_rows(
        self, rows: torch.Tensor, rand: dict[str, torch.Tensor]
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        if self.backend == "numpy":
            return self._rows_via_numpy(rows, rand)
        self._load()
        grp = self.group_of[rows]
        if bool((grp < 0).any()):  # cannot happen: the mapping covers the space's vocabulary
            raise RuntimeError("custext: a word outside the mapping reached the sampler")
        c = self.cdf[rows]  # [n, k]
        u = torch.as_tensor(rand["u"]).to(c.device, torch.float64).clamp(0.0, 1.0 - 2**-53).unsqueeze(1)
        j = torch.searchsorted(c, u, right=True).squeeze(1)
        j = torch.minimum(j, self.group_size[grp] - 1)
        return self.members[self.offsets[grp] + j], {}


class CusTextPlus(CusText):
    """CusText+: CusText that keeps NLTK's 179 English stopwords verbatim (reported)."""

    name: ClassVar[str] = "custext+"
    summary: ClassVar[str] = "CusText+: CusText keeping the 179 NLTK English stopwords"
    default_policy: ClassVar[Policy] = Policy(oov="uniform", numbers="random-digits", punct="keep", stopwords="keep")


__all__ = ["CusText", "CusTextPlus", "build_groups", "build_cdf", "BUILD_COUNTS"]
