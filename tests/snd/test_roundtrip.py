"""The library end to end on tiny random models: split, privatize, pool, train, store, load, denoise."""

from __future__ import annotations

import math

import pytest
import torch

from ppt.cache import Cache, verify
from ppt.rng import record_generator
from ppt.snd import store
from ppt.snd.pipeline import snd_embed
from ppt.snd.split import SplitModel
from ppt.snd.train import TrainConfig, train_denoiser
from tests.snd.conftest import CORPUS

ARCH = {"width": 32, "layers": 1, "heads": 2, "ff": 64}


@pytest.mark.parametrize("which,pooling", [("tiny_encoder", "mean-normalized"), ("tiny_causal", "mean")])
def test_split_matches_the_whole_model(request, which, pooling):
    split = SplitModel.load(str(request.getfixturevalue(which)), device="cpu")
    assert split.pooling == pooling
    texts = CORPUS[:4]
    out = split.server_pool(split.client_rows(texts).rows)
    # the split at eta = inf is the model itself: same pooled output as a plain forward pass, batch-independent
    one = split.server_pool(split.client_rows(texts[1:2]).rows)
    assert torch.allclose(out[1:2], one, atol=1e-5)
    enc = split.tokenizer(texts, padding=True, return_tensors="pt")
    hidden = split.body(**enc).last_hidden_state
    m = enc["attention_mask"].unsqueeze(-1).float()
    ref = (hidden * m).sum(1) / m.sum(1)
    if pooling == "mean-normalized":
        ref = torch.nn.functional.normalize(ref, dim=1)
        assert torch.allclose(out, ref, atol=1e-5)
    else:  # a causal model: the tokenizer pads on the left; compare record 0 alone (no padding)
        e0 = split.tokenizer(texts[:1], return_tensors="pt")
        h0 = split.body(**e0).last_hidden_state.mean(1)
        assert torch.allclose(out[:1], h0, atol=1e-4)
    b = split.bound
    assert math.isclose(b, float(split.table.norm(dim=1).max()), rel_tol=1e-6)


@pytest.mark.slow(reason="trains a denoiser on the tiny encoder, stores, loads and denoises")
def test_train_store_load_denoise(tiny_encoder, tmp_cache, tmp_path):
    split = SplitModel.load(str(tiny_encoder), device="cpu")
    eta = split.dim / (2 * split.bound)  # mean noise radius 2C: something to denoise
    cfg = TrainConfig(eta=eta, epochs=8, batch_size=10, lr=1e-3, seed=0, arch=ARCH, checkpoint_every=2)
    res = train_denoiser(split, CORPUS, cfg, checkpoint_dir=tmp_path / "ck")
    assert len(res.history) == 8 and (tmp_path / "ck" / "checkpoint.pt").is_file()
    assert res.history[-1]["mse"] < res.history[-1]["mse_no_denoise"]
    deps = store.artifact_deps(split.hash, split.name, eta, res.config, cfg.recipe("c", len(CORPUS)))
    meta = {"config": res.config.to_dict(), "eta": eta, "model": split.describe()}
    art = store.save_cached(res.model, deps, meta)
    assert any(e.kind == store.KIND for e in Cache().scan())
    verify(art.path)  # what `ppt cache verify` runs
    path = store.resolve_ref("auto", split.hash, eta)
    assert path == art.path
    den, meta2, h = store.load(path)
    assert meta2["eta"] == eta and h == art.content_hash
    # held-out draws: the denoiser beats no denoising
    gens = [record_generator(123, i) for i in range(len(CORPUS))]
    b = snd_embed(split, CORPUS, eta, gens, denoiser=den)
    clean = split.server_pool(b.clean_rows)
    assert ((b.denoised - clean) ** 2).mean() < ((b.noisy - clean) ** 2).mean()
    # -o DIR: the same files plus a manifest; a damaged file is refused
    d = store.save_dir(tmp_path / "den", res.model, deps, meta)
    store.load(d)
    (d / store.WEIGHTS).write_bytes(b"x" + (d / store.WEIGHTS).read_bytes()[1:])
    with pytest.raises(Exception, match="sha256|denoiser"):
        store.load(d)


@pytest.mark.slow(reason="trains a denoiser twice (whole, and stopped then resumed)")
def test_resume_continues_where_it_stopped(tiny_encoder, tmp_path):
    split = SplitModel.load(str(tiny_encoder), device="cpu")
    full = train_denoiser(split, CORPUS, TrainConfig(eta=20.0, epochs=3, batch_size=10, seed=1, arch=ARCH))
    train_denoiser(
        split, CORPUS, TrainConfig(eta=20.0, epochs=2, batch_size=10, seed=1, arch=ARCH), checkpoint_dir=tmp_path
    )
    res = train_denoiser(
        split,
        CORPUS,
        TrainConfig(eta=20.0, epochs=3, batch_size=10, seed=1, arch=ARCH),
        checkpoint_dir=tmp_path,
        resume=True,
    )
    assert res.resumed_from == {"epoch": 2, "step": 0}
    assert [h["epoch"] for h in res.history] == [1, 2, 3]
    for a, b in zip(full.model.state_dict().values(), res.model.state_dict().values(), strict=True):
        assert torch.allclose(a, b, atol=1e-5)


def test_resume_refuses_a_checkpoint_for_another_eta(tiny_encoder, tmp_path):
    from ppt.io import PptError

    split = SplitModel.load(str(tiny_encoder), device="cpu")
    train_denoiser(
        split, CORPUS[:10], TrainConfig(eta=20.0, epochs=1, batch_size=10, seed=1, arch=ARCH), checkpoint_dir=tmp_path
    )
    with pytest.raises(PptError, match="another model, eta"):
        train_denoiser(
            split,
            CORPUS[:10],
            TrainConfig(eta=40.0, epochs=1, batch_size=10, seed=1, arch=ARCH),
            checkpoint_dir=tmp_path,
            resume=True,
        )


def test_resume_refuses_a_corrupt_checkpoint_with_an_exit_code(tiny_encoder, tmp_path):
    """P-m8 (issue 29): a corrupt checkpoint.pt under --resume raised torch's RuntimeError (a traceback)."""
    from ppt.io import ExitCode, PptError
    from ppt.snd.train import CKPT

    split = SplitModel.load(str(tiny_encoder), device="cpu")
    (tmp_path / CKPT).write_bytes(b"not a checkpoint")
    with pytest.raises(PptError, match="not a readable checkpoint") as e:
        cfg = TrainConfig(eta=20.0, epochs=1, batch_size=10, seed=1, arch=ARCH)
        train_denoiser(split, CORPUS[:10], cfg, checkpoint_dir=tmp_path, resume=True)
    assert e.value.exit_code == ExitCode.DATAERR


def test_prosan_distill_refuses_a_file_as_output_before_training(tmp_path):
    """P-m8: `ppt prosan distill -o FILE` trained, then failed with FileExistsError."""
    from tests.helpers import ppt

    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text('{"original": "Maria went home", "text": "Anna went home"}\n')
    target = tmp_path / "file"
    target.write_text("x")
    r = ppt("prosan", "distill", "--pairs", str(pairs), "-o", str(target), "--any-teacher")
    assert r.returncode == 2 and "is a file" in r.stderr and "Traceback" not in r.stderr


def test_stamp_claims():
    from ppt.snd.privacy import snd_privacy

    p = snd_privacy(100.0, 1.5, 384, {"id": "m"})
    assert p["protected"] and p["eps_per_token_at_most"] == 300.0 and "d=384" in p["unit"]
    assert "the number of tokens" in p["not_hidden"]
    q = snd_privacy(math.inf, 1.5, 384, {"id": "m"})
    assert q["protected"] is False and "clip_bound" not in q
