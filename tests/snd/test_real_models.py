"""The split on the real packaged models (integration): at eta = inf the server half must give exactly what
the whole model gives, and noise must move the answer."""

from __future__ import annotations

import math

import pytest
import torch

from ppt.rng import record_generator
from ppt.snd.pipeline import snd_embed
from ppt.snd.split import SplitModel
from tests.helpers import needs

TEXTS = ["The striker scored twice in the final.", "Shares fell as oil prices rose sharply on Monday."]


@pytest.mark.integration
@needs("minilm")
def test_minilm_split_equals_the_sentence_encoder():
    from ppt.models import load_sentence_encoder

    split = SplitModel.load("minilm", device="cpu")
    assert split.pooling == "mean-normalized" and split.dim == 384
    assert 1.0 < split.bound < 3.0  # the largest word-piece embedding norm (about 1.69)
    ref = load_sentence_encoder("minilm", device="cpu").encode(TEXTS)
    clean = snd_embed(split, TEXTS, math.inf, [record_generator(0, i) for i in range(2)])
    assert torch.allclose(clean.noisy, ref, atol=1e-5)
    noisy = snd_embed(split, TEXTS, 500.0, [record_generator(0, i) for i in range(2)])
    cos = torch.nn.functional.cosine_similarity(noisy.noisy, ref)
    assert (cos < 0.999).all() and (cos > 0.5).all()  # eta 500: mean radius 0.77, docs/snd cos 0.94


@pytest.mark.integration
@needs("smollm2")
def test_smollm2_split_mean_of_last_hidden_states():
    split = SplitModel.load("smollm2", device="cpu")
    assert split.pooling == "mean" and split.dim == 576
    ids = split.tokenizer(TEXTS[:1], return_tensors="pt")
    ref = split.body(**ids).last_hidden_state.mean(1)
    out = snd_embed(split, TEXTS[:1], math.inf, [record_generator(0, 0)])
    assert torch.allclose(out.noisy, ref, rtol=1e-4, atol=1e-3)
