"""Issue 27: the paper preset and the defaults release an instruction at eps 8 for >= 1,000 records.

The budget figures are pinned (what eps 8 covers under the proven accountant), LimitedDomain's pass rate is
computed exactly for agreeing votes, and the done-means runs `tune` on 1,000 records with a tiny model whose
votes agree (tests/dpopt/conftest.py), through the library and through the executable.
"""

from __future__ import annotations

import json
import math
import typing

import pytest
import torch

from ppt.dpopt.limited_domain import release_probabilities
from ppt.dpopt.tune import PRESETS, TuneConfig, prepare, tune
from ppt.parallel import one_thread
from tests.dpopt.conftest import CHAIN_TEXT
from tests.helpers import ppt

LAB = ["negative", "positive"]
N = 1000
TEXTS = [f"review {i}: {'a fine day' if i % 2 else 'a sad day'}" for i in range(N)]
LABELS = [LAB[i % 2] for i in range(N)]


def _plan(cfg: TuneConfig, n: int = N):
    return prepare(cfg, TEXTS[:n], LABELS[:n])


def test_preset_is_the_paper_configuration_and_explicit_options_win():
    cfg = TuneConfig.preset("paper", LAB)
    assert (cfg.ensemble, cfg.shots, cfg.eps0, cfg.delta0, cfg.k_bar) == (205, 5, 1.8, 5e-7, 10)
    assert (cfg.temperature, cfg.max_prompts, cfg.max_tokens, cfg.retries) == (1.1, 40, 50, 0)
    mine = TuneConfig.preset("paper", LAB, rate=0.2, max_prompts=2)
    assert (mine.rate, mine.max_prompts, mine.ensemble, mine.shots) == (0.2, 2, 205, 5)
    with pytest.raises(Exception, match="unknown preset"):
        TuneConfig.preset("nope", LAB)


def test_cli_presets_and_defaults_match_the_library():
    """The CLI's --preset choices, the options a preset may set, and every default equal the library's."""
    import inspect
    from dataclasses import fields

    from ppt.cli import dpopt_cmd

    assert typing.get_args(dpopt_cmd.Preset) == tuple(PRESETS)
    assert all(set(p) <= set(dpopt_cmd.PRESET_OPTIONS) for p in PRESETS.values())
    params = inspect.signature(dpopt_cmd.tune).parameters
    lib = {f.name: f.default for f in fields(TuneConfig) if f.name != "labels"}
    for name in (*dpopt_cmd.PRESET_OPTIONS, "eps", "delta", "init", "accountant"):
        assert params[name].default == lib[name], name


@pytest.mark.parametrize(
    "cfg,covered",
    [(TuneConfig.preset("paper", LAB), 14), (TuneConfig(labels=LAB), 47)],
    ids=["paper", "defaults"],
)
@pytest.mark.parametrize("n", [1000, 2000])
def test_budget_at_eps_8_covers_these_queries(cfg, covered, n):
    """The proven accountant at eps 8, delta 1e-5 (not derived from n: the same at 1,000 and 2,000 records)."""
    plan = prepare(cfg, (TEXTS * 2)[:n], (LABELS * 2)[:n])
    assert plan.budget_queries == covered
    acct = plan.acct
    assert acct.epsilon(covered) <= 8.0 < acct.epsilon(covered + 1)
    assert covered * plan.cfg.rate * acct.delta0 <= plan.cfg.delta / 2  # LimitedDomain's deltas: half at most


def _pass_rate(cfg: TuneConfig, delta0: float, agree: float) -> float:
    """P[a query releases a token] when each subset votes w.p. rate and a share ``agree`` of the voters
    propose one token (the rest one vote each on distinct tokens): exact over the binomial participation."""
    from scipy.stats import binom

    total = 0.0
    for v in range(cfg.ensemble + 1):
        w = binom.pmf(v, cfg.ensemble, cfg.rate)
        if w < 1e-9:
            continue
        counts = torch.zeros(4096)
        top = round(agree * v)
        counts[0], counts[1 : 1 + v - top] = top, 1
        total += w * (1 - float(release_probabilities(counts, cfg.eps0, delta0, cfg.k_bar)[1][-1]))
    return total


def test_enough_voters_for_limited_domain_to_pass():
    paper = _plan(TuneConfig.preset("paper", LAB))
    assert _pass_rate(paper.cfg, paper.acct.delta0, 1.0) > 0.98
    assert 0.2 < _pass_rate(paper.cfg, paper.acct.delta0, 0.6) < 0.5  # marginal when 60% agree (docs/dpopt)
    default = _plan(TuneConfig(labels=LAB))
    assert _pass_rate(default.cfg, default.acct.delta0, 1.0) > 0.999
    assert _pass_rate(default.cfg, default.acct.delta0, 0.6) > 0.95  # when 60% of the voters agree


def test_derived_delta0_is_sized_to_the_budget_not_to_every_possible_query():
    cfg = TuneConfig(labels=LAB, max_prompts=40, max_tokens=50).resolved(N)
    old = cfg.delta / (2 * cfg.rate * cfg.max_queries())
    acct = cfg.accountant_for()
    assert cfg.delta0 > 10 * old
    assert acct.max_queries() * cfg.rate * cfg.delta0 <= cfg.delta / 2
    assert TuneConfig(labels=LAB, delta0=3e-7).resolved(N).delta0 == 3e-7  # given: kept


@pytest.fixture(scope="module")
def agreeing(agreeing_lm):
    from ppt.models import load_causal_lm

    path, chain = agreeing_lm
    return (*load_causal_lm(str(path), device="cpu", dtype="float32"), chain)


@pytest.mark.slow  # seconds: the full suite (CI) runs it, the fast lane does not
@pytest.mark.parametrize("which", ["paper", "defaults"])
def test_done_means_eps_8_on_1000_records_releases_an_instruction(agreeing, which):
    """Issue 27's done-means, with a tiny model whose votes agree: non-empty generated instructions."""
    model, tok, chain = agreeing
    cfg = TuneConfig.preset("paper", LAB, seed=5) if which == "paper" else TuneConfig(labels=LAB, seed=5)
    plan = _plan(cfg)
    events = []
    with one_thread():  # a tiny model's many small ops: a second intra-op thread only waits on a busy CPU
        out = tune(model, tok, plan, TEXTS, LABELS, progress=events.append)
    g = out["block"]["generation"]
    assert 0 < g["eps"] <= 8.0 and g["queries"] <= g["budget_queries"] == plan.budget_queries
    generated = [c for c in out["candidates"] if c != cfg.init]
    assert generated == [CHAIN_TEXT.strip()]  # the agreed continuation, released token by token
    assert out["instruction"] in out["candidates"] and out["instruction"].strip()
    released = [e for e in events if e["event"] == "token"]
    assert len(released) >= len(chain) and all(e["eps_spent"] <= 8.0 for e in events)
    assert events[0]["event"] == "start" and events[0]["budget"] == plan.budget_queries


@pytest.mark.slow(reason="DP-OPT generations on the tiny LM, with and without retries")
def test_a_candidate_ends_at_its_first_bottom_unless_retries(tiny_lm):
    """retries 0 (the default): one query per candidate when every query is bottom; retries 1: two."""
    from ppt.models import load_causal_lm

    model, tok = load_causal_lm(str(tiny_lm), device="cpu", dtype="float32")
    texts, labels = TEXTS[:80], LABELS[:80]
    for retries in (0, 1):
        # a random LM's votes scatter: 6 voters never clear LimitedDomain's margin at eps0 1
        cfg = TuneConfig(labels=LAB, eps=50.0, eps0=1.0, rate=1.0, ensemble=6, shots=2, max_prompts=3, retries=retries)
        with one_thread():
            out = tune(model, tok, prepare(cfg, texts, labels), texts, labels)
        g = out["block"]["generation"]
        assert g["queries"] == g["failures"] == 3 * (1 + retries) and g["retries"] == retries


@pytest.mark.slow  # seconds: the full suite (CI) runs it, the fast lane does not
def test_cli_preset_paper_on_1000_records(agreeing_lm, tmp_path):
    """`ppt dp-opt tune --preset paper` at eps 8 on 1,000 records: the budget's query count is printed before
    the model loads, the stamp carries the preset's settings, and an explicit flag wins over the preset."""
    path, _ = agreeing_lm
    data = tmp_path / "train.jsonl"
    data.write_text(
        "".join(json.dumps({"id": i, "text": t, "label": y}) + "\n" for i, (t, y) in enumerate(zip(TEXTS, LABELS)))
    )
    out = tmp_path / "prompt.json"
    args = ["dp-opt", "tune", "-i", str(data), "--labels", ",".join(LAB), "--model", str(path), "-o", str(out)]
    with one_thread():
        p = ppt(*args, "--preset", "paper", "--eps", "8", "--seed", "2")
    assert p.returncode == 0, p.stderr
    assert "covers 14 LimitedDomain queries" in p.stderr and "205 subsets x 5 demonstrations" in p.stderr
    res = json.loads(out.read_text())
    g = res["ppt"]["dp-opt"]["generation"]
    assert (g["ensemble"], g["shots"], g["eps0"], g["delta0"], g["retries"], g["budget_queries"]) == (
        205,
        5,
        1.8,
        5e-7,
        0,
        14,
    )
    assert CHAIN_TEXT.strip() in res["candidates"] and 0 < g["eps"] <= 8
    with one_thread():
        p = ppt(*args, "--preset", "paper", "--rate", "0.2", "--max-prompts", "1", "--seed", "2")
    assert p.returncode == 0, p.stderr
    assert "covers 11 LimitedDomain queries" in p.stderr and "rate 0.2;" in p.stderr
    assert "at most 1 candidates x 50 tokens" in p.stderr
    g = json.loads(out.read_text())["ppt"]["dp-opt"]["generation"]
    assert g["ensemble"] == 205 and g["queries"] <= 11
    assert not math.isnan(g["eps"])
