"""A tiny causal LM whose votes agree: its next token is a function of the current token only.

Built from the suite's tiny random Llama (``make_tiny_causal_lm``): every attention output and MLP
projection is zeroed, so the residual stream is the current token's embedding; every token outside a short
chain shares one embedding direction and each chain token has its own orthogonal direction, and the output
head maps them so that any token is followed by CHAIN[0], CHAIN[i] by CHAIN[i + 1], the last by EOS, each by a
logit margin of ~56 (deterministic at temperature 1.1). Every subset's meta-prompt therefore votes the same
token: the votes agree, as a large model's do on an obvious continuation.
"""

from __future__ import annotations

import pytest

CHAIN_TEXT = " the patient"  # four distinct tokens of the tiny tokenizer


def make_agreeing_lm(base, out, scale: float = 10.0):
    """Save the agreeing model (from the tiny LM directory ``base``) to ``out``; returns (out, chain ids)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(base)
    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32).eval()
    chain = tok(CHAIN_TEXT, add_special_tokens=False)["input_ids"]
    eos = tok.eos_token_id
    d = model.config.hidden_size
    assert len(set(chain)) == len(chain) and len(chain) + 1 < d and eos not in chain
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        basis = torch.eye(d)
        emb = model.model.embed_tokens.weight
        emb.copy_(basis[0].expand_as(emb))  # every token outside the chain: direction 0
        for i, t in enumerate(chain):
            emb[t] = basis[i + 1]
        head = model.lm_head.weight
        head.zero_()
        head[chain[0]] = scale * basis[0]
        for i in range(1, len(chain)):
            head[chain[i]] = scale * basis[i]
        head[eos] = scale * basis[len(chain)]
    out.mkdir(parents=True, exist_ok=True)
    tok.save_pretrained(out)
    model.save_pretrained(out)
    return out, chain


@pytest.fixture(scope="session")
def agreeing_lm(tiny_lm, tmp_path_factory):
    """(model directory, chain token ids) of the agreeing tiny LM."""
    return make_agreeing_lm(tiny_lm, tmp_path_factory.getbasetemp() / "agreeing-lm")
