"""RANTEXT (InferDPT): the mechanism, its run-length prefix sampler and its Z calibration.

Why a package: the sampler (:mod:`.runs`) and the noise calibration (:mod:`.calibration`) are each
a few hundred lines with their own tests and cached artifacts; the mechanism (:mod:`.mechanism`)
wires them into the token pipeline.
"""

from __future__ import annotations

from ppt.mechanisms.rantext.mechanism import Rantext, ZConstants, paper_z

__all__ = ["Rantext", "ZConstants", "paper_z"]
