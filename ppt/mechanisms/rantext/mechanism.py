"""RANTEXT (InferDPT, Tong et al., Algorithm 2): exponential mechanism over a random adjacency list.

Per perturbed token t: r = ||Y||_2 with Y_d ~ Laplace(0, Delta_d / Z(eps)); C_r(t) = {t' : d(t, t') < r};
output t' in C_r(t) with P ~ exp(eps/2 * (1 - d(t, t') / r)). The paper's eps-LDP holds only *given* C_r,
so every perturbed token is stamped as a ConditionalDpEvent and no proven headline is claimed.
This module wires Z (:mod:`.calibration`) and the run-length sampler (:mod:`.runs`) into the token
pipeline. Distances, the fast path and its fallback, the sampling rule, randomness: docs/mechanisms/rantext.md.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ppt.lazy import lazy_module

torch = lazy_module("torch")

from ppt import parallel
from ppt.accounting import ConditionalDpEvent, SelfComposedEvent
from ppt.mechanisms.params import Param
from ppt.mechanisms.pipeline import TokenMechanism
from ppt.mechanisms.policy import Policy
from ppt.mechanisms.rantext import calibration
from ppt.mechanisms.rantext.runs import (
    DEFAULT_CHUNK_ENTRIES,
    RUN_TABLE_VERSION,
    RunTable,
    build_run_table_files,
    build_runs,
    sample_runs,
    sample_runs_torch,
)
from ppt.samplers import laplace, portable
from ppt.spaces.distances import distance_rows

FALLBACK_CHUNK_ENTRIES = 4_000_000  # distance entries per block of unique tokens on the fallback path
MIN_SHARED_DRAWS = 1 << 16  # Laplace coordinates in a batch below which one thread draws them all
Z_MODES = ("calibrated", "paper")
SAMPLERS = ("auto", "numpy", "torch")  # auto: torch on CUDA, numpy on CPU; torch on CPU tensors for tests


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
        value = self.a * portable.ln(arg) + self.d  # correctly rounded: libm's log differs across CPUs
        if value <= 0:
            raise ValueError(f"Z constants give a non-positive Z={value} at eps={eps}")
        return float(value)


def paper_z(eps: float, constants: ZConstants | None = None) -> float:
    return (constants or ZConstants()).z(eps)


class Rantext(TokenMechanism):
    """RANTEXT: per token, Laplace-sized random adjacency list, then the exponential mechanism in it."""

    name: ClassVar[str] = "rantext"
    notion: ClassVar[str] = (
        "eps-LDP per token only given the random adjacency list C_r (conditional; no proven bound over the vocabulary)"
    )
    summary: ClassVar[str] = "InferDPT's RANTEXT: Laplace-sized random adjacency list + exponential mechanism"
    default_space: ClassVar[str] = "cl100k-minilm"
    default_policy: ClassVar[Policy] = Policy(oov="drop", numbers="random-digits", punct="keep", stopwords="perturb")

    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param(
            "z",
            "calibrated",
            "noise scale of the adjacency list: calibrated per space, the paper's constants, or a fixed number",
            choices=Z_MODES,
            low=0.0,
            open_low=True,
        ),
        Param(
            "target_fraction",
            None,
            "with z=calibrated: the median adjacency list size as a share of the "
            "vocabulary (default: the eps-dependent rule in the README)",
            low=0.0,
            high=1.0,
            open_low=True,
            nullable=True,
        ),
        Param(
            "z_constants",
            None,
            "the paper's fitted constants, overridden (dict of ZConstants fields)",
            type="any",
            internal=True,
        ),
        Param(
            "fast_path",
            None,
            "force (true) or forbid (false) the run-length fast path",
            type="bool",
            nullable=True,
            internal=True,
        ),
        Param(
            "chunk_entries",
            DEFAULT_CHUNK_ENTRIES,
            "run-length entries per sampling block",
            type="int",
            low=1,
            internal=True,
        ),
        Param("calibration_tokens", 256, "tokens sampled to calibrate z", type="int", low=1, internal=True),
        Param("calibration_draws", 4, "noise draws per calibration token", type="int", low=1, internal=True),
        Param("sampler", "auto", "auto: torch on CUDA, numpy on CPU", type="str", choices=SAMPLERS, internal=True),
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
        z, target_fraction = p["z"], p["target_fraction"]
        if isinstance(z, str):
            self.z_mode = z
            self._z_fixed = None
        else:
            self.z_mode = "fixed"
            self._z_fixed = float(z)
        if target_fraction is not None and self.z_mode != "calibrated":
            raise ValueError("rantext: target_fraction only applies with z='calibrated'")
        z_constants = p["z_constants"]
        if isinstance(z_constants, dict):
            z_constants = ZConstants(**z_constants)
        self.z_constants = z_constants or ZConstants()
        self.chunk_entries = p["chunk_entries"]
        self.sampler = p["sampler"]
        self.fast_path_opt = p["fast_path"]
        self.calibration_tokens = p["calibration_tokens"]
        self.calibration_draws = p["calibration_draws"]
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
        return calibration.calibrated_z(
            self.space, self.target_fraction, self.calibration_tokens, self.calibration_draws
        )

    @cached_property
    def z(self) -> float:
        if self.z_mode == "fixed":
            return self._z_fixed
        if self.z_mode == "paper":
            return self.z_constants.z(self.eps)
        return self.calibration.z

    @cached_property
    def noise_scale(self) -> np.ndarray:
        """Per-dimension Laplace scale Delta_d / Z (float64 numpy)."""
        return np.asarray(self.space.sensitivity_array, dtype=np.float64) / self.z

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
        deps = {
            "space": self.space.name,
            "space_hash": self.space.hash,
            "metric": self.space.metric,
            "sorted_rows": sr.artifact.key,
            "version": RUN_TABLE_VERSION,
        }

        def build(tmp: Path) -> None:
            from ppt.progress import stage

            with stage(f"building RANTEXT run table of {self.space.name}", self.quiet, tmp):
                build_run_table_files(sr.dist, tmp)

        art = self.space.cache.get_or_build("rantext-runs", deps, build)
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

    def prepare(self) -> Rantext:
        """Fit or load Z, and load the sorted rows and run tables (fast path), before any record is read."""
        super().prepare()
        self._scale2  # noqa: B018 - materialises noise_scale and z (the calibration) too
        return self

    CONDITION: ClassVar[str] = "random adjacency list C_r"

    def audit_model(self):
        """This mechanism's output distribution for `ppt audit` (:mod:`ppt.mechanisms.exact`)."""
        from ppt.mechanisms.exact import RantextModel

        return RantextModel(self)

    def privacy_events(self, acc, *, diagnostics: bool = False) -> list:
        return [SelfComposedEvent(ConditionalDpEvent(self.eps, self.CONDITION), int(acc.n_perturbed))]

    def signature_params(self) -> dict[str, Any]:
        out: dict[str, Any] = {"z": self._z_fixed if self.z_mode == "fixed" else self.z_mode}
        if self._target_override is not None:
            out["target_fraction"] = self._target_override
        if self.z_mode == "paper" and self.z_constants != ZConstants():
            out["z_constants"] = ",".join(f"{v!r}" for v in asdict(self.z_constants).values())
        return out

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

    def draw(self, n: int, g: np.random.Generator) -> dict[str, np.ndarray]:
        """Per position: the radius r = ||Y||_2 of a fresh Laplace vector (a 128-bit sub-stream seeded
        from ``g``), then one uniform."""
        r = laplace.laplace_norms_seeded(n, self._scale2, laplace.laplace_seed(g))
        u = g.random(n)
        return {"r": r, "u": u}

    @cached_property
    def _scale2(self) -> np.ndarray:
        """Squared per-dimension Laplace scales (what :func:`ppt.samplers.laplace.laplace_norms` uses)."""
        return self.noise_scale**2

    def _seeds_and_uniforms(
        self, counts: list[int], generators: list[np.random.Generator]
    ) -> tuple[list[int], np.ndarray]:
        """Each record's draws from its generator, in ``draw``'s order: its Laplace stream seed, then its uniforms."""
        seeds, us = [], []
        for n, g in zip(counts, generators):
            seeds.append(laplace.laplace_seed(g))
            us.append(g.random(n))
        return seeds, np.concatenate(us) if us else np.empty(0)

    def _laplace_norms(self, counts: list[int], seeds: list[int]) -> np.ndarray:
        """Every record's Laplace norms from its seed (numpy only; records shared with the helper threads,
        each drawn whole by one thread, so the result is the same as on one thread)."""
        starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        r = np.empty(int(starts[-1]), dtype=np.float64)
        scale2 = self._scale2

        def draw(i: int) -> None:
            r[starts[i] : starts[i + 1]] = laplace.laplace_norms_seeded(counts[i], scale2, seeds[i])

        parallel.for_each(draw, len(counts), share=r.size * scale2.size >= MIN_SHARED_DRAWS)
        return r

    def draw_batch(self, counts: list[int], generators: list[np.random.Generator]) -> dict[str, np.ndarray]:
        """``draw`` for every record. The record's generator gives its stream seed and then its uniforms,
        as in ``draw``; the Laplace norms come from the seeds alone, after all generator draws."""
        seeds, u = self._seeds_and_uniforms(counts, generators)
        if not counts:
            return {}
        return {"r": self._laplace_norms(counts, seeds), "u": u}

    @property
    def uses_torch_sampler(self) -> bool:
        """Whether the fast path samples with :func:`sample_runs_torch` on the mechanism's device (CUDA, or
        ``sampler="torch"``) rather than with numpy on the CPU."""
        if self.sampler == "auto":
            return str(self.device).startswith("cuda")
        return self.sampler == "torch"

    def _sample(self, rows: np.ndarray, r: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Steps 2-3 for positions with given radii and uniforms (numpy): (output rows, |C_r|)."""
        if rows.size == 0:
            return np.empty(0, np.int64), np.empty(0, np.int64)
        if self.uses_fast_path:
            return sample_runs(self.run_table, rows, r, u, self.eps, self.chunk_entries)
        return self._sample_fallback(rows, r, u)

    def perturb_rows_np(
        self, rows: np.ndarray, rand: dict[str, np.ndarray]
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        out, size = self._sample(
            np.asarray(rows, dtype=np.int64),
            np.asarray(rand["r"], dtype=np.float64),
            np.asarray(rand["u"], dtype=np.float64),
        )
        return out, {"cr_size": size}

    def perturb_rows(
        self, rows: torch.Tensor, rand: dict[str, torch.Tensor]
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        out, size = self.sample_given_radius(rows, rand["r"], rand["u"])
        return out, {"cr_size": size}

    def sample_given_radius(self, rows, r, u) -> tuple[torch.Tensor, torch.Tensor]:
        """Steps 2-3 of RANTEXT for given radii and uniforms: (output rows, |C_r|), both int64 [n].

        With the torch sampler they stay on the mechanism's device (the run tables are copied there
        once); otherwise numpy on the CPU, returned as CPU tensors.
        """
        if self.uses_fast_path and self.uses_torch_sampler:
            rows = torch.as_tensor(rows)
            if rows.numel() == 0:
                empty = torch.empty(0, dtype=torch.int64, device=self.device)
                return empty, empty.clone()
            table = self.run_table.on_device(self.device)
            return sample_runs_torch(table, rows, torch.as_tensor(r), torch.as_tensor(u), self.eps)
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
            d = distance_rows(self.space, ids, dtype=torch.float64)  # exact: sorted as the sorted-rows table is
            vals, order = torch.sort(d, dim=1, stable=True)
            values, ends = build_runs(vals.float().half())
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
        sizes = np.asarray(s)
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


__all__ = ["Rantext", "ZConstants", "paper_z"]
