"""Compact stamp signatures, in the manner of sacrebleu's: one short string per record instead of ~1 KB.

Why: every record used to repeat the mechanism's whole parameter block (calibration, noise formula,
policy): about 1.2 KB a record, 12 GB of repetition in a 10M-record job. A signature names what
determines the output distribution in a few dozen bytes::

    rantext|eps:6|space:cl100k-minilm:11000#59d7616b|z:calibrated|pol:drop.digits.keep.perturb.sentence|v:0.1.0

Fields are ``key:value`` separated by ``|`` after the mechanism name: ``eps`` (absent for a mechanism that
takes none: placeholder, surrogate, ProSan), ``space`` (id ``#`` the first
8 hex digits of its hash; absent for Cape, whose ``model`` is a key parameter written the same way,
``name#`` the first 8 hex digits of :func:`ppt.models.fingerprint.weights_fingerprint`), the mechanism's key
parameters (:meth:`ppt.mechanisms.base.Mechanism.signature_params`), ``pol`` (oov.numbers.punct.stopwords.case,
"digits" for random-digits) and ``v`` (ppt's version). ``|`` and ``%`` inside values are percent-encoded
(a key ends at its first ``:``). :func:`parse_signature` inverts it without loading anything (``ppt mechs --describe``),
and :func:`stamp_view` reads the facts downstream stages need from either a compact or a full
(``--stamp full``) ``ppt.sanitize`` block.

Standard library only.
"""

from __future__ import annotations

from typing import Any

POLICY_FIELDS = ("oov", "numbers", "punct", "stopwords", "case")
_SHORT = {"random-digits": "digits"}
_LONG = {v: k for k, v in _SHORT.items()}


def _enc(value: Any) -> str:
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, float):
        text = repr(value)
        text = text[:-2] if text.endswith(".0") else text
    else:
        text = str(value)
    return text.replace("%", "%25").replace("|", "%7C")


def _dec(text: str) -> Any:
    text = text.replace("%7C", "|").replace("%25", "%")
    if text in ("true", "false"):
        return text == "true"
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def policy_code(policy: Any) -> str:
    """``drop.digits.keep.perturb.sentence`` for a :class:`~ppt.mechanisms.policy.Policy`."""
    return ".".join(_SHORT.get(getattr(policy, f), getattr(policy, f)) for f in POLICY_FIELDS)


def make_signature(mech: Any, version: str | None = None) -> str:
    """The compact signature of a built mechanism (see the module docstring)."""
    if version is None:
        from ppt import __version__ as version
    parts = [mech.name]
    if getattr(mech, "takes_eps", True):  # placeholder, surrogate, ProSan: no eps, so none in the signature
        parts.append(f"eps:{_enc(float(mech.eps))}")
    space = getattr(mech, "space", None)
    if space is not None and getattr(space, "name", None):
        parts.append(f"space:{_enc(space.name)}#{str(space.hash)[:8]}")
    for key, value in mech.signature_params().items():
        parts.append(f"{key}:{_enc(value)}")
    policy = getattr(mech, "policy", None)
    if policy is not None:
        parts.append(f"pol:{policy_code(policy)}")
    detector = getattr(mech, "detector", None)
    if detector is not None:  # --protect detected: which detector (and lists) chose what was replaced
        parts.append(f"protect:{_enc(detector.signature)}")
    parts.append(f"v:{_enc(version)}")
    return "|".join(parts)


def parse_signature(sig: str) -> dict[str, Any]:
    """``{"mechanism", "eps", "space", "space_hash", "params", "policy", "version"}`` from a signature.

    Raises ValueError on anything that is not a signature."""
    if not isinstance(sig, str) or "|" not in sig:
        raise ValueError("not a ppt stamp signature (expected 'mech|eps:...|...|v:...')")
    name, *fields = sig.split("|")
    if not name or ":" in name:
        raise ValueError(f"not a ppt stamp signature: bad mechanism name {name!r}")
    out: dict[str, Any] = {
        "mechanism": name,
        "eps": None,
        "space": None,
        "space_hash": None,
        "params": {},
        "policy": None,
        "version": None,
    }
    for f in fields:
        key, sep, value = f.partition(":")
        if not sep or not key:
            raise ValueError(f"not a ppt stamp signature: field {f!r} is not key:value")
        if key == "eps":
            out["eps"] = float(_dec(value))
        elif key == "space":
            space, _, h = value.rpartition("#")
            out["space"], out["space_hash"] = (_dec(space) if space else _dec(h)), (h if space else None)
            out["space"] = str(out["space"])
        elif key == "model" and "#" in value:
            model, _, h = value.rpartition("#")
            out["params"]["model"], out["params"]["model_hash"] = str(_dec(model)), h
        elif key == "pol":
            codes = value.split(".")
            if len(codes) != len(POLICY_FIELDS):
                raise ValueError(f"not a ppt stamp signature: policy {value!r} needs {len(POLICY_FIELDS)} parts")
            out["policy"] = {k: _LONG.get(c, c) for k, c in zip(POLICY_FIELDS, codes)}
        elif key == "v":
            out["version"] = str(_dec(value))
        else:
            out["params"][key] = _dec(value)
    return out  # eps None: a mechanism that takes none


def stamp_view(block: Any) -> dict[str, Any]:
    """What downstream stages read from a ``ppt.sanitize`` block, compact or full (both carry ``signature``;
    the full one, and stamps written before signatures existed, also ``params``):
    ``{"mechanism", "space", "model", "stopwords", "policy"}`` (None where unknown)."""
    out: dict[str, Any] = {"mechanism": None, "space": None, "model": None, "stopwords": None, "policy": {}}
    if not isinstance(block, dict):
        return out
    sig = block.get("signature")
    if isinstance(sig, str):
        try:
            p = parse_signature(sig)
        except ValueError:
            p = None
        if p is not None:
            out["mechanism"], out["space"] = p["mechanism"], p["space"]
            out["model"] = p["params"].get("model")
            out["policy"] = dict(p["policy"] or {})
    params = block.get("params") if isinstance(block.get("params"), dict) else {}
    if out["mechanism"] is None and isinstance(block.get("mechanism"), str):
        out["mechanism"] = block["mechanism"]
    if out["space"] is None:
        for cand in (params.get("space"), block.get("space")):
            if isinstance(cand, str) and cand:
                out["space"] = cand
                break
            if isinstance(cand, dict) and isinstance(cand.get("id"), str):
                out["space"] = cand["id"]
                break
    if out["model"] is None and isinstance(params.get("model"), str):
        out["model"] = params["model"]
    if not out["policy"]:
        nested = params.get("policy") if isinstance(params.get("policy"), dict) else {}
        out["policy"] = {
            k: (nested.get(k) if k in nested else params.get(k)) for k in POLICY_FIELDS if k in nested or k in params
        }
    out["stopwords"] = out["policy"].get("stopwords")
    return out


__all__ = ["make_signature", "parse_signature", "policy_code", "stamp_view", "POLICY_FIELDS"]
