"""`ppt eval pipeline`: InferDPT end to end on a tiny random LM and a tiny space — what is sent, what the
references are, resume after an interruption, the interval arithmetic, CLI checks."""

from __future__ import annotations

import hashlib
import importlib.util

import numpy as np
import pytest
import torch

from ppt.experiments import pipeline, sweep
from ppt.io import PptError
from ppt.spaces import space_from_arrays
from tests.helpers import ShiftMech, ppt

WORDS = ["the", "cat", "sat", "on", "mat", "dog", "ran", "far", "red", "big", "a", "blue"]
DOCS = [
    {"id": f"d{i}", "text": t}
    for i, t in enumerate(
        ["the cat sat on the mat", "a dog ran far", "big red dog", "the blue cat ran", "a mat on the dog"]
    )
]


class HashEncoder:
    """Bag of hashed words: identical texts have cosine 1, disjoint ones 0."""

    def encode(self, texts, batch_size=64):
        out = torch.zeros(len(texts), 32)
        for i, t in enumerate(texts):
            for w in t.lower().split():
                out[i, int(hashlib.sha1(w.encode()).hexdigest(), 16) % 32] += 1.0
        return out


def _ctx(tiny_lm, monkeypatch, shift=3, **kw):
    cfg = pipeline.PipelineConfig(
        mechanisms=["shift"],
        eps=[1.0],
        first=[],
        extra=[],
        remote_model=str(tiny_lm),
        extract_model=str(tiny_lm),
        max_new_tokens=4,
        chunk=2,
        batch_size=2,
        device="cpu",
        **kw,
    )
    ctx = pipeline.Context(cfg)
    ctx.sweep._encoder = HashEncoder()
    space = space_from_arrays("pipe-test", WORDS, np.random.default_rng(0).normal(size=(len(WORDS), 6)))
    monkeypatch.setattr(ctx, "mechanism", lambda name, eps: (ShiftMech(space, shift), space))
    monkeypatch.setattr(sweep, "available_mechanisms", lambda names: (list(names), []))
    sent: list[tuple[str, str]] = []
    extracted_from: list[str] = []
    remote, extract = ctx.remote, ctx.extract

    def spy_remote(ids, texts, stream):
        sent.extend((stream, t) for t in texts)
        return remote(ids, texts, stream)

    def spy_extract(ids, raws, gens):
        extracted_from.extend(raws)
        return extract(ids, raws, gens)

    monkeypatch.setattr(ctx, "remote", spy_remote)
    monkeypatch.setattr(ctx, "extract", spy_extract)
    return ctx, sent, extracted_from


def _rows(rows):
    return {(r["mechanism"], r["output"]): r for r in rows}


@pytest.mark.parametrize("shift, privacy", [(0, 0.0), (3, 1.0)])
@pytest.mark.slow(reason="the experiment pipeline end to end, generations included")
def test_end_to_end_references_and_cells(tiny_lm, tmp_path, monkeypatch, shift, privacy):
    ctx, sent, extracted_from = _ctx(tiny_lm, monkeypatch, shift=shift)
    rows = pipeline.run_pipeline(ctx.cfg, tmp_path / "out", resume=False, ctx=ctx, docs=DOCS, quiet=True)
    by = _rows(rows)
    assert list(by) == [
        ("reference", "no_privacy"),
        ("extract-only", "extracted_without_generation"),
        ("reference", "no_privacy_resample"),
        ("shift", "perturbed_generation"),
        ("shift", "extracted"),
    ]
    raw = {d["text"] for d in DOCS}
    # references: the raw prefix, twice (two streams); the mechanism cell sends only the sanitized text
    ref_sent = [t for s, t in sent if s in ("np", "np2")]
    assert sorted(ref_sent) == sorted([d["text"] for d in DOCS] * 2)
    cell_sent = [t for s, t in sent if s not in ("np", "np2")]
    assert len(cell_sent) == len(DOCS)
    if shift:
        assert not raw & set(cell_sent)  # every word shifted: no raw prefix reaches the remote
    else:
        assert {t.lower() for t in cell_sent} == raw
    # extraction (local) reads the raw prefix: once for the extract-only control, once for the cell
    assert sorted(extracted_from) == sorted(list(raw) * 2)
    gen, ext = by[("shift", "perturbed_generation")], by[("shift", "extracted")]
    assert gen["knn_top1_privacy"] == pytest.approx(privacy) and ext["knn_top1_privacy"] == gen["knn_top1_privacy"]
    assert gen["n_docs"] == ext["n_docs"] == len(DOCS)
    for r in (gen, ext):
        for k in ("cosine_np", "rouge_l_np", "coherence", "diversity"):
            assert r[f"{k}_lo"] <= r[k] <= r[f"{k}_hi"]
    assert 0.0 <= gen["copy_prefix"] <= 1.0
    assert ext["cosine_np_gain"] == pytest.approx(ext["cosine_np"] - gen["cosine_np"])
    assert ext["rouge_l_np_gain"] == pytest.approx(ext["rouge_l_np"] - gen["rouge_l_np"])
    # the control: nothing sent (the remote saw only the references and the cell), paired gains against it
    ctl = by[("extract-only", "extracted_without_generation")]
    assert ctl["n_docs"] == len(DOCS) and ctl.get("knn_top1_privacy") is None
    assert ext["cosine_np_gain_vs_control"] == pytest.approx(ext["cosine_np"] - ctl["cosine_np"])
    assert ext["rouge_l_np_gain_vs_control"] == pytest.approx(ext["rouge_l_np"] - ctl["rouge_l_np"])
    assert "cosine_np_gain_vs_control" not in gen
    assert (
        "cosine_np" not in by[("reference", "no_privacy")] or by[("reference", "no_privacy")].get("cosine_np") is None
    )
    assert by[("reference", "no_privacy")]["remote_model"] == str(tiny_lm)
    out = tmp_path / "out"
    assert {"results.csv", "results.md", "config.json"} <= {p.name for p in out.iterdir()}
    md = (out / "results.md").read_text()
    assert str(tiny_lm) in md and "extraction" in md
    # the journal is the source of the rows: the reference matches a direct generation of the raw prompt
    from ppt.remote.journal import Journal

    j = Journal(str(out / "journal" / "reference.jsonl"), "id", "no_privacy")
    first = ctx.cfg.remote_model and DOCS[0]
    direct = pipeline.Context.remote(ctx, [first["id"]], [first["text"]], "np")[0]
    assert j.get(first["id"])["no_privacy"] == direct
    j.close()


@pytest.mark.slow(reason="the experiment pipeline end to end, generations included")
def test_no_privacy_resample_scores_against_the_first_sample(tiny_lm, tmp_path, monkeypatch):
    ctx, _, _ = _ctx(tiny_lm, monkeypatch)
    ctx.cfg.eps = []
    rows = pipeline.run_pipeline(ctx.cfg, tmp_path, ctx=ctx, docs=DOCS, quiet=True)
    res = _rows(rows)[("reference", "no_privacy_resample")]
    # tiny_lm's two samples differ on some document, so the ceiling is below 1 (a trivial self-comparison would give 1)
    assert res["rouge_l_np"] < 1.0
    monkeypatch.setattr(pipeline.Context, "remote", lambda self, ids, texts, stream: [f"same {t}" for t in texts])
    ctx2, _, _ = _ctx(tiny_lm, monkeypatch)
    ctx2.cfg.eps = []
    rows = pipeline.run_pipeline(ctx2.cfg, tmp_path / "b", ctx=ctx2, docs=DOCS, quiet=True)
    res = _rows(rows)[("reference", "no_privacy_resample")]
    assert res["rouge_l_np"] == pytest.approx(1.0) and res["cosine_np"] == pytest.approx(1.0)
    # "same " + prefix: every word but one copies the prefix in order
    n = [len(d["text"].split()) for d in DOCS]
    assert res["copy_prefix"] == pytest.approx(np.mean([k / (k + 1) for k in n]))


@pytest.mark.slow(reason="the experiment pipeline twice (whole, interrupted and resumed)")
def test_resume_after_interruption_skips_finished_documents(tiny_lm, tmp_path, monkeypatch):
    full_ctx, _, _ = _ctx(tiny_lm, monkeypatch)
    full = pipeline.run_pipeline(full_ctx.cfg, tmp_path / "full", ctx=full_ctx, docs=DOCS, quiet=True)

    ctx, sent, _ = _ctx(tiny_lm, monkeypatch)
    calls = {"n": 0}
    inner = ctx.remote

    def dying(ids, texts, stream):
        if stream not in ("np", "np2"):
            calls["n"] += 1
            if calls["n"] == 2:  # the mechanism cell's second chunk: the process dies
                raise KeyboardInterrupt
        return inner(ids, texts, stream)

    monkeypatch.setattr(ctx, "remote", dying)
    out = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        pipeline.run_pipeline(ctx.cfg, out, ctx=ctx, docs=DOCS, quiet=True)
    with pytest.raises(PptError, match="already holds results"):  # never silently overwrite or mix runs
        pipeline.run_pipeline(ctx.cfg, out, ctx=ctx, docs=DOCS, quiet=True)

    ctx2, sent2, _ = _ctx(tiny_lm, monkeypatch)
    rows = pipeline.run_pipeline(ctx2.cfg, out, resume=True, ctx=ctx2, docs=DOCS, quiet=True)
    assert not [s for s, _ in sent2 if s in ("np", "np2")]  # references were complete: nothing re-sent
    assert len(sent2) == len(DOCS) - ctx.cfg.chunk  # only the documents after the first chunk
    drop = ("seconds",)
    assert [{k: v for k, v in r.items() if k not in drop} for r in rows] == [
        {k: v for k, v in r.items() if k not in drop} for r in full
    ]
    # --report-only rebuilds the same rows from the journals and generates nothing
    ctx3, sent3, _ = _ctx(tiny_lm, monkeypatch)
    again = pipeline.run_pipeline(ctx3.cfg, out, ctx=ctx3, docs=DOCS, quiet=True, report_only=True)
    assert not sent3 and [{k: v for k, v in r.items() if k not in drop} for r in again] == [
        {k: v for k, v in r.items() if k not in drop} for r in full
    ]


def test_mean_ci_and_cell_plan():
    m, lo, hi = pipeline.mean_ci([1.0, 2.0, 3.0])
    # t(0.975, 2) = 4.303; sd = 1; half = 4.303 / sqrt(3)
    assert m == 2.0 and hi - m == pytest.approx(4.3027 / np.sqrt(3), rel=1e-3) and m - lo == pytest.approx(hi - m)
    assert pipeline.mean_ci([]) == (None, None, None)
    cfg = pipeline.PipelineConfig(
        mechanisms=["rantext", "cape"], eps=[1.0, 6.0], first=["rantext:6"], extra=["tem:6", "prosan"]
    )
    assert pipeline.cell_plan(cfg) == [
        ("reference", None),
        ("extract-only", None),
        ("rantext", 6.0),
        ("reference-resample", None),
        ("rantext", 1.0),
        ("cape", 1.0),
        ("cape", 6.0),
        ("tem", 6.0),
        ("prosan", None),
    ]
    with pytest.raises(ValueError):
        pipeline.parse_cell("rantext:-1")


def test_cli_pipeline_rejects_bad_options(tmp_path):
    r = ppt("eval", "pipeline", "-m", "nope", "--out-dir", str(tmp_path / "o"))
    assert r.returncode == 2 and "unknown mechanism" in r.stderr and not (tmp_path / "o").exists()
    r = ppt("eval", "pipeline", "--extra", "tem:abc", "--out-dir", str(tmp_path / "o"))
    assert r.returncode == 2 and not (tmp_path / "o").exists()


@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None, reason="matplotlib not installed")
def test_plot_from_csv_rows(tmp_path):
    from ppt.experiments.plot import read_csv, write_csv

    rows = [
        {
            "mechanism": "reference",
            "eps": "",
            "output": "no_privacy_resample",
            "n_docs": 3,
            "cosine_np": 0.6,
            "rouge_l_np": 0.3,
            "remote_model": "m",
            "extract_model": "x",
            "remote": "local",
        }
    ]
    for out, c in (("perturbed_generation", 0.1), ("extracted", 0.4)):
        for e, p in ((1.0, 0.99), (6.0, 0.9)):
            rows.append(
                {
                    "mechanism": "rantext",
                    "eps": e,
                    "output": out,
                    "n_docs": 3,
                    "cosine_np": c * e,
                    "rouge_l_np": c,
                    "knn_top10_privacy": p,
                    "remote_model": "m",
                    "extract_model": "x",
                    "remote": "local",
                }
            )
    write_csv(rows, tmp_path / "r.csv")
    pipeline.write_outputs(read_csv(tmp_path / "r.csv"), tmp_path)
    assert (tmp_path / "pipeline.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "| RANTEXT | 6 | extracted |" in (tmp_path / "results.md").read_text()
