"""Empirical privacy auditing: certified lower bounds on a mechanism's per-token loss (``ppt audit``).

bounds.py   Clopper-Pearson (counts) and KL-Chernoff (means of [0, 1] draws) bounds
search.py   the pair search over a mechanism's audit_model() (ppt.mechanisms.exact), RANTEXT on sampled radii
core.py     end-to-end runs through ``sanitize_batch``, the verdict against the claim
"""

from ppt.audit.core import Claim, audit

__all__ = ["Claim", "audit"]
