"""`ppt mechs --describe` and the signature of mechanisms that take no eps (placeholder, surrogate), and of
`--protect detected` runs: no eps, and `undetected` among what the policy lets through (issue 37, item 3)."""

from __future__ import annotations

import json

import pytest

from tests.helpers import ppt


def sanitize(*args: str, full: bool = False) -> dict:
    rec = json.dumps({"id": 1, "text": "Maria Lopez lives here."}) + "\n"
    r = ppt(
        "sanitize",
        *args,
        "--protect",
        "detected",
        "--detect",
        "patterns",
        *(["--stamp", "full"] if full else []),
        stdin=rec,
    )
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["ppt"]["sanitize"]


@pytest.mark.parametrize("mech", ["placeholder", "surrogate"])
def test_eps_less_signature_and_describe(mech, tmp_path):
    deny = tmp_path / "deny.txt"
    deny.write_text("Maria Lopez\n")
    st = sanitize("-m", mech, "--deny", str(deny))
    sig = st["signature"]
    assert sig.startswith(f"{mech}|") and "eps:" not in sig, sig
    assert "eps" not in sanitize("-m", mech, "--deny", str(deny), full=True)
    r = ppt("mechs", "--describe", sig)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["mechanism"] == mech and "eps" not in d
    assert "undetected" in d["unprotected_by_policy"]
    # a signature written before this fix (with eps:1) reads the same way
    old = json.loads(ppt("mechs", "--describe", f"{mech}|eps:1|protect:deny|v:0.1.0").stdout)
    assert "eps" not in old and "undetected" in old["unprotected_by_policy"]


def test_describe_lists_undetected_for_any_protect_signature_only():
    sig = "tem|eps:2|space:glove-6b-50d:2000#7d412d77|pol:drop.drop.keep.perturb.sentence|protect:deny|v:0.1.0"
    d = json.loads(ppt("mechs", "--describe", sig).stdout)
    assert d["eps"] == 2.0 and "undetected" in d["unprotected_by_policy"]
    plain = json.loads(ppt("mechs", "--describe", sig.replace("|protect:deny", "")).stdout)
    assert "undetected" not in plain["unprotected_by_policy"]
