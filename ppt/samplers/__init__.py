"""Sampling kernels shared by mechanisms: exponential-mechanism draws, Laplace noise and d_chi noise.

Why a floor of their own: these are the numerical rules a mechanism's privacy proof rests on (one
uniform per position, inverse CDF, noise from the record's own generator). Keeping them free of any
mechanism, space or model lets several mechanisms share one tested rule.
"""

from __future__ import annotations
