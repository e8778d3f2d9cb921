"""Declared mechanism parameters: each mechanism lists its ``Param``s once (name, type, range or choices,
default, help), and one generic check validates them, fills the defaults and names the unknown ones.

Why: each mechanism used to validate by hand (RANTEXT ~45 lines, TEM ~15), apart from what ``ppt mechs``,
``--param`` and the signature read, so the help and the checks could drift apart (simonw/llm's
``Model.Options`` with ``extra="forbid"``; presidio's ``Operator.validate``). ``ppt mechs`` lists the
declarations, and ``ppt sanitize --param`` is checked against them before any space or model is loaded.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

TYPES = ("float", "int", "str", "bool", "any")


@dataclass(frozen=True)
class Param:
    """One parameter. ``type`` float or int with an optional range (``low``/``high``, each inclusive unless
    ``open_low``/``open_high``); str with ``choices``; a float may also accept ``choices`` as words (RANTEXT's
    ``z``: calibrated | paper | a positive number). ``nullable``: None is allowed (and means "derive it").
    ``internal``: a tuning knob (chunk sizes, samplers) that ``ppt mechs`` does not list."""

    name: str
    default: Any
    help: str
    type: str = "float"
    choices: tuple[str, ...] = ()
    low: float | None = None
    high: float | None = None
    open_low: bool = False
    open_high: bool = False
    nullable: bool = False
    internal: bool = False

    def __post_init__(self) -> None:
        if self.type not in TYPES:
            raise ValueError(f"Param {self.name}: type must be one of {', '.join(TYPES)}")

    def range_text(self) -> str:
        if self.low is None and self.high is None:
            return ""
        lo = "-inf" if self.low is None else f"{self.low:g}"
        hi = "inf" if self.high is None else f"{self.high:g}"
        left = "(" if self.open_low or self.low is None else "["
        right = ")" if self.open_high or self.high is None else "]"
        return f"{left}{lo}, {hi}{right}"

    def expects(self) -> str:
        """What a valid value looks like, in words (for errors and `ppt mechs`)."""
        parts = []
        if self.choices:
            parts.append(" | ".join(self.choices))
        if self.type in ("float", "int"):
            kind = "an integer" if self.type == "int" else "a number"
            rng = self.range_text()
            parts.append(f"{kind} in {rng}" if rng else kind)
        elif self.type == "bool":
            parts.append("true | false")
        elif self.type == "str" and not self.choices:
            parts.append("a string")
        if self.nullable:
            parts.append("null")
        return " or ".join(parts) or "any value"

    def check(self, value: Any, owner: str) -> Any:
        """``value`` converted to this parameter's type, or a ValueError naming ``owner`` and the parameter."""
        if value is None and (self.nullable or self.type == "any"):
            return None
        if self.type == "any":
            return value
        if self.choices and isinstance(value, str) and value in self.choices:
            return value
        bad = ValueError(f"{owner}: {self.name} must be {self.expects()} (got {value!r})")
        if self.type == "str":
            raise bad
        if self.type == "bool":
            if isinstance(value, bool):
                return value
            if isinstance(value, str) and value.lower() in ("true", "false"):
                return value.lower() == "true"
            raise bad
        if isinstance(value, bool):
            raise bad
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise bad from None
        if not math.isfinite(number):
            raise bad
        if self.type == "int":
            if number != int(number):
                raise bad
            number = int(number)
        if self.low is not None and (number < self.low or (self.open_low and number == self.low)):
            raise bad
        if self.high is not None and (number > self.high or (self.open_high and number == self.high)):
            raise bad
        return number

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "default": self.default, "type": self.type, "help": self.help}
        out["expects"] = self.expects()
        return out


def check_params(owner: str, declared: Iterable[Param], given: Mapping[str, Any]) -> dict[str, Any]:
    """Every declared parameter's value (given, checked and converted, else its default); a ValueError names
    the unknown ones with the known ones beside them."""
    table = {p.name: p for p in declared}
    unknown = sorted(set(given) - set(table))
    if unknown:
        known = ", ".join(p.name for p in table.values() if not p.internal)
        raise ValueError(f"{owner}: unknown parameter(s) {', '.join(unknown)}; known: {known}")
    return {name: p.check(given[name], owner) if name in given else p.default for name, p in table.items()}


__all__ = ["Param", "check_params"]
