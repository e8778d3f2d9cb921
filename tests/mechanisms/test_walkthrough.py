"""docs/ARCHITECTURE.md's walkthrough (a) runs: its mechanism class, copied from the doc, registers, samples,
stamps and passes the shared contract checks (issue 23: adding a mechanism touches at most three files)."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest
import torch

from ppt.accounting import MetricDpEvent, SelfComposedEvent
from ppt.cache import Cache
from ppt.mechanisms import get_mechanism, registry
from ppt.mechanisms.params import Param
from ppt.mechanisms.pipeline import TokenMechanism
from ppt.mechanisms.privacy import privacy_block
from ppt.rng import record_generator
from ppt.spaces import space_from_arrays

DOC = Path(__file__).parents[2] / "docs" / "ARCHITECTURE.md"
WORDS = "apple banana cherry grape lemon mango melon olive peach pear plum berry kiwi lime".split()


def walkthrough_class():
    text = DOC.read_text()
    section = text[text.index("**(a) A mechanism**") :]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    ns = {
        "ClassVar": ClassVar,
        "Param": Param,
        "TokenMechanism": TokenMechanism,
        "torch": torch,
        "SelfComposedEvent": SelfComposedEvent,
        "MetricDpEvent": MetricDpEvent,
    }
    exec(compile(code, str(DOC), "exec"), ns)  # noqa: S102 - the doc's own example
    return ns["NoisyNearest"]


@pytest.fixture
def space(tmp_path):
    emb = np.random.default_rng(3).normal(size=(len(WORDS), 8)).astype(np.float32)
    return space_from_arrays("walk", WORDS, emb, cache=Cache(tmp_path / "cache"))


def test_the_documented_mechanism_registers_samples_and_stamps(space, monkeypatch):
    cls = walkthrough_class()
    mech = cls(3.0, space=space, quiet=True, k=2)
    assert mech.k == 2 and type(mech).describe("noisy-nn")["name"] == "noisy-nn"
    with pytest.raises(ValueError, match="k must be"):
        cls(3.0, space=space, quiet=True, k=0)
    texts = ["apple and banana", "plum kiwi lime pear"]
    a = mech.sanitize_batch(texts, [record_generator(1, i) for i in range(2)])
    b = [mech.sanitize_batch([t], [record_generator(1, i)])[0] for i, t in enumerate(texts)]
    assert [x.text for x in a] == [x.text for x in b]  # batch independent
    assert all(w in WORDS for w in a[1].text.lower().split())
    block = privacy_block(mech, a[1].accounting)
    [metric] = block["proven"]["metric"].values()
    assert metric["eps_per_unit"] == 3.0 and a[1].accounting.n_perturbed == 4
    # registered as a plug-in would be (one entry, the walkthrough's second file): found by name
    monkeypatch.setattr(registry, "plugins", lambda: {"noisy-nn": ("tests.mechanisms.test_walkthrough", "Doc")})
    monkeypatch.setattr(sys.modules[__name__], "Doc", cls, raising=False)
    assert get_mechanism("noisy-nn", 3.0, space=space, quiet=True).sanitize_batch(texts[:1], [record_generator(1, 0)])
