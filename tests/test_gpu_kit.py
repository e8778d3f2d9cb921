"""The GPU kit (scripts/gpu_kit.sh, issue 28): packed from this environment, `run --device cpu --quick`
measures every figure and writes them to results.json, so the kit cannot rot between GPU loans."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
KIT = ROOT / "scripts" / "gpu_kit.sh"
FIGURES = {
    "pytest_gpu",
    "rantext_table_build_s",
    "rantext_e2e_w1",
    "rantext_mechanism",
    "rantext_e2e_w2",
    "rantext_scale_w2",
    "santext_plus_tokens_per_s",
    "custext_plus_tokens_per_s",
    "tem_tokens_per_s",
    "cape_fp32",
    "cape_fp32_outside_forward",
    "extract",
    "extract_compile",
    "serve",
    "serve_requests",
    "serve_compile",
    "serve_compile_requests",
    "serve_vllm",
}


def test_help_names_both_commands_and_the_offline_pack():
    r = subprocess.run(["bash", str(KIT), "--help"], capture_output=True, text=True, check=True)
    for word in ("pack", "run", "--from-env", "--quick", "60 MiB"):
        assert word in r.stdout


@pytest.mark.slow(reason="packs a kit from this environment and runs it in a real process")
def test_quick_cpu_run_of_a_kit_packed_from_this_environment(tmp_path):
    from ppt.models import is_installed

    missing = [a for a in ("minilm", "glove-6b-50d", "smollm2", "cl100k_base") if not is_installed(a)]
    if missing:
        pytest.skip(f"the kit is packed from the offline models: ppt models install {' '.join(missing)}")
    env = {**os.environ, "PYTHON": sys.executable}
    kit, out = tmp_path / "kit", tmp_path / "out"
    r = subprocess.run(
        ["bash", str(KIT), "pack", "--from-env", "--quick", "--out", str(kit)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    manifest = json.loads((kit / "MANIFEST.json").read_text())
    assert manifest["total_bytes"] <= 60 << 20 and manifest["from_env"] and not manifest["wheels"]
    packed = {f["path"] for f in manifest["files"]}
    assert {"lm/smollm2/config.json", "lm/smollm2/tokenizer.json"} <= packed
    assert not any(p.endswith((".safetensors", ".gguf", ".bin")) for p in packed)  # never weights

    r = subprocess.run(
        ["bash", str(KIT), "run", "--device", "cpu", "--quick", "--kit", str(kit), "--out", str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout + r.stderr[-3000:] + (out / "run.log").read_text()[-4000:]
    result = json.loads((out / "results.json").read_text())
    figures = {f["id"]: f for f in result["figures"]}
    assert set(figures) >= FIGURES
    assert all(figures[k]["value"] is not None for k in FIGURES), figures
    # pytest -m gpu ran: tests/gpu's CUDA variants and the CUDA-only tests were collected and skipped, saying why
    counts = figures["pytest_gpu"]["counts"]
    assert counts["skipped"] >= 20 and counts["passed"] == counts["failed"] == counts["errors"] == 0, counts
    assert any("no CUDA device" in r for r in figures["pytest_gpu"]["skip_reasons"])
    assert result["steps"]["pytest_gpu"]["command"].endswith("-m gpu tests/gpu")
    # serve: tokens/s and requests/s measured, beside extraction's goal; vLLM skipped with its reason here
    assert (
        figures["serve"]["value"] > 0 and figures["serve_requests"]["value"] > 0 and figures["serve"]["goal"] == 20000
    )
    import importlib.util

    if importlib.util.find_spec("vllm") is None:
        assert figures["serve_vllm"]["value"] == "skipped: vllm is not importable"
    assert figures["rantext_e2e_w1"]["goal"] == 1e6 and figures["extract"]["goal"] == 20000
    assert {s["status"] for s in result["steps"].values()} <= {"ok", "skipped"}
    assert result["device"]["device"] == "cpu" and result["device"]["name"]
    assert "RANTEXT end to end, 1 worker" in r.stdout  # the table
