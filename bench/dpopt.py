"""Benchmark DP-OPT's generation: this design against the previous one, measured in one run.

Both designs run the same candidates on the same subsets, participation masks and released tokens (no DP
noise: the tokens are fixed, each candidate releases its number of tokens and then has one more query, as a
candidate that ends at a bottom does), so only the model work differs:

* previous (``EnsembleDecoder``, tune.py before issue 27): per candidate, every demonstration of every subset
  classified under the initial instruction, every meta-prompt encoded (with the logits of every position),
  every meta-prompt stepped on each released token;
* current (``LazyEnsemble`` + ``_MetaPrompts``): a subset's demonstrations classified and its meta-prompt
  encoded when it first votes (a record classified once per run), the shared prefix encoded once, KV caches
  caught up with the released tokens, last-position logits only.

Prints each design's seconds, the ratio, what each encoded, and the largest logit difference over every
query's participating rows (the two must agree).

    python bench/dpopt.py                       # random weights of SmolLM2-135M's shape (ppt.testing.tiny_llama)
    python bench/dpopt.py --model smollm2       # the packaged model's weights
    python bench/dpopt.py --n 64 --shots 5 --rate 0.15 --tokens 0,3,12 --threads 1
    python bench/dpopt.py --model smollm2 --n 205 --shots 5 --rate 0.15 --designs current --repeat 1  # paper scale
"""

from __future__ import annotations

import argparse
import time

# SmolLM2-135M's shape: the random model has its compute and memory, not its outputs
SMOLLM2_SHAPE = {
    "vocab_size": 49152,
    "hidden_size": 576,
    "intermediate_size": 1536,
    "num_hidden_layers": 30,
    "num_attention_heads": 9,
    "num_key_value_heads": 3,
    "max_position_embeddings": 2048,
    "tie_word_embeddings": True,
}
TWEETS = [
    ("I can't wait for self-driving cars, they will save so many lives!", "positive"),
    ("Driverless cars are not worth the risk, no thank you.", "negative"),
    ("Google's car drove me home today and it was smooth and safe.", "positive"),
    ("I would never let a robot drive my kids to school.", "negative"),
    ("Autonomous vehicles will make commuting so much less stressful.", "positive"),
    ("Another self-driving crash in the news, this tech is not ready.", "negative"),
]


def _tokenizer():
    """smollm2's tokenizer when installed (real prompt lengths), else a small BPE (ppt.testing)."""
    try:
        from ppt.models.loaders import load_tokenizer

        tok = load_tokenizer("smollm2")
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token
        return tok, "smollm2's tokenizer"
    except Exception:  # noqa: BLE001 - any failure: the fallback tokenizer
        pass
    from ppt.testing import bpe_tokenizer

    text = " ".join(t for t, _ in TWEETS) + " Classify the sentiment. Instruction Input Output student errors"
    tok = bpe_tokenizer(
        [text] * 20, 2000, ["<pad>", "<s>", "</s>"], pad_token="<pad>", bos_token="<s>", eos_token="</s>"
    )
    return tok, "a 2,000-token BPE (ppt.testing)"


def _model(name: str, device: str):
    if name == "random":
        from ppt.testing import tiny_llama

        tok, tname = _tokenizer()
        shape = dict(SMOLLM2_SHAPE)
        model = tiny_llama(shape.pop("vocab_size"), seed=0, **shape).to(device)
        return model, tok, f"random weights of SmolLM2-135M's shape, {tname}"
    from ppt.models import load_causal_lm

    model, tok = load_causal_lm(name, device=device, dtype="float32")
    return model, tok, name


def previous_demos(model, tok, init, labels_all, texts, labels, subsets):
    """tune.py's meta-prompts before issue 27: every subset's demonstrations classified, every prompt built."""
    from ppt.dpopt import templates
    from ppt.dpopt.evaluate import label_logprobs

    idx = sorted({i for s in subsets for i in s})
    lp = label_logprobs(model, tok, init, [texts[i] for i in idx], labels_all)
    pred = {i: labels_all[int(j)] for i, j in zip(idx, lp.argmax(1))}
    out = []
    for c, s in enumerate(subsets):
        ok = [(texts[i], labels[i]) for i in s if pred[i] == labels[i]]
        bad = [(texts[i], pred[i], labels[i]) for i in s if pred[i] != labels[i]]
        out.append(tok(templates.backward(init, ok, bad, message=c), add_special_tokens=True)["input_ids"])
    return out, len(idx)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="random", help="'random' (default), or a model alias/path")
    ap.add_argument("--n", type=int, default=32, help="subsets (ensemble size)")
    ap.add_argument("--shots", type=int, default=4)
    ap.add_argument("--rate", type=float, default=0.25, help="participation rate per query")
    ap.add_argument("--tokens", default="1,6,12", help="tokens each candidate releases before its last query")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: torch's default)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=2, help="runs of each design (alternating order); best reported")
    ap.add_argument(
        "--designs",
        default="previous,current",
        help="which to run: 'current' alone times the paper's scale, where the previous design's all-position "
        "logits (subsets x prompt length x vocabulary floats) do not fit in memory",
    )
    a = ap.parse_args()

    import numpy as np
    import torch

    from ppt.dpopt.ensemble import EnsembleDecoder, LazyEnsemble
    from ppt.dpopt.subsets import assign, make_key, participation
    from ppt.dpopt.tune import TuneConfig, _MetaPrompts

    torch.set_grad_enabled(False)
    if a.threads:
        torch.set_num_threads(a.threads)
    model, tok, name = _model(a.model, a.device)
    labs = ["negative", "positive"]
    records = 2 * a.n * a.shots
    texts = [f"{TWEETS[i % len(TWEETS)][0]} #{i}" for i in range(records)]
    labels = [TWEETS[i % len(TWEETS)][1] for i in range(records)]
    cfg = TuneConfig(labels=labs, init="Classify the sentiment of the tweet as negative or positive.")
    key = make_key(a.seed)
    plan = [int(x) for x in a.tokens.split(",")]
    seq = tok(" Classify each tweet as negative or positive: read it whole, then answer.", add_special_tokens=False)
    seq = (seq["input_ids"] * 8)[: max(plan)]
    rng = np.random.default_rng(a.seed)
    masks = [[participation(a.n, a.rate, rng) for _ in range(k + 1)] for k in plan]
    subsets = [assign(key, texts, labels, a.n, a.shots, salt=str(c)) for c in range(len(plan))]
    queries = sum(k + 1 for k in plan)
    print(
        f"model {name}, device {a.device}, threads {torch.get_num_threads()}; {a.n} subsets x {a.shots} shots, "
        f"rate {a.rate:g}; {len(plan)} candidates releasing {a.tokens} tokens ({queries} queries)"
    )

    def previous():
        logits, encoded, classified = [], 0, 0
        for c, k in enumerate(plan):
            ids, n_cls = previous_demos(model, tok, cfg.init, labs, texts, labels, subsets[c])
            classified += n_cls
            encoded += sum(map(len, ids))
            dec = EnsembleDecoder(model, tok, ids)
            for t in range(k + 1):
                logits.append(dec.logits[masks[c][t]].clone())
                if t < k:
                    dec.append(seq[t])
                    encoded += a.n
        return logits, encoded, classified

    def current():
        logits, encoded = [], 0
        meta = _MetaPrompts(model, tok, cfg, texts, labels)
        prefix = meta.prefix()
        for c, k in enumerate(plan):
            ens = LazyEnsemble(model, tok, a.n, lambda rows, s=subsets[c]: meta.ids(s, rows), prefix=prefix)
            for t in range(k + 1):
                logits.append(ens.logits(masks[c][t]))
                if t < k:
                    ens.append(seq[t])
            encoded += ens.prefilled_tokens + ens.stepped_tokens
        return logits, encoded, meta.classified

    model(input_ids=torch.tensor([seq[:4]], device=a.device))  # warm-up: neither design pays first-call costs
    times: dict[str, list[float]] = {"previous": [], "current": []}
    out = {}
    order = [d for d in ("previous", "current") if d in a.designs.split(",")]
    for r in range(a.repeat):  # alternating order (p c, c p, ...): a busy machine's drift hits both
        for which in order if r % 2 == 0 else order[::-1]:
            t0 = time.perf_counter()
            out[which] = (previous if which == "previous" else current)()
            times[which].append(time.perf_counter() - t0)
    best = {k: min(v) for k, v in times.items() if v}
    for k in order:
        runs = ", ".join(f"{x:.2f}" for x in times[k])
        print(
            f"{k:8}: {best[k]:8.2f} s best of {a.repeat} ({runs}); {out[k][2]} demonstrations classified, "
            f"{out[k][1]} positions encoded"
        )
    if len(order) == 2:
        pairs = zip(out["previous"][0], out["current"][0])
        diff = max((float((p - q).abs().max()) for p, q in pairs if p.numel()), default=0.0)
        print(
            f"ratio   : {best['previous'] / best['current']:8.2f}x faster (best of each, same run, same masks and tokens)"
        )
        print(f"max |logit difference| over every query's participating rows: {diff:.2e}")


if __name__ == "__main__":
    main()
