"""Help prose that reflows to the terminal, applied once to every command and group of the app.

The commands' help texts are written hard-wrapped (at ~105-120 columns, like the code); typer's rich help
keeps single line breaks (only blank lines separate its paragraphs), so a terminal narrower than the source
wrapped every long line again into ragged half-lines, and a wider one never used its width. :func:`reflow`
joins the lines of a paragraph into one, which the terminal (rich) or the man page (roff) then fills to its
width; what must keep its lines keeps them:

- an indented line (the ``Examples`` blocks, a list whose items are indented, a shell continuation
  ``\\`` and the line under it) keeps its own line, and so does the line after it;
- a line that starts a list item (``- ``, ``* ``, ``1. ``) starts a line;
- a paragraph marked with click's ``\\b`` (no rewrap) is left as it is; a ``\\f`` and what follows it too.

:func:`reflow_tree` applies it to a built click command tree (``PptGroup`` calls it when the app is built),
so every command, present or future, gets it without its help being rewritten; typer's version does not
matter, since the text typer renders is already reflowed.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
_LIST_ITEM = re.compile(r"(?:[-*\u2022]|\d+[.)])\s")


def _keeps_its_line(line: str) -> bool:
    """An indented line (an example, an indented list) or one that starts a list item."""
    return line[:1] in (" ", "\t") or bool(_LIST_ITEM.match(line))


def reflow_paragraph(paragraph: str) -> str:
    """One paragraph with its prose lines joined by spaces; indented lines and list items keep their breaks."""
    if paragraph.startswith("\b"):  # click's "do not rewrap this paragraph"
        return paragraph
    out: list[str] = []
    for line in paragraph.split("\n"):
        if out and out[-1] and not _keeps_its_line(out[-1]) and line.strip() and not _keeps_its_line(line):
            out[-1] = f"{out[-1].rstrip()} {line.strip()}"
        else:
            out.append(line.rstrip())
    return "\n".join(out)


def reflow(text: str | None) -> str | None:
    """``text`` (a command's help) with each paragraph's single line breaks turned into spaces, except around
    indented lines and list items; blank lines (paragraph breaks) are kept. None stays None."""
    if not text:
        return text
    body, formfeed, tail = text.partition("\f")  # click: what follows \f is not help
    body = inspect.cleandoc(body)
    paragraphs = _PARAGRAPH_BREAK.split(body)
    return "\n\n".join(reflow_paragraph(p) for p in paragraphs) + formfeed + tail


def reflow_tree(cmd: Any) -> None:
    """Reflow the help (and epilog) of ``cmd`` and of every command under it, in place. Idempotent."""
    seen: set[int] = set()
    stack = [cmd]
    while stack:
        c = stack.pop()
        if id(c) in seen:
            continue
        seen.add(id(c))
        for attr in ("help", "epilog"):
            value = getattr(c, attr, None)
            if isinstance(value, str):
                setattr(c, attr, reflow(value))
        sub = getattr(c, "commands", None)
        if isinstance(sub, dict):
            stack.extend(sub.values())


__all__ = ["reflow", "reflow_paragraph", "reflow_tree"]
