"""`ppt audit` as a library: build each mechanism, read the claim its stamped record makes, audit it.

The claim comes from a record the sanitize stage stamps (the ``proven`` headline of ``ppt.sanitize.privacy``
for a one-token prompt), so the audit checks what users see, not what the class says about itself.
"""

from __future__ import annotations

from typing import Any

from ppt.audit import Claim, audit
from ppt.audit.search import perturbable
from ppt.io import ExitCode, PptError, Record
from ppt.mechanisms import Mechanism
from ppt.stages.base import prepare_mechanism
from ppt.stages.sanitize import sanitize_records
from ppt.stages.sanitize_spec import SanitizeSpec, build_mechanism

CLAIM_PROBES = 32  # stamped one-token records tried before concluding that the stamps prove nothing


def stamped_claim(mech: Mechanism, seed: int | None) -> tuple[Claim, dict]:
    """The claim in the accounting of a stamped one-token record (the first token the pipeline perturbs).

    A record's stamp may prove nothing because of that record's own draw: SanText+ keeps a non-sensitive
    word verbatim with probability 1 - p, and the word is then outside the proven scope. So up to
    ``CLAIM_PROBES`` records (the perturbable one-token texts in turn, each its own id) are stamped, and
    the first proven claim is the one audited; none proven: no claim."""
    model = mech.audit_model()
    if model is None:
        raise PptError(f"{mech.name} has no audit_model(): ppt audit cannot compute its output distribution")
    rows = [int(r) for r in model.universe()[:256]]
    texts = list(perturbable(mech, model, rows, seed).values())
    if not texts:
        raise PptError(f"{mech.name}: no one-token prompt of the first 256 tokens is perturbed; nothing to audit")
    for k in range(CLAIM_PROBES):
        text = texts[k % len(texts)]
        rid = "audit-claim" if k == 0 else f"audit-claim-{k}"
        [rec] = sanitize_records(
            mech,
            [Record(line_no=1, id=rid, data={"text": text}, text=text)],
            SanitizeSpec(mech.name, text_field="text", seed=seed),
        )
        if not isinstance(rec, dict):
            raise PptError(f"{mech.name}: the stamp probe failed ({rec})")
        block = rec.get("ppt", {}).get("sanitize", {})
        acc = claim_of_privacy(block.get("privacy") or {})
        claim = Claim.from_accounting(acc)
        if claim.eps_per_token is not None:
            break
    return claim, acc


def claim_of_privacy(privacy: dict) -> dict:
    """The per-token figure a stamp's privacy block proves, as the auditor reads it: the ``proven``
    headline only (eps per unit distance for metric DP, per token otherwise); conditional and claimed
    figures are not proven, so they are no claim to audit."""
    proven = privacy.get("proven") or {}
    metric = proven.get("metric") or {}
    notion = str(proven.get("notion") or "")
    if metric:
        unit, fig = next(iter(metric.items()))
        return {"eps_per_token": fig.get("eps_per_unit"), "notion": f"{notion} ({unit})", "proven": True}
    eps = proven.get("eps_per_token")
    if isinstance(eps, (int, float)) and not isinstance(eps, bool):
        return {"eps_per_token": eps, "notion": notion, "proven": True}
    # nothing proven: audit the conditional figure the stamp labels apart, as what it is (a violation
    # then shows the condition matters: the figure is no bound once the condition is random)
    for cond in privacy.get("conditional") or []:
        given = cond.get("eps_per_token_given")
        if isinstance(given, (int, float)) and not isinstance(given, bool):
            return {
                "eps_per_token": given,
                "notion": f"conditional: given {cond.get('given', '?')} (not proven)",
                "proven": True,
                "conditional": True,
            }
    return {"eps_per_token": None, "notion": "no proven per-token bound", "proven": False}


def run_audit(
    name: str,
    eps: float,
    *,
    space: str | None = None,
    model: str | None = None,
    params: dict[str, Any] | None = None,
    pairs: int = 200,
    samples: int = 1_000_000,
    e2e_samples: int = 50_000,
    alpha: float = 1e-6,
    seed: int | None = 0,
    top: int = 3,
    device: str = "auto",
    quiet: bool = False,
    context: str = "",
) -> dict[str, Any]:
    """One JSON-ready audit record for (mechanism, eps)."""
    if not (0.0 < alpha < 1.0):
        raise PptError(f"--alpha must be in (0, 1) (got {alpha})", exit_code=ExitCode.USAGE)
    from ppt.mechanisms import mechanism_class

    try:
        cls = mechanism_class(name)
    except (KeyError, ImportError):  # build_mechanism says why
        cls = None
    if not getattr(cls, "takes_eps", True):  # before building it (ProSan loads models)
        raise PptError(
            f"{name} has no eps to audit: it gives no differential-privacy guarantee",
            exit_code=ExitCode.USAGE,
            hint="measure what it hides with `ppt eval phr`",
        )
    if context and not getattr(cls, "rows_in_model_space", False):
        raise PptError(f"--context applies to Cape (a context model), not {name}", exit_code=ExitCode.USAGE)
    mech = build_mechanism(name, eps, space=space, model=model, params=params, device=device, quiet=quiet)
    prepare_mechanism(mech)
    claim, acc = stamped_claim(mech, seed)
    out = audit(
        mech,
        claim,
        pairs=pairs,
        samples=samples,
        e2e_samples=e2e_samples,
        alpha=alpha,
        seed=seed,
        top=top,
        space_name=space,
        context=context,
    )
    out["claim"]["stamp"] = {k: acc.get(k) for k in ("eps_per_token", "composed_eps", "notion") if k in acc}
    for k in ("eps_per_token_worst_case",):
        if k in acc:
            out["claim"]["stamp"][k] = acc[k]
    return out


__all__ = ["run_audit", "stamped_claim"]
