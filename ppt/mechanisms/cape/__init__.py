"""Cape (context-aware prompt perturbation): the mechanism, its candidate set and its utility kernels.

Why a package: the bucketized-EM kernels (:mod:`.utility`) and the candidate rule (:mod:`.candidates`)
are tested on their own; the mechanism (:mod:`.mechanism`) wires them with a context model
(:class:`ppt.lm.context.ContextModel`) into the token pipeline's rules.
"""

from __future__ import annotations

from ppt.mechanisms.cape.mechanism import CALIBRATION_PROMPTS, CALIBRATION_QUANTILE, Cape

__all__ = ["CALIBRATION_PROMPTS", "CALIBRATION_QUANTILE", "Cape"]
