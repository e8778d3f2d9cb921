"""The one-record CPU path of rantext, santext+ and custext+ never imports torch (issue 13: torch's import
is about a second of a ~1 s start-up). Timing is measured by bench/startup.py, never asserted here."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ppt.models.device import gpu_may_exist
from tests.helpers import needs

# runs the real CLI entry point in this interpreter and reports, after it exits, whether torch was imported
PROBE = r"""
import runpy, sys
sys.argv = ["ppt"] + sys.argv[1:]
try:
    runpy.run_module("ppt.cli.main", run_name="__main__")
except SystemExit as e:
    code = e.code
else:
    code = 0
sys.stderr.write("\nPROBE " + repr(sorted(m for m in ("torch", "transformers") if m in sys.modules)) + "\n")
sys.exit(code)
"""

CASES = [
    pytest.param("rantext", [], marks=needs("minilm"), id="rantext"),
    pytest.param("santext+", [], marks=needs("glove-6b-50d"), id="santext+"),
    pytest.param("custext+", [], marks=needs("glove-6b-50d"), id="custext+"),
    pytest.param("santext+", ["--seed", "3"], marks=needs("glove-6b-50d"), id="santext+-seeded"),
]


@pytest.mark.skipif(gpu_may_exist(), reason="a GPU driver is present: --device auto may rightly import torch")
@pytest.mark.parametrize(("mech", "extra"), CASES)
def test_one_record_sanitize_does_not_import_torch(mech, extra):
    rec = json.dumps({"id": 1, "text": "Alice met Bob in Paris on 12 May."}) + "\n"
    cmd = [sys.executable, "-c", PROBE, "sanitize", "--mech", mech, "--quiet", *extra]
    # the claim is about a warm cache: a first run builds what is missing (tables are built with torch)
    warm = subprocess.run(cmd, input=rec, capture_output=True, text=True, timeout=600)
    assert warm.returncode == 0, warm.stderr
    r = subprocess.run(cmd, input=rec, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    stamp = out["ppt"]["sanitize"]
    # the record went through the mechanism (an unseeded run may rightly draw a word back, e.g. 'Alice')
    privacy = stamp["privacy"]
    perturbed = privacy["proven"]["tokens"] + sum(c["tokens"] for c in privacy.get("conditional", []))
    assert stamp["signature"].startswith(mech + "|") and perturbed > 0
    assert "PROBE []" in r.stderr, r.stderr[-2000:]


@needs("glove-6b-50d")
@pytest.mark.slow(reason="a real ppt process that loads torch")
def test_the_probe_sees_torch_when_a_path_needs_it():
    """The check can fail: tem has no numpy sampler, so its one-record run imports torch and the probe
    reports it."""
    rec = json.dumps({"id": 1, "text": "Alice met Bob."}) + "\n"
    r = subprocess.run(
        [sys.executable, "-c", PROBE, "sanitize", "--mech", "tem", "--quiet"],
        input=rec,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    assert "PROBE ['torch']" in r.stderr, r.stderr[-2000:]
