"""`ppt snd` as a user runs it, on a tiny random encoder: train -> embed (jsonl, npy, parquet) and a real
loopback `ppt snd serve` behind `ppt snd embed --server`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import numpy as np
import pytest

from tests.helpers import PPT, ppt
from tests.snd.conftest import CORPUS

TINY_ARCH = ["--width", "32", "--layers", "1", "--heads", "2", "--ff", "64"]


@pytest.fixture
def corpus(tmp_path):
    p = tmp_path / "public.jsonl"
    p.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(CORPUS)))
    return p


@pytest.mark.slow(reason="trains a denoiser, then embeds in every format")
def test_train_then_embed_in_every_format(tiny_encoder, corpus, tmp_path, tmp_cache):
    den = tmp_path / "den"
    r = ppt(
        "snd",
        "train-denoiser",
        "--model",
        str(tiny_encoder),
        "--corpus",
        str(corpus),
        "--eta",
        "40",
        "--epochs",
        "2",
        "--batch-size",
        "10",
        "--seed",
        "0",
        "-o",
        str(den),
        "--device",
        "cpu",
        *TINY_ARCH,
    )
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["epochs"] == 2 and summary["train_seconds"] >= 0 and (den / "MANIFEST.json").is_file()
    inp = corpus.read_text()
    r = ppt(
        "snd",
        "embed",
        "--model",
        str(tiny_encoder),
        "--eta",
        "40",
        "--denoiser",
        str(den),
        "--seed",
        "1",
        "--device",
        "cpu",
        stdin=inp,
    )
    assert r.returncode == 0, r.stderr
    recs = [json.loads(x) for x in r.stdout.splitlines()]
    assert len(recs) == len(CORPUS)
    stamp = recs[0]["ppt"]["snd"]
    assert stamp["privacy"]["eta"] == 40.0 and "d_chi" in stamp["privacy"]["notion"]
    assert "input-embedding space" in stamp["privacy"]["unit"] and stamp["privacy"]["clip_bound"] > 0
    assert stamp["denoiser"]["hash"] == summary["hash"] and stamp["model"]["hash"] == summary["model"]["hash"]
    assert len(recs[0]["snd_noisy"]) == 32 and len(recs[0]["snd_denoised"]) == 32
    # npy: the same vectors, in files; the records carry their row
    out = tmp_path / "idx.jsonl"
    r = ppt(
        "snd",
        "embed",
        "--model",
        str(tiny_encoder),
        "--eta",
        "40",
        "--denoiser",
        str(den),
        "--seed",
        "1",
        "--device",
        "cpu",
        "--format",
        "npy",
        "--vectors",
        str(tmp_path / "v" / "emb"),
        "-o",
        str(out),
        stdin=inp,
    )
    assert r.returncode == 0, r.stderr
    noisy = np.load(tmp_path / "v" / "emb.noisy.npy")
    assert noisy.shape == (len(CORPUS), 32) and noisy.dtype == np.float32
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [x["snd_row"] for x in rows] == list(range(len(CORPUS)))
    assert np.allclose(noisy[3], recs[3]["snd_noisy"], atol=1e-6)
    assert oct(out.stat().st_mode & 0o777) == "0o600"
    pq = pytest.importorskip("pyarrow.parquet")
    r = ppt(
        "snd",
        "embed",
        "--model",
        str(tiny_encoder),
        "--eta",
        "40",
        "--emit",
        "noisy",
        "--seed",
        "1",
        "--device",
        "cpu",
        "--format",
        "parquet",
        "--vectors",
        str(tmp_path / "p"),
        "-o",
        os.devnull,
        stdin=inp,
    )
    assert r.returncode == 0, r.stderr
    table = pq.read_table(tmp_path / "p.parquet")
    assert table.num_rows == len(CORPUS)
    assert np.allclose(table.column("noisy")[3].as_py(), recs[3]["snd_noisy"], atol=1e-6)


def test_embed_refusals(tiny_encoder):
    r = ppt(
        "snd",
        "embed",
        "--model",
        str(tiny_encoder),
        "--eta",
        "inf",
        "--server",
        "http://127.0.0.1:9",
        stdin='{"id": 1, "text": "a"}\n',
    )
    assert r.returncode == 2 and "clean token embeddings" in r.stderr
    r = ppt("snd", "embed", "--model", str(tiny_encoder), "--eta", "10", "--emit", "denoised", stdin='{"text": "a"}\n')
    assert r.returncode == 2 and "--denoiser" in r.stderr
    r = ppt("snd", "serve", "--model", str(tiny_encoder), "--host", "0.0.0.0", "--port", "0")
    assert r.returncode == 2 and "not a loopback address" in r.stderr


@pytest.mark.slow(reason="a real loopback server process")
def test_embed_through_a_real_loopback_server(tiny_encoder, tmp_path):
    token = "tok-snd-DO-NOT-PRINT"
    port_file = tmp_path / "port"
    proc = subprocess.Popen(
        [
            *PPT,
            "snd",
            "serve",
            "--model",
            str(tiny_encoder),
            "--port",
            "0",
            "--port-file",
            str(port_file),
            "--device",
            "cpu",
            "--api-key-env",
            "PPT_TEST_SND_KEY",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PPT_TEST_SND_KEY": token},
    )
    try:
        deadline = time.monotonic() + 90
        while not port_file.exists():
            assert proc.poll() is None, proc.communicate()[1]
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(0.1)
        url = f"http://127.0.0.1:{int(port_file.read_text())}"
        inp = "".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(CORPUS[:5]))
        args = ("snd", "embed", "--model", str(tiny_encoder), "--eta", "40", "--seed", "2", "--device", "cpu")
        r = ppt(*args, "--server", url, "--api-key-env", "PPT_TEST_SND_KEY", stdin=inp, env={"PPT_TEST_SND_KEY": token})
        assert r.returncode == 0, r.stderr
        local = ppt(*args, stdin=inp)
        a = [json.loads(x) for x in r.stdout.splitlines()]
        b = [json.loads(x) for x in local.stdout.splitlines()]
        assert np.allclose([x["snd_noisy"] for x in a], [x["snd_noisy"] for x in b], atol=1e-5)
        assert a[0]["ppt"]["snd"]["server"] == url
        r = ppt(*args, "--server", url, stdin=inp)  # no token: refused by the server
        assert r.returncode == 78 and "401" in r.stderr
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert token not in out + err


@pytest.mark.slow(reason="the SND inversion attack and the MI evaluation through the CLI on the tiny encoder")
def test_attack_snd_inversion_and_eval_mi(tiny_encoder, corpus):
    inp = corpus.read_text()
    r = ppt(
        "attack",
        "snd-inversion",
        "--model",
        str(tiny_encoder),
        "--eta",
        "1000000",
        "--seed",
        "0",
        "--summary-only",
        "--device",
        "cpu",
        stdin=inp,
    )
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)["summary"]
    assert s["top1"]["rate"] == 1.0 and s["tokens"] > len(CORPUS)  # almost no noise: every token read back
    r = ppt(
        "attack",
        "snd-inversion",
        "--model",
        str(tiny_encoder),
        "--eta",
        "1",
        "--seed",
        "0",
        "--ci",
        "clopper-pearson",
        "--summary",
        "none",
        "--device",
        "cpu",
        stdin=inp,
    )
    assert r.returncode == 0, r.stderr
    per = [json.loads(x)["attack"]["snd-inversion"] for x in r.stdout.splitlines()]
    assert len(per) == len(CORPUS) and sum(p["top1"] for p in per) / len(per) < 0.5
    r = ppt(
        "snd",
        "embed",
        "--model",
        str(tiny_encoder),
        "--eta",
        "50",
        "--emit",
        "clean,noisy",
        "--seed",
        "0",
        "--device",
        "cpu",
        stdin=inp,
    )
    assert r.returncode == 0, r.stderr
    m = ppt("eval", "mi", "--x-field", "snd_clean", "--y-field", "snd_noisy", stdin=r.stdout)
    assert m.returncode == 0, m.stderr
    out = json.loads(m.stdout)
    assert out["n"] == len(CORPUS) and out["dim_x"] == 32 and out["mi_nats"] >= 0
