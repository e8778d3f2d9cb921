"""ProSan beside SanText+, CusText+ and RANTEXT on PII-inserted BBC prompts: PHR and answer utility.

One reproducible script (seeded everywhere), run from the repository root:

    PYTHONPATH=$PWD nice -n 5 python docs/prosan/run.py --out docs/prosan

What it does (sizes are arguments; the committed results used the defaults below):
1. ``make_pii`` (the library behind ``ppt eval make-pii``): ``--n-eval`` prompts (seed 0) for evaluation and
   the next ``--n-train`` prompts (other BBC sentences) as ProSan-lite's training set.
2. Anonymize the evaluation prompts with ProSan at its defaults and two more settings (one mechanism
   instance; the LM scores do not depend on lambda/tau/scale and are memoised), with SanText+, CusText+ and
   RANTEXT at eps 1, 3, 6 (their default spaces), and with ProSan-lite distilled from ProSan's pairs on the
   training prompts for ``--distill-steps`` steps.
3. PHR (listed private items absent from each output; Wilson and bootstrap-over-records 95% intervals).
4. Utility: smollm2's greedy answers (``--answer-tokens`` new tokens, chat template) to the original and to
   each anonymized prompt; Rouge-L F1 and MiniLM cosine between the two answers, mean with a 95% normal
   interval over prompts.
5. Throughput (prompts/s, wall clock on this machine, models loaded beforehand) of prosan (scores computed,
   seeded = one record at a time) and prosan-lite.

Writes results.csv, results.md, phr_utility.png and config.json to --out.

Threads: on a busy CPU (load average >= cores) the whole run uses one intra-op thread (ppt's ``threads=auto``
rule: torch's threads otherwise wait for each other at every operator). Splitting the work: ``--part
baselines`` (a second process, started beside the main one) computes the baselines' outputs and the answers
to the original and baseline prompts into ``--answers-dir``; the main run (``--part all``) reads answers
found there (waiting up to ``--wait-minutes`` for those the other part is computing) and computes the rest.
Answers are keyed by method label and a hash of the prompts, so a stale file is never read.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
import torch

SEED = 0


def log(msg: str) -> None:
    print(f"[prosan-exp {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def sanitize(mech, texts: list[str], seed: int = SEED, batch: int = 16, reproducible: bool = True) -> tuple[list[str], float]:
    from ppt.rng import record_generator

    out, t0 = [], time.perf_counter()
    for s in range(0, len(texts), batch):
        part = texts[s : s + batch]
        res = mech.sanitize_batch(part, [record_generator(seed, s + i) for i in range(len(part))], reproducible=reproducible)
        out += [r.text for r in res]
    return out, time.perf_counter() - t0


def phr_summary(records: list[dict], outputs: list[str]) -> dict:
    from ppt.io import Record
    from ppt.stages.phr import PhrStage

    st = PhrStage()
    st([Record(line_no=i, id=r["id"], data={**r, "text": o}, text=o) for i, (r, o) in enumerate(zip(records, outputs))])
    return st.summary()


def mean_ci(x: list[float]) -> tuple[float, float, float]:
    a = np.asarray(x, dtype=np.float64)
    m = float(a.mean())
    h = 1.96 * float(a.std(ddof=1)) / math.sqrt(len(a)) if len(a) > 1 else float("nan")
    return m, m - h, m + h


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="docs/prosan")
    ap.add_argument("--n-eval", type=int, default=20)
    ap.add_argument("--n-train", type=int, default=10)
    ap.add_argument("--answer-tokens", type=int, default=16)
    ap.add_argument("--distill-steps", type=int, default=6)
    ap.add_argument("--eps", type=float, nargs="+", default=[1.0, 3.0, 6.0])
    ap.add_argument("--baselines", nargs="+", default=["santext+", "custext+", "rantext"])
    ap.add_argument("--distill-seconds", type=float, default=None, help="wall-clock budget of the distillation")
    ap.add_argument("--distill-batch", type=int, default=4)
    ap.add_argument("--distill-train-layers", type=int, default=None, help="train only the top k decoder layers")
    ap.add_argument("--lite-max-new-tokens", type=int, default=None,
                    help="one max_new_tokens for every prompt lets prosan-lite batch its greedy generation")
    ap.add_argument("--lite-batch", type=int, default=8, help="prompts per batched prosan-lite generation")
    ap.add_argument("--part", choices=("all", "baselines", "lite", "lite-eval"), default="all")
    ap.add_argument("--answers-dir", default=None, help="answers shared between the parts (default OUT/answers)")
    ap.add_argument("--wait-minutes", type=float, default=0.0)
    ap.add_argument("--n-utility", type=int, default=None, help="answer utility on the first N evaluation prompts (PHR on all)")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(SEED)
    t_start = time.perf_counter()
    load_start = os.getloadavg()
    from ppt.mechanisms.prosan.threads import resolve_threads

    threads = resolve_threads("auto")
    torch.set_num_threads(threads)
    log(f"torch threads {threads} (load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores)")

    from ppt.experiments.pii import make_pii
    from ppt.mechanisms import get_mechanism

    recs = make_pii(args.n_eval + args.n_train, seed=SEED)
    ev, tr = recs[: args.n_eval], recs[args.n_eval :]
    texts = [r["text"] for r in ev]
    outputs: dict[str, list[str]] = {}
    rows: list[dict] = []
    timing: dict[str, float] = {}
    adir = Path(args.answers_dir) if args.answers_dir else out / "answers"
    adir.mkdir(parents=True, exist_ok=True)
    if args.part == "baselines":
        baseline_part(args, texts, adir)
        return

    run_key = hashlib.sha256(json.dumps([texts, [r["text"] for r in tr], args.distill_steps, args.distill_seconds,
                                         args.distill_batch, args.lite_max_new_tokens, args.distill_train_layers]).encode()).hexdigest()[:12]

    def cached(key: str, fn):
        """``fn()`` (a JSON-able value), kept in the answers dir so a re-run after a crash resumes."""
        f = adir / f"step-{''.join(c if c.isalnum() else '_' for c in key)}.{run_key}.json"
        if f.exists():
            log(f"{key}: reusing {f.name}")
            return json.loads(f.read_text())
        v = fn()
        f.write_text(json.dumps(v))
        return v

    lite_dir = Path(os.environ.get("PPT_PROSAN_LITE_DIR", "/tmp/ppt-prosan-lite"))
    if args.part == "lite-eval":  # another process: prosan-lite on the evaluation prompts, once distilled
        dfile = adir / f"step-distill.{run_key}.json"
        while not dfile.exists():
            time.sleep(10)
        lite = get_mechanism("prosan-lite", 1.0, model=str(lite_dir), quiet=True, device="cpu",
                             max_new_tokens=args.lite_max_new_tokens)
        lite.prepare()
        cached("prosan-lite", lambda m=lite: sanitize(m, texts, batch=args.lite_batch, reproducible=args.lite_max_new_tokens is None))
        log("lite-eval part done")
        return
    if args.part == "lite":  # a second process: ProSan's pairs and the distillation
        m = get_mechanism("prosan", 1.0, quiet=True, device="cpu")
        m.prepare()
        train_lite(args, m, tr, Path(os.environ.get("PPT_PROSAN_LITE_DIR", "/tmp/ppt-prosan-lite")), cached,
                   adir / f"step-distill.{run_key}.json")
        log("lite part done")
        return

    # ---- ProSan: defaults and two more settings (one instance, scores memoised) -----------------
    settings = [("prosan (defaults: lambda 0.8, tau 0.9, scale 1)", {}),
                ("prosan lambda 0.4", {"lam": 0.4}),
                ("prosan lambda 2 (all eligible), scale 10", {"lam": 2.0, "scale": 10.0})]
    mech = get_mechanism("prosan", 1.0, quiet=True, device="cpu")
    mech.prepare()
    mech.score_cache = {}
    defaults = (mech.lam, mech.tau, mech.scale)
    for label, change in settings:
        mech.lam, mech.tau, mech.scale = defaults
        for k, v in change.items():
            setattr(mech, k, v)
        outs, secs = cached(label, lambda m=mech: sanitize(m, texts))
        outputs[label] = outs
        timing[label] = secs
        log(f"{label}: {secs:.1f}s")
        rows.append({"method": label, "family": "prosan", "eps": "", "lambda": mech.lam, "tau": mech.tau, "scale": mech.scale,
                     "seconds": round(secs, 2)})
    mech.lam, mech.tau, mech.scale = defaults
    prosan_pps = len(texts) / timing[settings[0][0]]
    if args.wait_minutes:  # answer ProSan's outputs while the other parts run (answers are cached per prompt)
        early = Answerer(args.answer_tokens, adir)
        for label, _ in settings:
            early(label, outputs[label][: args.n_utility or len(texts)])

    # ---- ProSan-lite: pairs from ProSan on the training prompts, distilled (here or by --part lite)
    lite_dir = Path(os.environ.get("PPT_PROSAN_LITE_DIR", "/tmp/ppt-prosan-lite"))
    dfile = adir / f"step-distill.{run_key}.json"
    deadline = time.time() + 60 * args.wait_minutes
    while not dfile.exists() and time.time() < deadline:
        time.sleep(10)
    res, distill_secs, sig, _train_secs = train_lite(args, mech, tr, lite_dir, cached, dfile)
    del mech
    lfile = adir / f"step-prosan_lite.{run_key}.json"
    while not lfile.exists() and time.time() < deadline:  # the lite-eval part's outputs
        time.sleep(10)
    lite_pps = float("nan")
    if lfile.exists() or args.wait_minutes == 0:
        lite = get_mechanism("prosan-lite", 1.0, model=str(lite_dir), quiet=True, device="cpu",
                             max_new_tokens=args.lite_max_new_tokens)
        lite.prepare()
        # greedy: batching changes only float rounding in padded batches; it needs one max_new_tokens for all
        outs, secs = cached("prosan-lite", lambda m=lite: sanitize(m, texts, batch=args.lite_batch,
                                                            reproducible=args.lite_max_new_tokens is None))
        outputs["prosan-lite"] = outs
        rows.append({"method": "prosan-lite", "family": "prosan-lite", "eps": "", "seconds": round(secs, 2)})
        lite_pps = len(texts) / secs
        log(f"prosan-lite: {secs:.1f}s")
        del lite
    else:
        log("prosan-lite: the lite-eval part did not finish in time; no prosan-lite row")

    # ---- baselines ----------------------------------------------------------------------------
    for name in args.baselines:
        for eps in args.eps:
            try:
                m = get_mechanism(name, eps, quiet=True, device="cpu")
                m.prepare()
                outs, secs = sanitize(m, texts)
            except Exception as e:  # noqa: BLE001 - a missing table must not lose the other rows
                log(f"{name} eps {eps}: skipped ({type(e).__name__}: {e})")
                continue
            label = f"{name} eps {eps:g}"
            outputs[label] = outs
            rows.append({"method": label, "family": name, "eps": eps, "seconds": round(secs, 2)})
            log(f"{label}: {secs:.1f}s")
            del m
    (out / "outputs.sample.json").write_text(json.dumps({k: v[:3] for k, v in outputs.items()}, indent=1))

    # ---- PHR ------------------------------------------------------------------------------------
    raw_phr = phr_summary(ev, texts)
    for row in rows:
        s = phr_summary(ev, outputs[row["method"]])
        row.update({"phr": s["phr"], "phr_lo": s["ci95_wilson"][0], "phr_hi": s["ci95_wilson"][1],
                    "phr_boot_lo": s["ci95_bootstrap_records"][0], "phr_boot_hi": s["ci95_bootstrap_records"][1],
                    **{f"phr_{t}": v["phr"] for t, v in s["by_type"].items()}})

    from ppt.experiments.plot import write_csv

    write_csv(rows, out / "results.csv")  # PHR first: kept if the utility step is cut short
    (out / "throughput.json").write_text(json.dumps({"prosan": prosan_pps, "prosan-lite": lite_pps, "n": len(texts)}))
    log("PHR written")

    # ---- utility: smollm2's answers to original vs anonymized prompts ----------------------------
    from ppt.metrics.rouge import rouge_l
    from ppt.metrics.similarity import paired_cosine
    from ppt.models.encoder import load_sentence_encoder

    answers = Answerer(args.answer_tokens, adir)
    nu = args.n_utility or len(texts)
    partner = {"original"} | {f"{n} eps {e:g}" for n in args.baselines for e in args.eps}
    for row in rows:  # ours first: the baseline part computes its own meanwhile
        if row["method"] not in partner:
            answers(row["method"], outputs[row["method"]][:nu])
    ref = answers("original", texts[:nu], wait=args.wait_minutes)
    enc = load_sentence_encoder("minilm", device="cpu")
    for row in rows:
        t0 = time.perf_counter()
        ans = answers(row["method"], outputs[row["method"]][:nu], wait=args.wait_minutes)
        rl = [rouge_l(a, b)["f1"] for a, b in zip(ans, ref)]
        cs = paired_cosine(enc, ans, ref)
        row["rouge_l"], row["rouge_l_lo"], row["rouge_l_hi"] = mean_ci(rl)
        row["cosine"], row["cosine_lo"], row["cosine_hi"] = mean_ci(cs)
        log(f"{row['method']}: answers {time.perf_counter() - t0:.1f}s, rouge-L {row['rouge_l']:.3f}, cos {row['cosine']:.3f}")

    # ---- write ------------------------------------------------------------------------------------
    write_csv(rows, out / "results.csv")
    lines = ["| method | PHR [95% Wilson] | PHR bootstrap 95% | Rouge-L (answers) | MiniLM cos (answers) | s |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['method']} | {r['phr']:.3f} [{r['phr_lo']:.3f}, {r['phr_hi']:.3f}] | "
                     f"[{r['phr_boot_lo']:.3f}, {r['phr_boot_hi']:.3f}] | {r['rouge_l']:.3f} ± {r['rouge_l'] - r['rouge_l_lo']:.3f} | "
                     f"{r['cosine']:.3f} ± {r['cosine'] - r['cosine_lo']:.3f} | {r['seconds']:.0f} |")
    types = sorted({k[4:] for r in rows for k in r if k.startswith("phr_") and k[4:] not in ("lo", "hi", "boot_lo", "boot_hi")})
    lines += ["", "PHR by item type:", "", "| method | " + " | ".join(types) + " |", "|---|" + "---|" * len(types)]
    for r in rows:
        lines.append(f"| {r['method']} | " + " | ".join(f"{r.get('phr_' + t, float('nan')):.2f}" for t in types) + " |")
    (out / "results.md").write_text("\n".join(lines) + "\n")
    config = {
        "n_eval": len(ev), "n_train": len(tr), "items_eval": raw_phr["items"], "raw_prompt_phr": raw_phr["phr"],
        "seed": SEED, "answer_model": "smollm2 (greedy, chat template)", "answer_tokens": args.answer_tokens,
        "n_utility": args.n_utility or len(ev),
        "encoder": "minilm", "eps": args.eps, "baselines": args.baselines,
        "prosan_settings": [{"label": lab, **chg} for lab, chg in settings],
        "prosan_params": {k: v for k, v in get_mechanism("prosan", 1.0, quiet=True).params().items()
                          if k in ("model", "mlm", "tagger", "lambda", "tau", "max_candidates", "similarity", "scale", "response_tokens", "pos")},
        "distill": {"base_model": "smollm2", "pairs": res.pairs, "steps": res.steps, "batch_size": args.distill_batch, "lr": 1e-4,
                    "loss_first": res.losses[0], "loss_last": res.losses[-1], "seconds": round(distill_secs, 1),
                    "budget_seconds": args.distill_seconds, "train_layers": args.distill_train_layers, "teacher": sig,
                    "loss_mean_first_10": float(np.mean(res.losses[:10])), "loss_mean_last_10": float(np.mean(res.losses[-10:]))},
        "throughput_prompts_per_s": {"prosan": round(prosan_pps, 4), "prosan-lite": round(lite_pps, 4)},
        "prosan_lite_generation": {"batched": args.lite_max_new_tokens is not None, "max_new_tokens": args.lite_max_new_tokens},
        "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(), "torch_threads": torch.get_num_threads(),
                    "loadavg_at_start": load_start, "loadavg_at_end": os.getloadavg()},
        "seconds_total": round(time.perf_counter() - t_start, 1),
    }
    (out / "config.json").write_text(json.dumps(config, indent=1))
    plot(rows, out / "phr_utility.png")
    log(f"done in {config['seconds_total']:.0f}s")


def train_lite(args, mech, tr: list[dict], lite_dir: Path, cached, dfile: Path):
    """ProSan's pairs on the training prompts, then the distilled model in ``lite_dir`` (both cached)."""
    from ppt.mechanisms.prosan.distill import DistillConfig, distill

    train_out, train_secs = cached("train", lambda: sanitize(mech, [r["text"] for r in tr], seed=SEED + 1))
    log(f"prosan on {len(tr)} training prompts: {train_secs:.1f}s")
    sig = "prosan|" + "|".join(f"{k}:{v}" for k, v in mech.signature_params().items())

    def run_distill():
        t0 = time.perf_counter()
        r = distill(list(zip([r["text"] for r in tr], train_out)), lite_dir,
                    DistillConfig(base_model="smollm2", epochs=100, max_steps=args.distill_steps, batch_size=args.distill_batch,
                                  checkpoint_every=0, device="cpu", max_seconds=args.distill_seconds,
                                  train_layers=args.distill_train_layers), teacher=sig,
                    progress=lambda s, t, loss: log(f"distill step {s}: loss {loss:.3f}") if s % 10 == 0 else None)
        return {"steps": r.steps, "pairs": r.pairs, "losses": r.losses, "secs": time.perf_counter() - t0}

    d = cached("distill", run_distill) if (lite_dir / "prosan_lite.json").exists() else None
    if d is None:
        d = run_distill()
        dfile.write_text(json.dumps(d))
    from types import SimpleNamespace

    log(f"distilled {d['steps']} steps in {d['secs']:.1f}s, loss {d['losses'][0]:.3f} -> {d['losses'][-1]:.3f}")
    return SimpleNamespace(**d), d["secs"], sig, train_secs


class Answerer:
    """smollm2's greedy answers (chat template), cached per label and prompt in ``adir`` (so parts of a run,
    and a subset of the prompts, reuse answers already computed; each answer is computed once)."""

    def __init__(self, tokens: int, adir: Path):
        self.tokens, self.adir, self.gen = tokens, adir, None

    def path(self, label: str) -> Path:
        safe = "".join(c if c.isalnum() else "_" for c in label)
        return self.adir / f"ans-{safe}.t{self.tokens}.json"

    @staticmethod
    def key(prompt: str) -> str:
        return hashlib.sha256(prompt.encode()).hexdigest()[:20]

    def __call__(self, label: str, prompts: list[str], wait: float = 0.0) -> list[str]:
        p = self.path(label)
        deadline = time.time() + 60 * wait
        while True:
            have = json.loads(p.read_text()) if p.exists() else {}
            if all(self.key(q) in have for q in prompts) or time.time() >= deadline:
                break
            time.sleep(10)
        todo = list(dict.fromkeys(q for q in prompts if self.key(q) not in have))
        if todo:
            from ppt.lm.generate import LocalGenerator, SamplingParams

            if self.gen is None:
                self.gen = LocalGenerator.load("smollm2", device="cpu", batch_size=8)
            t0 = time.perf_counter()
            res = self.gen.generate([[{"role": "user", "content": q}] for q in todo],
                                    SamplingParams(max_new_tokens=self.tokens, temperature=0.0))
            have = json.loads(p.read_text()) if p.exists() else {}
            have.update({self.key(q): (r.text if hasattr(r, "text") else "") for q, r in zip(todo, res)})
            tmp = p.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(have))
            tmp.rename(p)
            log(f"{label}: {len(todo)} answers {time.perf_counter() - t0:.1f}s")
        return [have[self.key(q)] for q in prompts]


def baseline_part(args, texts: list[str], adir: Path) -> None:
    """The second process: answers to the original prompts and to every baseline's outputs."""
    from ppt.mechanisms import get_mechanism

    answers = Answerer(args.answer_tokens, adir)
    n = args.n_utility or len(texts)
    answers("original", texts[:n])
    for name in args.baselines:
        for eps in args.eps:
            m = get_mechanism(name, eps, quiet=True, device="cpu")
            m.prepare()
            outs, _ = sanitize(m, texts)
            answers(f"{name} eps {eps:g}", outs[:n])
            del m
    log("baseline part done")


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    marks = {"prosan": "o", "prosan-lite": "*", "santext+": "s", "custext+": "^", "rantext": "D"}
    for ax, key, name in ((axes[0], "rouge_l", "Rouge-L of answers (anonymized vs original)"),
                          (axes[1], "cosine", "MiniLM cosine of answers")):
        for r in rows:
            x, y = r["phr"], r[key]
            ax.errorbar(x, y, xerr=[[x - r["phr_lo"]], [r["phr_hi"] - x]], yerr=[[y - r[key + "_lo"]], [r[key + "_hi"] - y]],
                        fmt=marks.get(r["family"], "o"), capsize=2, label=r["method"])
        ax.set_xlabel("PHR (share of private items absent from the output)")
        ax.set_ylabel(name)
        ax.grid(alpha=0.3)
    axes[1].legend(fontsize=6, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
