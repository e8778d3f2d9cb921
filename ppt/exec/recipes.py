"""Stage recipes: the picklable parameters of a stage, so each cluster worker builds its own stage (and
loads its space, tables and models once) instead of receiving a pickled copy of the driver's."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from typing import Any

from ppt.stages.sanitize import SanitizeStage, build_mechanism


@dataclass
class SanitizeRecipe:
    """Everything `ppt sanitize` needs to build its stage; calling it builds one (quietly)."""

    mech: str
    eps: float | None = None
    space: str | None = None
    model: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    policy: dict[str, str | None] = field(default_factory=dict)
    device: str = "auto"
    text_field: str = "text"
    seed: int | None = None
    keep_original: str | None = None
    emit_alignment: str | None = None
    min_kept: int = 0
    diagnostics: str | None = None
    stamp_mode: str = "compact"

    def __call__(self) -> SanitizeStage:
        mech = build_mechanism(self.mech, self.eps, space=self.space, model=self.model, policy=self.policy,
                               params=self.params, device=self.device, quiet=True)
        return SanitizeStage(mech, text_field=self.text_field, seed=self.seed, keep_original=self.keep_original,
                             emit_alignment=self.emit_alignment, min_kept=self.min_kept,
                             diagnostics=self.diagnostics, stamp_mode=self.stamp_mode)

    def build_hint(self) -> str:
        """How to build every table this recipe reads, once, where the cluster's cache lives."""
        cmd = ["ppt", "sanitize", "--mech", self.mech]
        if self.eps is not None:
            cmd += ["--eps", f"{self.eps:g}"]
        for opt, value in (("--space", self.space), ("--model", self.model)):
            if value:
                cmd += [opt, value]
        for key, value in self.params.items():
            cmd += ["--param", f"{key}={value if isinstance(value, str) else json.dumps(value)}"]
        for key, value in self.policy.items():
            if value is not None:
                cmd += [f"--{key}", value]
        cmd += ["-i", "/dev/null", "-o", "/dev/null", "--quiet"]
        space = f"`ppt precompute {self.space}` builds the space and its distance tables; " if self.space else ""
        return (f"build the tables once where the cluster's cache (PPT_CACHE) lives, on the head node or shared "
                f"storage: {space}`{shlex.join(cmd)}` builds everything this mechanism reads")
