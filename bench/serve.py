"""Benchmark `ppt serve`'s throughput: generated tokens/s and requests/s of the server `ppt serve` builds
(ModelService's dynamic batching over the generator, on the HTTP transport serve picks), under N concurrent
clients in another process (stdlib threads posting /v1/chat/completions, so no GIL is shared with the server).

Rates are measured on the server side, from the first request's arrival to the last answer (client start-up
is left out). The generator is what `ppt serve --model M [--runtime R]` loads, except that
``--random-weights`` builds M's shape from its config and tokenizer alone (bench/random_lm.py; no weights
are read), so it runs on the GPU kit's machine:

- ``--runtime transformers`` (serve's default): LocalGenerator with serve's defaults (batch size, dtype:
  bfloat16 on CUDA, static cache). ``--compile`` turns on LocalGenerator's compiled one-token step
  (torch.compile with CUDA graphs; a no-op off CUDA) -- the library option extraction benches with;
  `ppt serve` itself has no --compile, so this figure says what one would gain.
- ``--runtime vllm``: VllmGenerator, vLLM's engine (CUDA only), with ``load_format="dummy"`` random weights
  under ``--random-weights``; when vllm is not importable (or no CUDA) the run is skipped with the reason,
  also in the JSON.

    python bench/serve.py --random-weights --device cuda --n 512 --concurrency 64 --max-tokens 64
    python bench/serve.py --random-weights --layers 1 --n 8 --concurrency 4 --max-tokens 8 --json out.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from query import Timed as QueryTimed  # noqa: E402 - bench/query.py, found through the path above

# the client: C threads share N requests; prints one JSON line (status counts, completion tokens seen)
CLIENT = r"""
import json, sys, threading, urllib.request
url, n, c, max_tokens = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
lock, nxt, ok, bad, tokens = threading.Lock(), [0], [0], [0], [0]
def worker():
    while True:
        with lock:
            i = nxt[0]; nxt[0] += 1
        if i >= n:
            return
        body = {"model": "bench", "max_tokens": max_tokens, "temperature": 0,
                "messages": [{"role": "user", "content": f"Request {i}: summarize the meeting notes about the budget."}]}
        req = urllib.request.Request(url + "/chat/completions", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=600) as r:
                out = json.loads(r.read())
            with lock:
                ok[0] += 1; tokens[0] += out["usage"]["completion_tokens"]
        except Exception as e:
            with lock:
                bad[0] += 1
            print(f"request {i}: {type(e).__name__}: {e}", file=sys.stderr)
threads = [threading.Thread(target=worker) for _ in range(c)]
for t in threads: t.start()
for t in threads: t.join()
print(json.dumps({"ok": ok[0], "failed": bad[0], "completion_tokens": tokens[0]}))
"""


class Timed(QueryTimed):
    """bench/query.py's wrapper (when the first request arrived, when the last answer left), plus the tokens
    generated and the one model name `ppt serve` answers to."""

    def __init__(self, inner):
        super().__init__(inner)
        self.served_names = frozenset({inner.name})
        self.tokens = 0

    def complete(self, body, kind, gone=None):
        out = super().complete(body, kind, gone)
        with self.lock:
            self.tokens += out["usage"]["completion_tokens"]
        return out


def generator(args, dev):
    """What `ppt serve` loads for --model/--runtime (get_lm), with random weights under --random-weights."""
    from ppt.lm.generate import LocalGenerator

    if args.runtime == "vllm":
        return vllm_generator(args, dev)
    if not args.random_weights:
        return LocalGenerator.load(
            args.model, device=args.device, dtype=args.dtype, batch_size=None, compile=args.compile
        )
    from random_lm import random_causal_lm

    dtype = args.dtype if args.dtype is not None or dev.type != "cuda" else "auto"  # serve's default: bf16 on CUDA
    model, tok = random_causal_lm(args.model, layers=args.layers, device=dev, dtype=dtype)
    return LocalGenerator(model, tok, name=model.config._name_or_path, batch_size=None, compile=args.compile)


def vllm_generator(args, dev):
    from ppt.lm.vllm_engine import VllmGenerator

    if not args.random_weights:
        return VllmGenerator.load(args.model, device=args.device, dtype=args.dtype)
    from random_lm import config_and_tokenizer, config_dir
    from vllm import LLM  # type: ignore[import-not-found]

    d = config_dir(args.model)
    if d is None:
        raise SystemExit(f"--runtime vllm --random-weights needs {args.model}'s config directory ($PPT_LM_CONFIGS)")
    cfg, tok, _ = config_and_tokenizer(args.model)
    hf = {"num_hidden_layers": args.layers} if args.layers else None
    llm = LLM(model=str(d), tokenizer=str(d), load_format="dummy", dtype=args.dtype or "auto", seed=0, hf_overrides=hf)
    eos = [] if args.ignore_eos or tok.eos_token_id is None else [tok.eos_token_id]
    ctx = getattr(cfg, "max_position_embeddings", None)
    return VllmGenerator(llm, tok, name=f"{args.model} (random weights, vllm)", context=ctx, eos=eos)


def skip_reason(args, dev) -> str | None:
    if args.runtime != "vllm":
        return None
    from ppt.lm.vllm_engine import vllm_available

    if not vllm_available():
        return "vllm is not importable"
    if dev.type != "cuda":
        return "vllm runs on CUDA only"
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--random-weights", action="store_true", help="--model's shape with random weights")
    ap.add_argument("--layers", type=int, default=None, help="with --random-weights: this many layers")
    ap.add_argument("--runtime", default="transformers", choices=["transformers", "vllm"])
    ap.add_argument("--compile", action="store_true", help="LocalGenerator's compiled one-token step (CUDA)")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--dtype", default=None, help="default: serve's (bfloat16 on CUDA, the model's own elsewhere)")
    ap.add_argument("--n", type=int, default=64, help="requests")
    ap.add_argument("--concurrency", type=int, default=16, help="client threads")
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--max-batch", type=int, default=None, help="serve's --max-batch (default: 8 CPU, 256 CUDA)")
    ap.add_argument("--batch-wait-ms", type=float, default=10.0, help="serve's --batch-wait-ms")
    ap.add_argument("--ignore-eos", action="store_true", help="every request runs to --max-tokens")
    ap.add_argument("--json", default=None, help="also write the figures to this JSON file")
    args = ap.parse_args()

    from ppt.models.device import resolve_device
    from ppt.remote.batching import ModelService
    from ppt.remote.server import describe_transport, start_server

    dev = resolve_device(args.device)
    info = {"runtime": args.runtime, "compile": args.compile, "device": str(dev), "model": args.model}
    reason = skip_reason(args, dev)
    if reason:
        print(f"skipped: --runtime {args.runtime}: {reason}")
        if args.json:
            Path(args.json).write_text(json.dumps({**info, "skipped": reason}, indent=1))
        return
    t0 = time.perf_counter()
    gen = generator(args, dev)
    if args.ignore_eos:
        gen.eos_ids = []
    load_s = time.perf_counter() - t0
    max_batch = args.max_batch or gen.batch_size or 256  # as ppt serve
    service = ModelService(gen, "bench", max_batch=max_batch, max_wait_s=args.batch_wait_ms / 1000)
    # warm-up (and compile): a full batch of the measured requests' shape, as the first clients would send
    timed = Timed(service)
    server, thread = start_server(timed, host="127.0.0.1", port=0)
    url = server.base_url  # http://127.0.0.1:PORT/v1
    try:
        t1 = time.perf_counter()
        client(url, min(args.n, max_batch), min(args.concurrency, max_batch), args.max_tokens)
        warm_s = time.perf_counter() - t1
        timed.first = timed.last = None
        timed.tokens = 0
        t2 = time.perf_counter()
        res = client(url, args.n, args.concurrency, args.max_tokens)
        wall = time.perf_counter() - t2
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
        service.close()
    window = timed.last - timed.first if timed.first is not None and timed.last is not None else float("nan")
    d = gen.describe()
    info.update(
        model=gen.name,
        device=str(d["device"]),
        dtype=str(d.get("dtype")),
        transport=describe_transport(server.transport),
        layers=getattr(getattr(getattr(gen, "model", None), "config", None), "num_hidden_layers", args.layers),
        requests=args.n,
        concurrency=args.concurrency,
        max_tokens=args.max_tokens,
        max_batch=max_batch,
        load_s=load_s,
        warmup_s=warm_s,
        wall_s=wall,
        window_s=window,
        ok=res["ok"],
        failed=res["failed"],
        completion_tokens=timed.tokens,
        requests_per_s=res["ok"] / window,
        tokens_per_s=timed.tokens / window,
        batch_sizes=service.batches[-50:],
        compiled_step=bool(getattr(gen, "_step_forward", None) is not None),
    )
    print(
        f"ppt serve {info['model']} [{info['runtime']}{', compile' if args.compile else ''}] on {info['device']} "
        f"{info['dtype']} ({info['transport']}): {args.n} requests x {args.max_tokens} tokens at concurrency "
        f"{args.concurrency}, max batch {max_batch}: {info['requests_per_s']:.1f} req/s, "
        f"{info['tokens_per_s']:,.0f} generated tok/s ({window:.2f} s; load {load_s:.1f} s, warm-up {warm_s:.1f} s)"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(info, indent=1))


def client(url: str, n: int, concurrency: int, max_tokens: int) -> dict:
    r = subprocess.run(
        [sys.executable, "-c", CLIENT, url, str(n), str(concurrency), str(max_tokens)],
        capture_output=True,
        text=True,
        timeout=3600,
    )
    if r.returncode != 0 or not r.stdout.strip():
        raise SystemExit(f"the client failed ({r.returncode}): {r.stderr[-2000:]}")
    res = json.loads(r.stdout.strip().splitlines()[-1])
    if res["failed"]:
        raise SystemExit(f"{res['failed']} of {n} requests failed: {r.stderr[-2000:]}")
    return res


if __name__ == "__main__":
    main()
