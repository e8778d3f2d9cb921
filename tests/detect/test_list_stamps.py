"""The user's deny- and allow-lists are secret: no stamp, run report or log carries anything derived from their
content (issue 37, item 1). The signature says only that a list was used."""

from __future__ import annotations

import hashlib
import json

from tests.helpers import ppt


def digests(items: list[str]) -> set[str]:
    """Hex digests (and their 8-digit prefixes) of a list written every plausible way."""
    out = set()
    for joined in ("\n".join(items), "\n".join(sorted(set(items))), "\n".join(items) + "\n"):
        for algo in ("sha256", "sha1", "md5", "blake2b"):
            h = hashlib.new(algo, joined.encode()).hexdigest()
            out |= {h, h[:8], h[:12], h[:16]}
    return out


def run(tmp_path, deny: list[str], allow: list[str] | None = None) -> tuple[str, str, str]:
    (tmp_path / "deny.txt").write_text("\n".join(deny) + "\n")
    args = ["sanitize", "-m", "placeholder", "--protect", "detected", "--deny", str(tmp_path / "deny.txt")]
    if allow is not None:
        (tmp_path / "allow.txt").write_text("\n".join(allow) + "\n")
        args += ["--allow", str(tmp_path / "allow.txt")]
    report = tmp_path / "rep.json"
    r = ppt(*args, "--report", str(report), stdin=json.dumps({"id": 1, "text": "Maria Lopez lives in Leeds."}) + "\n")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["ppt"]["sanitize"]["signature"], report.read_text(), r.stderr


def test_a_deny_list_leaves_no_digest_in_the_stamp_report_or_log(tmp_path):
    sig, report, err = run(tmp_path, ["Maria Lopez"])
    assert "protect:deny" in sig  # with a deny list ...
    for text in (sig, report, err):
        assert not any(d in text for d in digests(["Maria Lopez"]) | digests(["maria lopez"])), text
    other, other_report, _ = run(tmp_path, ["Anna Becker"])
    assert other == sig  # ... and nothing of which one
    assert json.loads(other_report).get("signature", None) == json.loads(report).get("signature", None)


def test_an_allow_list_leaves_no_digest_and_is_still_named(tmp_path):
    sig, report, err = run(tmp_path, ["Maria Lopez"], allow=["Leeds"])
    assert "-allow" in sig
    for text in (sig, report, err):
        assert not any(d in text for d in digests(["Leeds"]) | digests(["leeds"])), text
    assert run(tmp_path, ["Maria Lopez"], allow=["Paris"])[0] == sig
    assert run(tmp_path, ["Maria Lopez"])[0] != sig  # with an allow list tells from without
