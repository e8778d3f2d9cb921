"""The optional vLLM runtime where vllm is absent (it never is a dependency): a clear CONFIG error before
any model loads, from the library and from `ppt extract` / `ppt serve`; plus the GPU batch defaults."""

from __future__ import annotations

import subprocess

import pytest

torch = pytest.importorskip("torch")

from ppt.io import ExitCode, PptError  # noqa: E402
from ppt.lm import vllm_engine  # noqa: E402
from ppt.lm.door import get_lm  # noqa: E402
from ppt.lm.generate import CPU_BATCH, GPU_BATCH, LocalGenerator, default_batch_size  # noqa: E402
from tests.helpers import PPT  # noqa: E402


@pytest.fixture
def no_vllm(monkeypatch):
    real = vllm_engine.importlib.util.find_spec
    monkeypatch.setattr(
        vllm_engine.importlib.util, "find_spec", lambda name, *a: None if name == "vllm" else real(name, *a)
    )


def test_absent_vllm_is_a_config_error(no_vllm, tiny_lm):
    assert vllm_engine.vllm_available() is False
    for call in (vllm_engine.require_vllm, lambda: get_lm(str(tiny_lm), runtime="vllm", device="cpu")):
        with pytest.raises(PptError) as e:
            call()
        assert e.value.exit_code == ExitCode.CONFIG
        assert "vllm package is not installed" in str(e.value) and "--runtime transformers" in e.value.hint
    with pytest.raises(PptError) as e:
        get_lm(str(tiny_lm), runtime="tensorrt")
    assert e.value.exit_code == ExitCode.USAGE
    assert isinstance(get_lm(str(tiny_lm), runtime="transformers", device="cpu"), LocalGenerator)


@pytest.mark.skipif(vllm_engine.vllm_available(), reason="vllm is installed here")
@pytest.mark.parametrize("cmd", [["extract"], ["serve", "--port", "0"]])
def test_cli_runtime_vllm_without_vllm(cmd, tiny_lm):
    r = subprocess.run(
        [*PPT, *cmd, "--model", str(tiny_lm), "--device", "cpu", "--runtime", "vllm"],
        check=False,
        input='{"id": 1, "raw": "secret words", "generation": "x"}\n',
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert r.returncode == ExitCode.CONFIG, r.stderr
    assert "vllm package is not installed" in r.stderr and "secret" not in r.stderr
    bad = subprocess.run(
        [*PPT, *cmd, "--model", str(tiny_lm), "--runtime", "nope"],
        check=False,
        input="",
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert bad.returncode == ExitCode.USAGE and "Invalid value for '--runtime'" in bad.stderr  # typer's Literal check


def test_batch_defaults_follow_the_device(tiny_lm):
    assert default_batch_size(torch.device("cpu")) == CPU_BATCH == 8
    assert default_batch_size(torch.device("cuda")) == GPU_BATCH == 256
    gen = LocalGenerator.load(str(tiny_lm), device="cpu", batch_size=None)
    assert gen.batch_size == CPU_BATCH and gen.compile is False
    assert gen.describe()["dtype"] == "float32"  # bf16 is the default on CUDA only


def test_serve_refuses_logprobs_for_a_generator_that_cannot_score():
    from ppt.lm.generate import Completion
    from ppt.remote.server import ModelService
    from ppt.remote.service import ServiceError

    class NoScore:
        name, can_score = "noscore", False

        def generate(self, prompts, params, generators):
            return [Completion("ok", 1, 1, "stop") for _ in prompts]

    service = ModelService(NoScore(), max_batch=2)
    try:
        assert "logprobs" not in service.features and "n" in service.features
        body = {"model": "m", "prompt": "The quick", "max_tokens": 2, "temperature": 0}
        assert service.complete(dict(body), "completions")["choices"][0]["text"] == "ok"
        with pytest.raises(ServiceError) as e:
            service.complete({**body, "logprobs": 2}, "completions")
        assert e.value.status == 400 and "logprobs" in e.value.message
    finally:
        service.close()
    assert "logprobs" in ModelService.features  # the class default is untouched
