"""Field paths: ``--text-field msg.body`` reads and writes a field inside a nested object.

An exact key wins over nesting (a record whose key is literally ``"msg.body"`` keeps working), so a path is
only split at dots when the record has no such key. Writing copies the objects along the path and leaves
everything else shared with the input.
"""

from __future__ import annotations

from typing import Any


def lookup(data: Any, path: str) -> tuple[bool, Any]:
    """``data[path]`` where a dotted path walks nested objects (an exact key wins over nesting)."""
    if isinstance(data, dict) and path in data:
        return True, data[path]
    cur = data
    for key in path.split("."):
        if not isinstance(cur, dict) or key not in cur:
            return False, None
        cur = cur[key]
    return True, cur


def assign(data: dict, path: str, value: Any) -> dict:
    """A copy of ``data`` with the field at ``path`` set to ``value`` (where :func:`lookup` finds it; a new
    top-level key when it is found nowhere)."""
    if path in data or "." not in path:
        return {**data, path: value}
    head, rest = path.split(".", 1)
    inner = data.get(head)
    if not isinstance(inner, dict) or not lookup(inner, rest)[0]:
        return {**data, path: value}
    return {**data, head: assign(inner, rest, value)}


__all__ = ["assign", "lookup"]
