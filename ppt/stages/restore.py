"""`ppt restore`: put the real values back into an answer about surrogates.

``ppt sanitize --protect detected --mapping FIELD`` keeps, locally, each replaced span's surrogate and original;
the remote model answers about the surrogates; restore replaces every surrogate it finds in the answer
(whole words, case-insensitively, longest first, a word's plural too) by its original, so the user reads an
answer about their own data. A surrogate that stands for two different originals in one record is ambiguous
and left as it is.
Runs only where the mapping is (it holds the raw values): the output is local too.
"""

from __future__ import annotations

import re
from typing import Any

from ppt.io import Record, RecordError, stamp, stamp_block
from ppt.stages.base import Stage


def restore_text(text: str, mapping: list[dict[str, Any]]) -> tuple[str, int]:
    """``text`` with each mapped surrogate replaced by its original; and how many replacements were made."""
    table: dict[str, str] = {}
    ambiguous: set[str] = set()
    for m in mapping:
        sur, orig = m.get("surrogate"), m.get("original")
        if not isinstance(sur, str) or not isinstance(orig, str) or not sur.strip():
            continue
        key = sur.lower()
        # one value written twice ("Green Card", "green card": one placeholder) is not two originals
        if key in table and _same(table[key]) != _same(orig):
            ambiguous.add(key)
        table.setdefault(key, orig)
    for key in ambiguous:
        table.pop(key)
    if not table:
        return text, 0
    # a typed placeholder (<PERSON_1>) also as a model may write it back: without its brackets, or cut short
    # by the answer's token limit (<PERSON_1): its core is a key too, and brackets around a match go with it
    cores = {m.group(1): orig for key, orig in table.items() if (m := _PLACEHOLDER.fullmatch(key))}
    table.update((core, orig) for core, orig in cores.items() if core not in table)
    # a word surrogate as a model may inflect it ("authors" for the surrogate "author"): the plural ending is
    # matched and the original put back as it was written in the prompt (a possessive 's needs no rule: the
    # apostrophe ends the word)
    words = sorted(table, key=len, reverse=True)
    alts = "|".join(re.escape(w) for w in words)
    pattern = re.compile(rf"<?(?<!\w)(?P<key>{alts})(?P<plural>(?<=[a-z])e?s)?(?!\w)>?", re.IGNORECASE)
    count = 0

    def put_back(m: re.Match) -> str:
        nonlocal count
        count += 1
        key = m.group("key")
        orig = table.get(key.lower()) or table.get(key.lower().strip("<>"), m.group(0))
        if key.startswith("<"):  # a whole placeholder: brackets around it are the text's ("<<EMAIL_1>>")
            return m.group(0)[: m.start("key") - m.start()] + orig + m.group(0)[m.end("key") - m.start() :]
        return orig

    return pattern.sub(put_back, text), count


_PLACEHOLDER = re.compile(r"<([a-z][a-z_]*_\d+)>")  # keys are lower-cased


def _same(value: str) -> str:
    return " ".join(value.lower().split())


def stamped_mapping_field(data: dict) -> str | None:
    """The field ``ppt sanitize --mapping`` named, from the record's ``ppt.sanitize`` stamp."""
    name = (stamp_block(data, "sanitize") or {}).get("mapping_field")
    return name if isinstance(name, str) else None


class RestoreStage(Stage):
    name = "restore"

    def __init__(self, field: str = "generation", mapping_field: str | None = None, output_field: str = "restored"):
        self.field, self.mapping_field, self.output_field = field, mapping_field, output_field
        self.replaced = 0

    def __call__(self, records: list[Record]) -> list[dict | RecordError]:
        out: list[dict | RecordError] = []
        for rec in records:
            name = self.mapping_field or stamped_mapping_field(rec.data)
            mapping = rec.data.get(name) if name else None
            answer = rec.data.get(self.field)
            if not isinstance(mapping, list):
                out.append(RecordError("no_mapping", f"no mapping field {name!r} (ppt sanitize --mapping FIELD)"))
                continue
            if not isinstance(answer, str):
                out.append(RecordError("no_answer", f"field {self.field!r} holds no text"))
                continue
            restored, n = restore_text(answer, mapping)
            self.replaced += n
            data = {**rec.data, self.output_field: restored}
            block = {"field": self.field, "mapping_field": name, "replaced": n}
            out.append(stamp(data, self.name, block))
        return out

    def signature(self) -> dict[str, Any]:
        return {"stage": self.name, "field": self.field, "mapping_field": self.mapping_field}


__all__ = ["RestoreStage", "restore_text", "stamped_mapping_field"]
