"""ProSan's lightweight mode: distillation on (original, anonymized) pairs and one-pass anonymization."""

from __future__ import annotations

import json

import pytest
import torch

from ppt.io import ExitCode, PptError
from ppt.mechanisms import get_mechanism
from ppt.mechanisms.prosan.distill import DistillConfig, batch_loss, distill, encode_pairs
from ppt.mechanisms.prosan.lite import META_FILE, TEMPLATE
from ppt.rng import record_generator
from ppt.stages.prosan_distill import read_pairs
from tests.helpers import ppt

pytestmark = pytest.mark.filterwarnings("ignore::ppt.log.LeakWarning")
PAIRS = [
    (f"My name is Anna and I am {20 + i} years old.", f"My name is Mary and I am {40 + i} years old.") for i in range(8)
]


def test_loss_covers_only_the_anonymized_continuation(tiny_lm):
    from ppt.models import load_causal_lm

    model, tok = load_causal_lm(str(tiny_lm), device="cpu", dtype="float32")
    [(ids, n_prompt)] = encode_pairs(tok, PAIRS[:1], TEMPLATE, 256)
    assert ids[:n_prompt] == tok(TEMPLATE.format(text=PAIRS[0][0]), add_special_tokens=True)["input_ids"]
    assert ids[-1] == tok.eos_token_id
    with torch.no_grad():
        got = float(batch_loss(model, [(ids, n_prompt)], pad=0))
        logp = torch.log_softmax(model(input_ids=torch.tensor([ids])).logits[0].double(), -1)
        want = float(-torch.stack([logp[j - 1, ids[j]] for j in range(n_prompt, len(ids))]).mean())
    assert got == pytest.approx(want, rel=1e-4)


@pytest.mark.slow(reason="trains the tiny LM for a few steps")
def test_distill_lowers_the_loss_and_keeps_checkpoints(tiny_lm, tmp_path):
    cfg = DistillConfig(
        base_model=str(tiny_lm), epochs=4, batch_size=4, lr=3e-3, checkpoint_every=2, keep=1, device="cpu"
    )
    res = distill(PAIRS, tmp_path / "lite", cfg, teacher="prosan|eps:1|v:0")
    assert res.steps == 8 and res.pairs == 8
    assert sum(res.losses[-2:]) < sum(res.losses[:2])
    assert sorted(p.name for p in (tmp_path / "lite").glob("checkpoint-*")) == ["checkpoint-6"]
    meta = json.loads((tmp_path / "lite" / META_FILE).read_text())
    assert meta["template"] == TEMPLATE and meta["steps"] == 8 and meta["teacher"].startswith("prosan|")
    mech = get_mechanism("prosan-lite", 1.0, model=str(tmp_path / "lite"), device="cpu", quiet=True)
    params = mech.stamp()["params"]
    assert params["distilled_by_ppt"] is True and params["trained_pairs"] == 8 and params["mode"].startswith("lite")
    texts = [PAIRS[0][0], "", "Bob is 31."]
    a = mech.sanitize_batch(texts, [record_generator(1, i) for i in range(3)])
    b = mech.sanitize_batch(texts[::-1], [record_generator(1, i) for i in (2, 1, 0)])
    assert [r.text for r in a] == [r.text for r in b[::-1]]
    assert a[1].text == "" and a[1].accounting.n_tokens == 0


def test_lite_has_no_eps_and_needs_a_model():
    with pytest.raises(ValueError, match="eps"):
        get_mechanism("prosan-lite", 3.0, model="x")
    with pytest.raises(ValueError, match="--model"):
        get_mechanism("prosan-lite", 1.0)


def test_stamp_of_lite_is_an_unprotected_event(tiny_lm):
    from ppt.mechanisms.privacy import privacy_block

    mech = get_mechanism("prosan-lite", 1.0, model=str(tiny_lm), device="cpu", quiet=True, max_new_tokens=5)
    [r] = mech.sanitize_batch(["Anna lives in Oslo."], [record_generator(0, 0)])
    block = privacy_block(mech, r.accounting)
    assert block["proven"]["eps"] == "inf" and block["proven"]["notion"] == "none"
    assert mech.stamp()["params"]["distilled_by_ppt"] is False


def test_pairs_must_be_prosans_unless_any_teacher(tmp_path):
    p = tmp_path / "pairs.jsonl"
    p.write_text(json.dumps({"original": "SECRET a", "text": "b"}) + "\n")
    with pytest.raises(PptError) as e:
        read_pairs(str(p), "original", "text")
    assert e.value.exit_code == ExitCode.DATAERR and "SECRET" not in str(e.value)
    assert read_pairs(str(p), "original", "text", any_teacher=True) == ([("SECRET a", "b")], None)


@pytest.mark.slow(reason="distils the tiny LM through the CLI, then sanitizes with it")
def test_cli_distill_then_lite(tiny_lm, tmp_path):
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(
        "".join(
            json.dumps({"original": s, "text": t, "ppt": {"sanitize": {"signature": "prosan|eps:1|v:0"}}}) + "\n"
            for s, t in PAIRS
        )
    )
    out = tmp_path / "lite"
    r = ppt(
        "prosan",
        "distill",
        "--pairs",
        str(pairs),
        "-o",
        str(out),
        "--base-model",
        str(tiny_lm),
        "--max-steps",
        "2",
        "--device",
        "cpu",
        "-q",
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["steps"] == 2 and (out / "model.safetensors").is_file()
    r = ppt(
        "sanitize",
        "--mech",
        "prosan-lite",
        "--model",
        str(out),
        "-p",
        "max_new_tokens=4",
        "--seed",
        "1",
        stdin=json.dumps({"text": "Anna is 23."}) + "\n",
    )
    assert r.returncode == 0, r.stderr
    rec = json.loads(r.stdout)
    assert rec["ppt"]["sanitize"]["signature"].startswith("prosan-lite|")


def test_train_layers_trains_only_the_top_decoder_layers_and_the_budget_stops_early(tiny_lm, tmp_path):
    from ppt.models import load_causal_lm

    cfg = DistillConfig(
        base_model=str(tiny_lm),
        epochs=4,
        batch_size=4,
        lr=3e-3,
        checkpoint_every=0,
        device="cpu",
        train_layers=1,
        max_seconds=0.0,
    )
    res = distill(PAIRS, tmp_path / "lite", cfg)
    assert res.steps == 1  # the budget (0 s) is spent after the first step
    before, _ = load_causal_lm(str(tiny_lm), device="cpu", dtype="float32")
    after, _ = load_causal_lm(str(tmp_path / "lite"), device="cpu", dtype="float32")
    n_layers = len(after.model.layers)
    a, b = dict(before.named_parameters()), dict(after.named_parameters())
    changed = {k for k in a if not torch.equal(a[k], b[k])}
    top = f"model.layers.{n_layers - 1}."
    assert changed and all(k.startswith((top, "model.norm")) for k in changed)
    assert any(k.startswith(top) for k in changed)


def test_a_record_longer_than_the_context_fails_alone(tiny_lm):
    """Reliability probe P-D4: one record longer than the model's context failed its whole batch."""
    from ppt.io import Record, RecordError
    from ppt.stages.sanitize import sanitize_records

    mech = get_mechanism("prosan-lite", 1.0, model=str(tiny_lm), device="cpu", quiet=True, max_new_tokens=4)
    texts = ["Anna lives in Oslo.", "word " * 1200, "Bob is 31."]  # the tiny model takes 2048 positions
    recs = [Record(line_no=i + 1, id=i, data={"id": i, "text": t}, text=t) for i, t in enumerate(texts)]
    out = sanitize_records(mech, recs)
    assert isinstance(out[1], RecordError) and out[1].type == "prompt_too_long"
    assert isinstance(out[0], dict) and isinstance(out[2], dict) and "ppt" in out[0] and "ppt" in out[2]
