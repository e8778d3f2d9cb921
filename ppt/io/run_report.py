"""Run reports (``--report run.json``): what one stream run did, as one JSON file, with no record text.

How it is collected: the CLI kit opens a :class:`RunCollector` around a command (:func:`collecting`);
:func:`ppt.io.stream.run_stream` finds it (:func:`active`), shows it every record it writes
(:meth:`RunCollector.observe`) and hands it the run's counts at the end (:meth:`RunCollector.finish`).
The file is written when the collecting block ends, only when a run finished (an interrupted run writes
nothing, as it writes no output). One format for every stream command (``"ppt_report": 1``).

Privacy, failing closed: the report holds counts, parameters and figures from the public stamps; never a
record's text or id. Two parts depend on the raw text and make the report ``local_only`` (written 0600):
``diagnostics`` and ``sample``. The format field by field, and those two parts: docs/reports.md.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import stat
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any

from ppt.io.errors import PptError
from ppt.io.exitcodes import ExitCode
from ppt.io.fields import lookup
from ppt.io.run_stats import DiagnosticsStats, Distribution, SanitizeStats, histogram

FORMAT_VERSION = 1
SAMPLE_TEXT_CHARS = 4000  # a sampled text is cut here (the report is for a person, not an archive)

# finds the spans of original tokens in an original text: (text, rows) -> one (start, end) or None per row
Locate = Callable[[str, list[int]], list[tuple[int, int] | None]]

_ACTIVE: ContextVar[RunCollector | None] = ContextVar("ppt_run_report", default=None)


def active() -> RunCollector | None:
    """The collector of the command running now (``--report``), or None."""
    return _ACTIVE.get()


def versions() -> dict[str, str | None]:
    """ppt, Python and torch (read from the installed package's metadata: torch is not imported for it)."""
    import importlib.metadata

    from ppt import __version__

    out: dict[str, str | None] = {"ppt": __version__, "python": platform.python_version()}
    torch = sys.modules.get("torch")
    version = getattr(torch, "__version__", None)
    if version is None:
        try:
            version = importlib.metadata.version("torch")
        except importlib.metadata.PackageNotFoundError:
            version = None
    out["torch"] = str(version) if version is not None else None
    return out


class RunCollector:
    """One command's report: set up by :func:`collecting`, fed by ``run_stream``, written at the end."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.created = time.monotonic()
        self.sample_n = 0
        self.locate: Locate | None = None
        self.desc: str | None = None
        self.run: dict[str, Any] = {}
        self.began: float | None = None
        self.started_iso: str | None = None
        self.finished = False
        self.result: dict[str, Any] = {}
        self.stamps: Counter[str] = Counter()
        self.sanitize = SanitizeStats()
        self.diagnostics = DiagnosticsStats()
        self.sample: list[dict[str, Any]] = []
        self.unreadable = 0

    def keep_sample(self, n: int, locate: Locate | None = None) -> None:
        """Keep the raw and sanitized text of the first ``n`` records that carry --keep-original (local only);
        ``locate`` finds the original tokens' spans, so both sides of a replacement are highlighted."""
        self.sample_n, self.locate = max(0, int(n)), locate

    # -- fed by run_stream
    def begin(self, opts: Any, desc: str) -> None:
        """The run starts (before input and output are opened): refuse a report path that is the input or
        the output, or stdout."""
        for role, other in (("--output", getattr(opts, "output", "-")), ("--input", getattr(opts, "input", "-"))):
            if other not in (None, "-") and _same_file(self.path, other):
                raise PptError(
                    f"--report names the same file as {role}: {self.path}",
                    ExitCode.USAGE,
                    hint="write the report beside the output: --report run.json",
                )
        if self.began is None:
            self.began = time.monotonic()
            self.started_iso = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        self.desc = desc
        self.run = {
            "input": getattr(opts, "input", None),
            "output": getattr(opts, "output", None),
            "text_field": getattr(opts, "text_field", None),
            "id_field": getattr(opts, "id_field", None),
            "on_error": getattr(opts, "on_error", None),
            "batch_size": getattr(opts, "batch_size", None),
        }

    def observe(self, record: Any) -> None:
        """One record the run wrote (never an error record). Never raises: a record this cannot read is counted."""
        try:
            self._observe(record)
        except Exception:  # noqa: BLE001 - a report must never break the run it reports
            self.unreadable += 1

    def _observe(self, record: Any) -> None:
        block = record.get("ppt") if isinstance(record, dict) else None
        if not isinstance(block, dict):
            return
        for stage in block:
            self.stamps[str(stage)] += 1
        san = block.get("sanitize")
        if not isinstance(san, dict):
            return
        self.sanitize.add(san)
        diag = san.get("diagnostics_field")
        if isinstance(diag, str) and diag in record:
            self.diagnostics.add(diag, record[diag])
        if len(self.sample) < self.sample_n:
            self._sample(record, san)

    def _sample(self, record: dict, san: dict) -> None:
        original_field, text_field = san.get("keep_original"), san.get("text_field") or "text"
        if not isinstance(original_field, str) or not isinstance(record.get(original_field), str):
            return
        found, sanitized = lookup(record, text_field)
        if not found or not isinstance(sanitized, str):
            return
        original = record[original_field]
        entry: dict[str, Any] = {
            "id": record.get(self.run.get("id_field") or "id"),
            "original": original[:SAMPLE_TEXT_CHARS],
            "sanitized": sanitized[:SAMPLE_TEXT_CHARS],
            "truncated": len(original) > SAMPLE_TEXT_CHARS or len(sanitized) > SAMPLE_TEXT_CHARS,
        }
        al_field = san.get("alignment_field")
        alignment = record.get(al_field) if isinstance(al_field, str) else None
        if isinstance(alignment, list):
            entry["spans"] = _sample_spans(alignment, original, sanitized, self.locate)
        self.sample.append(entry)

    def finish(self, report: Any, code: int, stage: Any = None) -> None:
        """The run ended with ``code``; ``report`` is its :class:`ppt.io.report.RunReport` (the counts)."""
        now = time.monotonic()
        failed = dict(getattr(report, "failed", Counter()).most_common())
        n_failed = sum(failed.values())
        ok = int(getattr(report, "ok", 0))
        on_error = self.run.get("on_error")
        counts = self.result.get("counts") or {}
        counts = {
            "read": counts.get("read", 0) + ok + n_failed,
            "ok": counts.get("ok", 0) + ok,
            "failed": counts.get("failed", 0) + n_failed,
            "skipped": counts.get("skipped", 0) + (n_failed if on_error == "skip" else 0),
            "recorded": counts.get("recorded", 0) + (n_failed if on_error == "record" else 0),
            "by_error": dict(Counter(counts.get("by_error", {})) + Counter(failed)),
            "first_failed_lines": list(getattr(report, "failed_lines", []))[:5],
            "stopped_at": getattr(report, "stopped", None),
        }
        runner_started = getattr(report, "started", now)
        elapsed = now - runner_started
        self.result = {
            "exit_code": int(code),
            "elapsed_s": round(elapsed, 3),
            "prepare_s": round(max(0.0, runner_started - (self.began or runner_started)), 3),
            "total_s": round(now - self.created, 3),
            "records_per_s": round((ok + n_failed) / elapsed, 1) if elapsed > 0 and ok + n_failed else None,
            "counts": counts,
        }
        if getattr(stage, "workers", None):
            self.run["workers"] = stage.workers
        self.result["signature"] = _signature_of(stage)
        self.finished = True

    # -- the file
    def to_dict(self) -> dict[str, Any]:
        reasons = []
        if self.diagnostics.records:
            reasons.append("diagnostics")
        if self.sample:
            reasons.append("sample")
        out: dict[str, Any] = {
            "ppt_report": FORMAT_VERSION,
            "command": self.desc,
            "exit_code": self.result.get("exit_code"),
            "local_only": bool(reasons),
            "local_only_reasons": reasons,
            "started": self.started_iso,
            "elapsed_s": self.result.get("elapsed_s"),
            "prepare_s": self.result.get("prepare_s"),
            "total_s": self.result.get("total_s"),
            "records_per_s": self.result.get("records_per_s"),
            "versions": versions(),
            "run": self.run,
            "signature": self.result.get("signature"),
            "counts": self.result.get("counts"),
            "stamps": dict(self.stamps.most_common()),
        }
        if self.sanitize.records:
            out["sanitize"] = self.sanitize.to_dict()
        if self.diagnostics.records:
            out["diagnostics"] = self.diagnostics.to_dict()
        if self.unreadable:
            out["unreadable_records"] = self.unreadable
        if self.sample_n:
            out["sample"] = {
                "requested": self.sample_n,
                "note": "local only: the raw text of these records (--keep-original); never share this report",
                "records": self.sample,
            }
        return out

    def write(self) -> None:
        data = self.to_dict()
        write_private_aware(self.path, json.dumps(data, indent=1, ensure_ascii=False) + "\n", data["local_only"])


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def _signature_of(stage: Any) -> Any:
    from ppt.io.stamp import jsonable

    sig = getattr(stage, "signature", None)
    if not callable(sig):
        return None
    try:
        return jsonable(sig())
    except Exception:  # noqa: BLE001 - a stage that cannot say its signature still gets its report
        return None


def _sample_spans(alignment: list, original: str, sanitized: str, locate: Locate | None) -> list[dict[str, Any]]:
    """One entry per perturbed token: its span in the sanitized text (from the alignment) and in the original
    (``locate``, when given), and whether the word changed (the mechanism may draw the same word)."""
    entries = [e for e in alignment if isinstance(e, list) and len(e) >= 2 and all(isinstance(x, int) for x in e)]
    orig_spans: list[tuple[int, int] | None] = [None] * len(entries)
    if locate is not None and entries:
        with contextlib.suppress(Exception):
            found = locate(original, [e[0] for e in entries])
            if len(found) == len(entries):
                orig_spans = list(found)
    out = []
    for e, o in zip(entries, orig_spans):
        new = [e[2], e[3]] if len(e) == 4 and 0 <= e[2] <= e[3] <= len(sanitized) else None
        old = [int(o[0]), int(o[1])] if o is not None and 0 <= o[0] <= o[1] <= len(original) else None
        out.append({"sanitized": new, "original": old, "changed": e[0] != e[1]})
    return out


def write_private_aware(path: str, text: str, private: bool) -> None:
    """Write ``text`` to ``path`` atomically (:func:`ppt.io.sinks.write_lines`); when ``private`` the file ends
    0600 even where it existed with another mode (a regular file is narrowed before it is replaced)."""
    from ppt.io.sinks import write_lines

    if private:
        with contextlib.suppress(OSError):
            st = os.stat(path)
            if stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) & 0o077:
                os.chmod(path, 0o600)
    write_lines(path, [text.encode("utf-8")], private=private)


def load_report(path: str) -> dict[str, Any]:
    """Read a report written by ``--report`` ('-': stdin); PptError (exit 65/66) when it is not one."""
    try:
        if path == "-":
            raw = sys.stdin.buffer.read()
        else:
            with open(path, "rb") as fh:
                raw = fh.read()
    except FileNotFoundError:
        raise PptError(f"report not found: {path}", ExitCode.NOINPUT, hint="write one with --report FILE") from None
    except OSError as exc:
        raise PptError(f"cannot read {path}: {exc.strerror}", ExitCode.NOINPUT) from None
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise PptError(f"{path} is not JSON", ExitCode.DATAERR, hint="give the file --report wrote") from None
    if not isinstance(data, dict) or "ppt_report" not in data:
        raise PptError(f"{path} is not a ppt run report", ExitCode.DATAERR, hint="give the file --report wrote")
    if data["ppt_report"] != FORMAT_VERSION:
        raise PptError(
            f"{path} is a report of format {data['ppt_report']!r}; this ppt reads format {FORMAT_VERSION}",
            ExitCode.DATAERR,
        )
    return data


@contextlib.contextmanager
def collecting(path: str | None) -> Iterator[RunCollector | None]:
    """While the block runs, ``run_stream`` reports to a collector that writes ``path`` when the block ends,
    if a run finished in it (also when it failed records or stopped at a bad one: the report says so).
    ``path`` None: nothing is collected."""
    if path is None:
        yield None
        return
    if path == "-" or not path.strip():
        raise PptError("--report takes a file name", ExitCode.USAGE, hint="e.g. --report run.json")
    collector = RunCollector(path)
    token = _ACTIVE.set(collector)
    try:
        yield collector
    finally:
        _ACTIVE.reset(token)
        if collector.finished:
            collector.write()


__all__ = [
    "FORMAT_VERSION",
    "Distribution",
    "RunCollector",
    "active",
    "collecting",
    "histogram",
    "load_report",
    "versions",
    "write_private_aware",
]
