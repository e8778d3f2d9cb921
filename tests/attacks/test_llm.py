"""ppt.attacks.llm: LLM recovery counts, the attack with oracle/copying models, endpoint chat bodies."""

from __future__ import annotations

import pytest

from ppt.attacks.llm import LlmAttack, recovery_counts
from ppt.io import RecordError
from ppt.testing import FakeLM


def test_recovery_counts_hand_computed():
    # original words: the x2, cat, sat; perturbed shows one "the" and "sat": hidden = the, cat
    assert recovery_counts("the cat sat the", "the dog sat", "the cat sat") == (1, 2)
    assert recovery_counts("the cat sat the", "the dog sat", "the cat sat the") == (2, 2)
    assert recovery_counts("a b", "a b", "x") == (0, 0)


def test_llm_attack_with_oracle_and_copying_models():
    originals = ["my name is alice smith", "call bob at noon"]
    perturbed = ["my name is carol jones", "call dan at dawn"]
    table = dict(zip(perturbed, originals))
    oracle_lm = FakeLM(lambda p: table[p.rsplit("Text: ", 1)[1]])
    oracle = LlmAttack(oracle_lm)
    for r in oracle.run(perturbed, originals):
        assert r["rate"] == 1.0 and r["rouge_l"] == pytest.approx(1.0)
    assert [p.max_new_tokens for p in oracle_lm.params] == [oracle.budget(p) for p in perturbed]
    assert all(p.temperature == 0.0 for p in oracle_lm.params)
    copier = LlmAttack(FakeLM(lambda p: p.rsplit("Text: ", 1)[1]))
    res = copier.run(perturbed, originals)
    assert all(r["rate"] == 0.0 for r in res)
    assert res[0]["rouge_l"] == pytest.approx(res[0]["rouge_l_perturbed"])
    failing = LlmAttack(FakeLM(lambda p: RecordError("refused", "no")))
    assert isinstance(failing.run(["x"], ["y"])[0], RecordError)
    with pytest.raises(ValueError):
        LlmAttack(FakeLM(str), prompt="no placeholder")


def test_endpoint_lm_builds_chat_bodies():
    from ppt.lm.generate import SamplingParams
    from ppt.remote.backends import Answer
    from ppt.remote.endpoint import EndpointLM

    class Client:
        def run(self, items, kind):
            self.items, self.kind = items, kind
            return [Answer(text="restored", finish_reason="stop"), RecordError("bad_response", "x")]

    c = Client()
    msgs = [[{"role": "user", "content": "p1"}], [{"role": "user", "content": "p2"}]]
    params = [SamplingParams(max_new_tokens=10), SamplingParams(max_new_tokens=20)]
    out = EndpointLM("http://127.0.0.1:1/v1", "m", client=c).generate(msgs, params)
    assert out[0].text == "restored" and isinstance(out[1], RecordError)
    assert c.kind == "chat" and c.items[1][1]["max_tokens"] == 20 and c.items[0][1]["temperature"] == 0.0
    assert c.items[0][1] == {
        "model": "m",
        "messages": [{"role": "user", "content": "p1"}],
        "max_tokens": 10,
        "temperature": 0.0,
    }
