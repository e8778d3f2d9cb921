"""Stage recipes: the picklable parameters of a stage, so each cluster worker builds its own stage (and
loads its space, tables and models once) instead of receiving a pickled copy of the driver's."""

from __future__ import annotations

from dataclasses import dataclass

from ppt.stages.sanitize import SanitizeStage, stage_from_spec
from ppt.stages.sanitize_spec import SanitizeSpec


@dataclass(frozen=True)
class SanitizeRecipe(SanitizeSpec):
    """The sanitize spec as the worker pool and Ray take it: calling it builds the stage (quietly)."""

    def __call__(self) -> SanitizeStage:
        return stage_from_spec(self, quiet=True)


__all__ = ["SanitizeRecipe"]
