"""The contract every registered mechanism keeps, checked on each one with a tiny space or model.

Seeded output (text, accounting, pairs) does not depend on batch size or order; a failing kernel
raises instead of returning text; unknown parameters and bad eps are rejected before anything is
loaded; the stamp names the mechanism, its notion and its parameters; ``Sanitized.pairs`` point at
the replacement tokens in the output; ``prepare()`` is idempotent and changes no output. The
distributional tests stay with each mechanism (tests/mechanisms/test_<mechanism>.py).
"""

from __future__ import annotations

import inspect
import json
import math
from pathlib import Path

import numpy as np
import pytest
import tomllib

from ppt.cache import Cache
from ppt.mechanisms import MECHANISMS, TokenMechanism, get_mechanism, mechanism_class, registry
from ppt.mechanisms.policy import PERTURB
from ppt.rng import record_generator
from ppt.spaces import space_from_arrays
from ppt.testing.mechanisms import TinyInputs, build_tiny

WORDS = (
    "the and of to in is apple banana cherry grape lemon mango melon olive peach pear plum berry kiwi lime date "
    "fig guava papaya quince raisin orange apricot almond walnut pecan cashew carrot celery onion garlic ginger "
    "pepper potato tomato"
).split()
TEXTS = [
    "The apple and the banana went to Paris in 2019.",
    "mango, melon; olive!  peach pear",
    "",
    "Zork 42 quince raisin -- orange apricot?",
    "   almond walnut   ",
    "the and of to in is",
    "fig guava papaya 3.5% cherry lime date kiwi berry plum",
]
NAMES = list(MECHANISMS)


@pytest.fixture(scope="module")
def space(tmp_path_factory):
    emb = np.random.default_rng(3).normal(size=(len(WORDS), 8)).astype(np.float32)
    return space_from_arrays("contract", list(WORDS), emb, cache=Cache(tmp_path_factory.mktemp("contract") / "cache"))


@pytest.fixture(scope="module")
def tiny_mlm(tmp_path_factory):
    from ppt.testing.prosan import make_tiny_masked_lm

    return make_tiny_masked_lm(tmp_path_factory.getbasetemp() / "tiny-mlm")


@pytest.fixture(scope="module")
def make(space, tiny_lm, tiny_mlm):
    """Any registered mechanism from tiny inputs, by its class's test factory (ppt.testing.mechanisms)."""
    inputs = TinyInputs(space, str(tiny_lm), str(tiny_mlm))
    return lambda name, eps=3.0, **params: build_tiny(name, inputs, eps, **params)


@pytest.fixture(scope="module")
def mechs(make):
    return {name: make(name) for name in NAMES}


def run(mech, order: list[int], batch: int, seed: int = 11) -> dict[int, tuple]:
    out = {}
    for s in range(0, len(order), batch):
        part = order[s : s + batch]
        res = mech.sanitize_batch([TEXTS[i] for i in part], [record_generator(seed, i) for i in part])
        for i, r in zip(part, res):
            out[i] = (
                r.text,
                json.dumps(r.accounting.to_dict(), sort_keys=True),
                None if r.pairs is None else r.pairs.tolist(),
            )
    return out


@pytest.mark.parametrize("name", NAMES)
def test_seeded_output_independent_of_batch_size_and_order(mechs, name):
    mech = mechs[name]
    ids = list(range(len(TEXTS)))
    together = run(mech, ids, len(ids))
    assert run(mech, ids, 1) == together
    assert run(mech, ids[::-1], 3) == together
    assert any(t != TEXTS[i] for i, (t, _, _) in together.items() if TEXTS[i].strip())


@pytest.mark.parametrize("name", NAMES)
def test_failing_kernel_raises_never_returns_text(mechs, name, monkeypatch):
    mech = mechs[name]
    kernel = "perturb_rows" if isinstance(mech, TokenMechanism) else "perturb"

    def boom(*args, **kwargs):
        raise RuntimeError("kernel failed")

    monkeypatch.setattr(mech, kernel, boom)
    if getattr(mech, kernel + "_np", None) is not None:  # the numpy backend's kernel (CPU)
        monkeypatch.setattr(mech, kernel + "_np", boom)
    with pytest.raises(RuntimeError, match="kernel failed"):
        mech.sanitize_batch(TEXTS[:2], [record_generator(1, i) for i in range(2)])


@pytest.mark.parametrize("name", NAMES)
def test_unknown_parameters_and_bad_eps_rejected_before_loading(name, monkeypatch):
    def no_loading(*args, **kwargs):
        raise AssertionError("loaded a space or model before validating parameters")

    monkeypatch.setattr(TokenMechanism, "load_default_space", no_loading)
    cls = mechanism_class(name)
    # a mechanism that loads a model gets a path that cannot load: validation must come first
    model = {"model": "/nonexistent/model"} if cls.takes_eps and "model" in inspect.signature(cls).parameters else {}
    with pytest.raises((TypeError, ValueError)):
        get_mechanism(name, 3.0, no_such_parameter=1, **model)
    for eps in (0, -1.0, math.nan, math.inf, "lots"):
        with pytest.raises(ValueError, match="eps"):
            get_mechanism(name, eps, **model)


@pytest.mark.parametrize("name", NAMES)
def test_stamp_params_and_accounting_present(mechs, name):
    mech = mechs[name]
    st = mech.stamp()
    assert st["mechanism"] == name and st["notion"] == mech.notion and st["notion"]
    assert st["params"] and json.dumps(st["params"])  # JSON-serializable, for the record stamp
    desc = type(mech).describe(name)
    assert (
        desc["name"] == name
        and desc["notion"] == mech.notion
        and desc["default_eps"] == (type(mech).default_eps if type(mech).takes_eps else None)
    )
    [res] = mech.sanitize_batch([TEXTS[0]], [record_generator(5, 0)])
    acc = res.accounting.to_dict()
    for key in ("n_tokens", "n_perturbed", "kept", "dropped"):
        assert key in acc
    # counts only: every privacy figure comes from the events (one channel, rendered into the stamp)
    assert not {"notion", "eps_per_token", "composed_eps", "delta"} & set(acc)
    assert acc["n_perturbed"] > 0


def _tokens_and_text(mech):
    """The mechanism's tokenizer and the output text of a new row/id."""
    if isinstance(mech, TokenMechanism):
        vocab = mech.space.vocab
        return mech.space.tokenize, lambda r: vocab[r]
    text_of = dict(zip(mech.candidates.tolist(), mech.cand_text))
    return mech.tokenizer.tokenize, text_of.__getitem__


@pytest.mark.parametrize("name", NAMES)
def test_pairs_agree_with_text_spans(mechs, name):
    mech = mechs[name]
    if getattr(mech, "reports_pairs", True) is False:  # a whole-text rewrite (prosan-lite): no token pairs, says so
        res = mech.sanitize_batch(TEXTS, [record_generator(3, i) for i in range(len(TEXTS))])
        assert all(r.pairs is None for r in res)
        return
    tokenize, word = _tokens_and_text(mech)
    res = mech.sanitize_batch(TEXTS, [record_generator(3, i) for i in range(len(TEXTS))])
    for original, r in zip(TEXTS, res):
        pairs = r.pairs
        assert pairs.dtype == np.int64 and pairs.shape == (r.accounting.n_perturbed, 4)
        toks = tokenize(original)
        actions = mech.plan(toks)[0]
        perturbed = np.flatnonzero(actions == PERTURB)
        rows = toks.rows if isinstance(mech, TokenMechanism) else toks.ids
        assert pairs[:, 0].tolist() == np.asarray(rows)[perturbed].tolist()
        starts, ends = pairs[:, 2], pairs[:, 3]
        assert (starts <= ends).all() and (ends[:-1] <= starts[1:]).all() and (ends <= len(r.text)).all()
        for new, s, e in pairs[:, 1:].tolist():
            assert r.text[s:e].casefold() == word(new).casefold()


@pytest.mark.parametrize("name", NAMES)
def test_prepare_is_idempotent_and_changes_no_output(make, name):
    cold = make(name)
    mech = make(name)
    assert mech.prepare() is mech
    assert mech.prepare() is mech
    ids = list(range(len(TEXTS)))
    assert run(mech, ids, 4) == run(cold, ids, 4)


def test_builtins_listed_once_in_the_registry_not_in_the_metadata():
    """One list of built-ins (registry.MECHANISMS); pyproject declares the entry-point group for plug-ins only."""
    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    declared = pyproject["project"].get("entry-points", {}).get(registry.ENTRY_POINT_GROUP, {})
    assert not set(declared) & set(MECHANISMS)


def test_plugins_found_through_entry_points(monkeypatch):
    from importlib.metadata import EntryPoint

    found = [
        EntryPoint("echo", "tests.mechanisms.test_contract:EchoMechanism", registry.ENTRY_POINT_GROUP),
        EntryPoint("rantext", "elsewhere:Stale", registry.ENTRY_POINT_GROUP),  # a built-in name: the table wins
    ]
    monkeypatch.setattr(
        registry.metadata, "entry_points", lambda group: found if group == registry.ENTRY_POINT_GROUP else []
    )
    registry.plugins.cache_clear()
    try:
        assert registry.plugins() == {"echo": ("tests.mechanisms.test_contract", "EchoMechanism")}
        assert list(registry.registered())[: len(MECHANISMS)] == list(MECHANISMS)
        assert mechanism_class("rantext").__name__ == "Rantext"
    finally:
        registry.plugins.cache_clear()


def test_stale_or_missing_metadata_keeps_the_builtins(monkeypatch):
    def broken(group):
        raise OSError("unreadable metadata")

    monkeypatch.setattr(registry.metadata, "entry_points", broken)
    registry.plugins.cache_clear()
    try:
        assert registry.registered() == MECHANISMS
        assert set(registry.available()) == set(MECHANISMS)
    finally:
        registry.plugins.cache_clear()


@pytest.mark.parametrize("name", NAMES)
def test_a_batch_with_one_perturbed_word_has_its_span(mechs, name):
    """token_pairs' one-piece path: a batch whose only perturbed piece is one word."""
    mech = mechs[name]
    if getattr(mech, "reports_pairs", True) is False:
        return
    tokenize, word = _tokens_and_text(mech)
    toks = tokenize(TEXTS[0])
    first = int(np.flatnonzero(mech.plan(toks)[0] == PERTURB)[0])
    text = toks.core[first]
    res = mech.sanitize_batch([text], [record_generator(5, 0)])[0]
    if res.accounting.n_perturbed != 1:
        pytest.skip("the word is not perturbed on its own (context-dependent plan)")
    ((orig, new, s, e),) = res.pairs.tolist()
    assert res.text[s:e].casefold() == word(new).casefold() and (s, e) == (0, len(res.text))
