"""Benchmark DP-OPT's ensemble decode: KV cache grown one token per step vs re-encoding every prompt.

The n meta-prompts (backward template over tweet-like demos) are prefilled once; each step appends the
same token to all of them and reads the next-token logits (``EnsembleDecoder``). The reference design
re-encodes every prompt with the whole prefix each step (``reencode_logits``). Both runs append the same
token sequence (greedy on prompt 0), so their logits are compared too. Prints generated tokens/s (one
released token = one step of n prompts) of each and their ratio, measured in one run.

    python bench/dpopt.py                       # smollm2 when installed, else a random model of its shape
    python bench/dpopt.py --n 16 --steps 24 --shots 4 --device cuda
"""

from __future__ import annotations

import argparse
import time


def _model(name: str, device: str):
    from ppt.models import load_causal_lm

    try:
        m, tok = load_causal_lm(name, device=device, dtype="float32")
        return m, tok, name
    except Exception as exc:
        if name != "smollm2":
            raise
        import torch
        from transformers import LlamaConfig, LlamaForCausalLM

        from ppt.testing.models import bpe_tokenizer

        print(f"smollm2 not available ({type(exc).__name__}); using a random Llama of SmolLM2-135M's shape")
        specials = ["<pad>", "<s>", "</s>"]
        tok = bpe_tokenizer(
            ["the quick brown fox jumps over the lazy dog. " * 50],
            2000,
            specials,
            pad_token="<pad>",
            bos_token="<s>",
            eos_token="</s>",
        )
        torch.manual_seed(0)
        cfg = LlamaConfig(
            vocab_size=49152,
            hidden_size=576,
            intermediate_size=1536,
            num_hidden_layers=30,
            num_attention_heads=9,
            num_key_value_heads=3,
            max_position_embeddings=2048,
        )
        return LlamaForCausalLM(cfg).eval().to(device), tok, "random-smollm2-shape"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--n", type=int, default=8, help="meta-prompts (ensemble size)")
    ap.add_argument("--shots", type=int, default=4)
    ap.add_argument("--steps", type=int, default=16, help="tokens released")
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args()

    import torch

    from ppt.dpopt.ensemble import EnsembleDecoder, reencode_logits
    from ppt.dpopt.templates import backward

    torch.set_grad_enabled(False)
    model, tok, name = _model(a.model, a.device)
    tweets = [
        "I can't wait for self-driving cars, they will save so many lives!",
        "Driverless cars are not worth the risk, no thank you.",
        "Autonomous vehicles are being tested in my city this year.",
        "I would never let a robot drive my kids to school.",
        "Google's car drove me home today and it was smooth and safe.",
    ]
    labels = ["positive", "negative", "neutral", "negative", "positive"]
    prompts = []
    for j in range(a.n):
        demos = [(tweets[(j + i) % 5], labels[(j + i) % 5]) for i in range(a.shots)]
        prompts.append(
            backward(
                "Classify the sentiment.",
                demos[: a.shots // 2],
                [(x, "neutral", y) for x, y in demos[a.shots // 2 :]],
                j,
            )
        )
    ids = [tok(p)["input_ids"] for p in prompts]
    print(
        f"model {name}, device {a.device}, {a.n} prompts of {min(map(len, ids))}-{max(map(len, ids))} tokens, {a.steps} steps"
    )

    t0 = time.perf_counter()
    dec = EnsembleDecoder(model, tok, ids)
    t_prefill = time.perf_counter() - t0
    seq = []
    t0 = time.perf_counter()
    for _ in range(a.steps):
        token = int(dec.logits[0].argmax())
        seq.append(token)
        dec.append(token)
    t_kv = time.perf_counter() - t0
    last_kv = dec.logits

    t0 = time.perf_counter()
    for s in range(1, a.steps + 1):
        ref = reencode_logits(model, tok, ids, seq[:s])
    t_re = time.perf_counter() - t0
    diff = float((ref - last_kv).abs().max())

    kv_rate = a.steps / (t_prefill + t_kv)
    re_rate = a.steps / t_re
    print(f"kv-cache : {kv_rate:8.2f} tokens/s (prefill {t_prefill:.2f}s + {a.steps} steps {t_kv:.2f}s)")
    print(f"re-encode: {re_rate:8.2f} tokens/s ({t_re:.2f}s)")
    print(f"ratio    : {kv_rate / re_rate:8.2f}x (prefill included); steps only {a.steps / t_kv / re_rate:.1f}x")
    print(f"max |logit difference| at the last step: {diff:.2e}")


if __name__ == "__main__":
    main()
