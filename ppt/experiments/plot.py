"""The sweep's result files: results.csv (fixed leading columns), the Markdown table beside it, and the
privacy-utility figure."""

from __future__ import annotations

import csv
from pathlib import Path

COLUMNS = [
    "mechanism",
    "eps",
    "space",
    "n_docs",
    "n_pairs",
    "knn_top1_privacy",
    "knn_top1_ci_lo",
    "knn_top1_ci_hi",
    "knn_top10_privacy",
    "knn_top10_ci_lo",
    "knn_top10_ci_hi",
    "mti_privacy",
    "mti_trials",
    "cosine",
    "rouge_l",
    "ngram1_leak",
    "ngram2_leak",
    "ngram3_leak",
    "retention",
    "n_w_mean",
    "n_w_probe_tokens",
    "n_w_draws",
    "perturbed_per_doc",
    "dropped_per_doc",
    "alignment",
    "seconds_sanitize",
    "seconds_total",
]


def num(v) -> float:
    """A CSV cell (or a row value) as a float; NaN when empty or not a number."""
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def fmt(v, nd: int = 3) -> str:
    """A number with ``nd`` decimals; "-" when empty or not a number."""
    try:
        return f"{float(v):.{nd}f}"
    except (TypeError, ValueError):
        return "-"


def write_csv(rows: list[dict], path: Path, columns: list[str] = COLUMNS) -> None:
    """The rows as CSV (``columns`` first, then any other key in order of appearance; floats to 4
    decimals), written to a temporary file and renamed."""
    cols = list(dict.fromkeys(columns + [c for r in rows for c in r]))
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=cols)
        w.writeheader()
        for r in rows:
            w.writerow(
                {
                    c: (f"{v:.4f}" if isinstance(v, float) else ("" if v is None else v))
                    for c, v in ((c, r.get(c)) for c in cols)
                }
            )
    tmp.replace(path)


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def markdown_table(rows: list[dict]) -> str:
    """The headline columns of the sweep as a Markdown table (written beside the CSV)."""
    f = fmt
    head = (
        "| mechanism | eps | KNN top-1 privacy [95% CI] | KNN top-10 privacy [95% CI] | cosine | Rouge-L F1 "
        "| 1/2/3-gram leak | retention | N_w | tokens scored |"
    )
    lines = [head, "|" + "|".join(["---"] * 10) + "|"]
    for r in rows:
        lines.append(
            f"| {LABELS.get(r['mechanism'], r['mechanism'])} | {float(r['eps']):g} "
            f"| {f(r['knn_top1_privacy'])} [{f(r['knn_top1_ci_lo'])}, {f(r['knn_top1_ci_hi'])}] "
            f"| {f(r['knn_top10_privacy'])} [{f(r['knn_top10_ci_lo'])}, {f(r['knn_top10_ci_hi'])}] "
            f"| {f(r['cosine'])} | {f(r['rouge_l'])} "
            f"| {f(r['ngram1_leak'], 2)}/{f(r['ngram2_leak'], 2)}/{f(r['ngram3_leak'], 2)} "
            f"| {f(r['retention'])} | {f(r.get('n_w_mean'), 1)} | {r['n_pairs']} |"
        )
    return "\n".join(lines) + "\n"


LABELS = {
    "rantext": "RANTEXT",
    "santext+": "SanText+",
    "santext": "SanText",
    "custext+": "CusText+",
    "custext": "CusText",
    "tem": "TEM",
    "cape": "Cape",
    "prosan": "ProSan",
    "prosan-lite": "ProSan-lite",
}


def plot(rows: list[dict], path: Path, y: str = "cosine", title: str | None = None) -> None:
    """Two panels (x = KNN top-1 and top-10 privacy), y = a utility column; one line per mechanism,
    points labelled with eps."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    mechs = list(dict.fromkeys(r["mechanism"] for r in rows))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.4), sharey=True)
    ylabel = {
        "cosine": "utility: cosine(sanitized, raw prompt), MiniLM",
        "rouge_l": "utility: Rouge-L F1 vs raw prompt",
    }.get(y, y)
    for ax, k in zip(axes, (1, 10)):
        for m in mechs:
            pts = sorted((num(r["eps"]), num(r[f"knn_top{k}_privacy"]), num(r[y])) for r in rows if r["mechanism"] == m)
            xs, ys = [p[1] for p in pts], [p[2] for p in pts]
            (line,) = ax.plot(xs, ys, marker="o", label=LABELS.get(m, m))
            for e, xv, yv in pts:
                ax.annotate(
                    f"{e:g}", (xv, yv), textcoords="offset points", xytext=(4, 4), fontsize=7, color=line.get_color()
                )
        if y in ("cosine", "rouge_l"):  # the raw prompt itself: full utility, no privacy
            ax.plot([0.0], [1.0], marker="*", markersize=11, color="grey", linestyle="none", label="raw prompt (no DP)")
        ax.set_xlabel(f"privacy = 1 - KNN top-{k} success (own embedding space)")
        ax.set_xlim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(ylabel)
    axes[0].legend(loc="upper right", fontsize=8)
    fig.suptitle(title or "Privacy-utility trade-off (labels: eps per token); upper right is better", fontsize=10)
    fig.tight_layout()
    tmp = path.with_name(path.stem + ".tmp" + path.suffix)
    fig.savefig(tmp, dpi=130)
    plt.close(fig)
    tmp.replace(path)
