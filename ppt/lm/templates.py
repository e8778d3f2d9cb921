"""Prompt templates with record-field placeholders: the paper's prompts and user overrides.

Syntax: ``{field}`` is replaced by the record's field (``{a.b}`` reads a nested field); ``{{`` and
``}}`` are literal braces. Anything else in braces is an error reported before any record is read.
A template knows the fields it names, which is what `ppt query` checks and sends: nothing else of a
record ever reaches a remote party.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from ppt.io import ExitCode, PptError, RecordError
from ppt.io.fields import lookup  # noqa: F401 - re-exported (template fields are paths)

# InferDPT's remote prompt (MECHANISMS.md "InferDPT pipeline"; Cape appendix D), {text} = perturbed document.
QUERY_TEMPLATE = (
    "Your task is to extend Prefix Text.\n- Prefix Text: {text}\n\n Provide only your Continuation.\n- Continuation:"
)

# InferDPT's extraction prompt (papers/cape.txt appendix D, as used by InferDPT), for the local model.
EXTRACT_TEMPLATE = (
    'Your task is to extend the "Prefix Text".\n'
    'Use the "Perturbed Generation" as your primary writing material for your extension.\n'
    'Extract coherent and consistent text from the "Perturbed Generation" and integrate them into your continuation.\n'
    'Ensure a seamless alignment with the context established by the "Prefix Text".\n'
    'Provide only your "Extended Text".\n'
    '- "Prefix Text": {raw}\n'
    '- "Perturbed Generation": {generation}\n'
    '- "Extended Text":'
)

_TOKEN = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")
_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*(\.[A-Za-z0-9_\-]+)*")


@dataclass(frozen=True)
class Template:
    source: str
    name: str  # "paper-continuation", "paper-extraction" or "custom"
    parts: tuple[tuple[bool, str], ...]  # (is_field, literal text or field path)

    @classmethod
    def parse(cls, source: str, name: str = "custom") -> Template:
        parts: list[tuple[bool, str]] = []
        pos = 0
        for m in _TOKEN.finditer(source):
            if m.start() > pos:
                parts.append((False, source[pos : m.start()]))
            tok = m.group(0)
            if tok in ("{{", "}}"):
                parts.append((False, tok[0]))
            elif m.group(1) is not None and _FIELD.fullmatch(m.group(1).strip()):
                parts.append((True, m.group(1).strip()))
            else:
                raise PptError(
                    f"template: bad placeholder {tok[:40]!r} at character {m.start() + 1}",
                    ExitCode.USAGE,
                    hint="use {field} for a record field, {{ and }} for literal braces",
                )
            pos = m.end()
        if pos < len(source):
            parts.append((False, source[pos:]))
        return cls(source=source, name=name, parts=tuple(parts))

    @property
    def fields(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for is_field, value in self.parts:
            if is_field:
                seen.setdefault(value, None)
        return tuple(seen)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.source.encode()).hexdigest()

    def rename(self, mapping: dict[str, str]) -> Template:
        """The same template with placeholders renamed (e.g. the default {text} -> --text-field)."""
        parts = tuple((f, mapping.get(v, v) if f else v) for f, v in self.parts)
        source = "".join("{" + v + "}" if f else v.replace("{", "{{").replace("}", "}}") for f, v in parts)
        return Template(source=source, name=self.name, parts=parts)

    def describe(self) -> dict:
        return {"name": self.name, "sha256": self.sha256[:16], "fields": list(self.fields)}

    def render(self, data: dict) -> str:
        """Fill the placeholders from ``data``; RecordError (naming the field, never its content)."""
        out: list[str] = []
        for is_field, value in self.parts:
            if not is_field:
                out.append(value)
                continue
            found, v = lookup(data, value)
            if not found or v is None:
                raise RecordError("missing_field", f"template field '{value}' is missing")
            if isinstance(v, bool) or not isinstance(v, (str, int, float)):
                raise RecordError("field_not_string", f"template field '{value}' is not a string or number")
            out.append(v if isinstance(v, str) else str(v))
        return "".join(out)


def load_template(
    value: str | None, default: str, default_name: str, mapping: dict[str, str] | None = None
) -> Template:
    """``--template`` value -> Template: None = the paper's default (placeholders renamed by
    ``mapping``), ``@path`` = read a file, anything else = the template text itself."""
    if value is None:
        return Template.parse(default, default_name).rename(mapping or {})
    if value.startswith("@"):
        path = Path(value[1:]).expanduser()
        try:
            value = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise PptError(f"template file not found: {path}", ExitCode.NOINPUT) from None
        except (OSError, UnicodeDecodeError) as e:
            raise PptError(f"cannot read template file {path}: {e}", ExitCode.NOINPUT) from None
        value = value.rstrip("\n")
    tpl = Template.parse(value)
    if not tpl.fields:
        raise PptError(
            "the template names no record field, so every request would be identical",
            ExitCode.USAGE,
            hint="put a placeholder such as {text} where the record's text goes",
        )
    return tpl
