"""Benchmark `ppt query` against the loopback server: requests/s at --concurrency 1 vs 8.

The server runs in this process; the client is the real `ppt query` executable in a subprocess (no
shared GIL). Rates are measured on the server side, from the first request's arrival to the last
answer, so process start-up is left out (wall time including start-up is printed too).

Three settings, side by side in one run:
  echo, LLM-like latency  each answer takes --latency-ms (a remote LLM's time to answer): the ideal
                          speed-up of 8 workers is 8x; anything less is client overhead
  echo, no latency        the client's own ceiling (JSON, HTTP, journal-free stream) at 1 and 8 workers
  model (--model NAME)    optional: `ppt serve`'s ModelService on a real model, where the server batches
                          concurrent requests (the server's own speed dominates here)

    python bench/query.py                       # echo only, 200 requests, 50 ms latency
    python bench/query.py --model smollm2 --n-model 16 --max-tokens 16
    python bench/query.py --transport both      # the same runs on uvicorn+starlette and on stdlib
    python bench/query.py --model smollm2 --random-weights --model-only --device cuda   # no weights needed

``--random-weights`` serves a model of --model's shape built from its config and tokenizer alone, with
seeded random weights (bench/random_lm.py; ``--layers N`` cuts it to N layers).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ppt.testing import EchoService, loopback

PPT = [shutil.which("ppt")] if shutil.which("ppt") else [sys.executable, "-m", "ppt.cli.main"]


class Timed:
    """Wrap a service: remember when the first request arrived and the last answer left."""

    def __init__(self, inner):
        self.inner, self.name, self.features = inner, inner.name, inner.features
        self.lock = threading.Lock()
        self.first = self.last = None

    def complete(self, body, kind, gone=None):
        now = time.perf_counter()
        with self.lock:
            self.first = now if self.first is None else min(self.first, now)
        out = self.inner.complete(body, kind, gone)
        with self.lock:
            self.last = time.perf_counter()
        return out

    def close(self):
        self.inner.close()


def run(service, n: int, concurrency: int, max_tokens: int, transport: str = "auto") -> dict:
    data = "".join(
        json.dumps({"id": i, "text": f"record number {i} with a few words of text"}) + "\n" for i in range(n)
    )
    timed = Timed(service)
    with loopback(timed, transport=transport) as (_, url):
        t0 = time.perf_counter()
        r = subprocess.run(
            [
                *PPT,
                "query",
                "--base-url",
                url,
                "--model",
                "m",
                "--allow-raw",
                "-q",
                "--concurrency",
                str(concurrency),
                "--max-tokens",
                str(max_tokens),
                "--batch-size",
                str(max(64, 8 * concurrency)),
            ],
            input=data,
            capture_output=True,
            text=True,
            timeout=3600,
        )
        wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"ppt query failed ({r.returncode}): {r.stderr[-2000:]}")
    assert len(r.stdout.splitlines()) == n
    window = timed.last - timed.first
    return {"n": n, "c": concurrency, "req_s": n / window, "wall_s": wall, "window_s": window}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=200, help="requests per echo run")
    ap.add_argument("--latency-ms", type=float, default=50.0, help="simulated LLM latency per answer")
    ap.add_argument("--concurrency", default="1,8", help="comma-separated levels (first one is the baseline)")
    ap.add_argument("--model", default=None, help="also benchmark a real model served by ModelService")
    ap.add_argument("--n-model", type=int, default=16)
    ap.add_argument("--max-tokens", type=int, default=16)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--model-only", action="store_true", help="skip the echo settings")
    ap.add_argument("--random-weights", action="store_true", help="--model's shape with random weights")
    ap.add_argument("--layers", type=int, default=None, help="with --random-weights: this many layers")
    ap.add_argument(
        "--transport",
        default="auto",
        choices=["auto", "starlette", "stdlib", "both"],
        help="the loopback server's transport (both: each setting on each, with their ratio)",
    )
    args = ap.parse_args()
    levels = [int(x) for x in args.concurrency.split(",")]

    settings = (
        []
        if args.model_only
        else [
            (f"echo, {args.latency_ms:g} ms latency", lambda: EchoService(delay_s=args.latency_ms / 1000), args.n),
            ("echo, no latency", lambda: EchoService(), args.n),
        ]
    )
    if args.model:
        from ppt.lm.generate import LocalGenerator
        from ppt.remote.server import ModelService

        if args.random_weights:
            from random_lm import random_causal_lm

            from ppt.models.device import resolve_device

            dev = resolve_device(args.device)
            model, tok = random_causal_lm(
                args.model, layers=args.layers, device=dev, dtype="auto" if dev.type == "cuda" else None
            )
            gen = LocalGenerator(model, tok, name=model.config._name_or_path, batch_size=max(levels))
        else:
            gen = LocalGenerator.load(args.model, device=args.device, batch_size=max(levels))
        service = ModelService(gen, args.model, max_batch=max(levels), max_wait_s=0.01)
        service.complete({"messages": [{"role": "user", "content": "warm up"}], "max_tokens": 2}, "chat")
        settings.append(
            (
                f"model {args.model} ({gen.describe()['device']}), {args.max_tokens} tokens",
                lambda: service,
                args.n_model,
            )
        )

    transports = ["starlette", "stdlib"] if args.transport == "both" else [args.transport]
    print(f"{'setting':<44} {'conc':>4} {'transport':>10} {'req/s':>9} {'server window s':>16} {'wall s':>8}")
    for label, make, n in settings:
        rates = {}
        for c in levels:
            for t in transports:
                res = run(make(), n, c, args.max_tokens, t)
                rates[c, t] = res["req_s"]
                print(
                    f"{label:<44} {c:>4} {t:>10} {res['req_s']:>9.1f} {res['window_s']:>16.2f} {res['wall_s']:>8.2f}",
                    flush=True,
                )
        if hasattr(make(), "batches"):
            print(f"{'':<44} server batch sizes: {make().batches}")
        base = levels[0]
        for t in transports:
            for c in levels[1:]:
                print(f"{'':<44} ratio c{c}/c{base} ({t}): {rates[c, t] / rates[base, t]:.2f}x")
        if len(transports) == 2:
            for c in levels:
                print(f"{'':<44} ratio starlette/stdlib at c{c}: {rates[c, 'starlette'] / rates[c, 'stdlib']:.2f}x")


if __name__ == "__main__":
    main()
