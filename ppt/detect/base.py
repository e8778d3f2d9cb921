"""The detector interface, span merging and the combination of the user's lists with library detectors."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Span:
    """Characters ``[start, end)`` of a text that a detector marks sensitive, and what kind they are."""

    start: int
    end: int
    kind: str


class Detector(Protocol):
    """``detect(texts)`` gives each text's sensitive spans; ``signature`` names the detector and its version
    (it goes into the stamp's signature: the same text is protected the same way only by the same detector)."""

    signature: str

    def detect(self, texts: Sequence[str]) -> list[list[Span]]: ...


def merge_spans(spans: Sequence[Span]) -> list[Span]:
    """Spans sorted by start, overlapping ones merged (the first kind kept)."""
    out: list[Span] = []
    for s in sorted(spans, key=lambda s: (s.start, -s.end)):
        if out and s.start < out[-1].end:
            last = out[-1]
            out[-1] = Span(last.start, max(last.end, s.end), last.kind)
        else:
            out.append(s)
    return out


def read_list(path: str, what: str) -> list[str]:
    """The non-empty, non-comment lines of a deny- or allow-list file (PptError 66 when unreadable)."""
    from ppt.io import ExitCode, PptError

    try:
        with open(path, encoding="utf-8") as f:
            lines = [line.strip() for line in f]
    except OSError as e:
        raise PptError(f"cannot read the {what} {path}: {e.strerror}", ExitCode.NOINPUT) from None
    except UnicodeDecodeError:
        raise PptError(f"the {what} {path} is not UTF-8 text", ExitCode.DATAERR) from None
    return [line for line in lines if line and not line.startswith("#")]


def list_tag(items: Sequence[str]) -> str:
    """8 hex digits naming a list's content (the stamp never carries the words themselves)."""
    return hashlib.sha256("\n".join(sorted(set(items))).encode()).hexdigest()[:8]
