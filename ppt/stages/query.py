"""The library behind `ppt query`: records -> request bodies -> a backend -> records with answers.

Privacy rules enforced here, per record, before anything is sent:
- a record must carry a ``ppt.sanitize`` stamp (unless ``allow_raw``);
- the request is built from the template alone, so only the fields it names leave the machine;
- every named field must be one the sanitize stage privatized (its text field), and never the field
  it kept the raw text in (unless ``allow_raw``).
"""

from __future__ import annotations

import hashlib
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ppt.io import ExitCode, PptError, Record, RecordError, stamp, stamp_block
from ppt.io.stream import UNPROCESSED
from ppt.lm.templates import Template
from ppt.remote.backends import Answer
from ppt.remote.journal import Journal, record_key
from ppt.stages.base import Stage


@dataclass
class QuerySpec:
    """Everything that shapes a request (and the stamp that records it)."""

    model: str
    template: Template
    endpoint: str = "chat"  # "chat" | "completions"
    system: str | None = None
    temperature: float | None = 0.5
    max_tokens: int | None = 100
    top_p: float | None = None
    stop: tuple[str, ...] = ()
    extra_body: dict = field(default_factory=dict)
    output_field: str = "generation"
    text_field: str = "text"
    allow_raw: bool = False

    def body(self, prompt: str) -> dict:
        body: dict[str, Any] = {"model": self.model}
        if self.endpoint == "chat":
            messages = [{"role": "system", "content": self.system}] if self.system else []
            body["messages"] = [*messages, {"role": "user", "content": prompt}]
        else:
            body["prompt"] = prompt if not self.system else f"{self.system}\n\n{prompt}"
        for key, value in (("temperature", self.temperature), ("max_tokens", self.max_tokens), ("top_p", self.top_p)):
            if value is not None:
                body[key] = value
        if self.stop:
            body["stop"] = list(self.stop)
        body.update(self.extra_body)
        return body

    def describe(self) -> dict:
        params: dict[str, Any] = {"temperature": self.temperature, "max_tokens": self.max_tokens}
        if self.top_p is not None:
            params["top_p"] = self.top_p
        if self.stop:
            params["stop"] = list(self.stop)
        if self.extra_body:
            params["extra_body"] = self.extra_body
        out = {"endpoint": self.endpoint, "model": self.model, "template": self.template.describe(), "params": params}
        if self.system:
            out["system_sha256"] = hashlib.sha256(self.system.encode()).hexdigest()[:16]
        return out


PROTECTED_BODY_KEYS = ("messages", "prompt", "model", "stream", "n")


def body_digest(body: dict) -> str:
    """sha256 of a request body, canonical JSON: what --resume compares before it emits a journaled answer."""
    import orjson

    return hashlib.sha256(orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()


def journaled_digest(saved: Any) -> str | None:
    digest = (stamp_block(saved, "query") or {}).get("request_sha256")
    return digest if isinstance(digest, str) else None


def local_only_fields(data: dict) -> set[str]:
    """Fields a stamp marks local only whatever --allow-raw says (Split-N-Denoise's denoised and clean
    vectors: functions of the raw text that the record carries beside the covered noisy rows)."""
    privacy = (stamp_block(data, "snd") or {}).get("privacy")
    names = privacy.get("local_only") if isinstance(privacy, dict) else None
    return {n for n in names if isinstance(n, str)} if isinstance(names, list) else set()


def check_sanitized(data: dict, spec: QuerySpec) -> RecordError | None:
    """None when the record may be sent under ``spec``; else why not (never quoting its content)."""
    local_only = local_only_fields(data)
    for name in spec.template.fields:
        if name in local_only:
            return RecordError(
                "local_field_in_template",
                f"template field '{name}' is computed from the raw text (ppt.snd.privacy.local_only); it is never sent",
            )
    if spec.allow_raw:
        return None
    block = stamp_block(data, "sanitize")
    if block is None:
        return RecordError(
            "not_sanitized",
            "record has no ppt.sanitize stamp; run `ppt sanitize` first (or pass --allow-raw to send unsanitized text)",
        )
    sanitized = block.get("text_field") or spec.text_field
    local = {
        block.get("keep_original"): "the raw text kept by `ppt sanitize --keep-original`",
        block.get("alignment_field"): "the token alignment of `ppt sanitize --emit-alignment`",
        block.get("diagnostics_field"): "the per-record diagnostics of `ppt sanitize --diagnostics`",
        block.get("mapping_field"): "the surrogate -> original map of `ppt sanitize --mapping`",
    }
    for name in spec.template.fields:
        if name and name in local:
            return RecordError(
                "raw_field_in_template", f"template field '{name}' holds {local[name]}; it is never sent"
            )
        if name != sanitized:
            return RecordError(
                "unsanitized_field",
                f"template field '{name}' was not sanitized (ppt.sanitize covers "
                f"'{sanitized}'); pass --allow-raw to send it anyway",
            )
    return None


class QueryRunner(Stage):
    """The query Stage for run_stream: validate, resume, send, stamp; thread-safe journal writes."""

    name = "query"

    def __init__(
        self,
        spec: QuerySpec,
        backend: Any,
        *,
        journal: Journal | None = None,
        dry_run: bool = False,
        id_field: str = "id",
    ) -> None:
        self.spec, self.backend, self.journal, self.dry_run, self.id_field = spec, backend, journal, dry_run, id_field
        self.stats: Counter[str] = Counter()
        self.usage: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._seen: dict[bytes, int] = {}  # journal key -> first line (duplicate ids under --resume)
        self.stop_error: PptError | None = None  # the journal failed: run_stream writes what is in hand, exits 74
        self._base_block = {**backend.describe(), **spec.describe()} if backend is not None else spec.describe()

    def __call__(self, records: list[Record]) -> list[dict | RecordError]:
        return self.process(records)

    def signature(self) -> dict[str, Any]:
        return {"stage": self.name, **self._base_block, "output_field": self.spec.output_field}

    def _key(self, rec: Record) -> bytes:
        return record_key(rec.data, self.id_field, rec.line_no)

    def _check_unique(self, records: list[Record]) -> None:
        """With --resume, answers are keyed by id: a repeated id would be answered with (or overwrite)
        another record's saved output, so the run stops (exit 65) before this batch sends anything."""
        for rec in records:
            key = self._key(rec)
            first = self._seen.get(key)
            if first is not None:
                raise PptError(
                    f"duplicate id: line {rec.line_no} repeats the id of line {first}; --resume keys "
                    "answers by id, so every record needs its own",
                    ExitCode.DATAERR,
                    hint="give each record a unique id (or name another field with --id-field); "
                    "answers already journaled are kept",
                )
            self._seen[key] = rec.line_no

    def _check_record(self, rec: Record) -> RecordError | None:
        """Everything that would make this record fail after its answer was paid for, checked before sending."""
        err = check_sanitized(rec.data, self.spec)
        if err is not None:
            return err
        if "ppt" in rec.data and not isinstance(rec.data["ppt"], dict):
            return RecordError("ppt_field_conflict", "field 'ppt' exists and is not an object; rename it")
        if self.spec.output_field in rec.data:
            return RecordError(
                "field_conflict", f"field '{self.spec.output_field}' already exists; choose another --output-field"
            )
        return None

    def process(self, records: list[Record]) -> list[dict | RecordError]:
        results: list[Any] = [None] * len(records)
        todo: list[tuple[int, Record, dict]] = []
        if self.journal is not None:
            self._check_unique(records)
        for i, rec in enumerate(records):
            err = self._check_record(rec)
            body: dict | None = None
            if err is None:
                try:
                    body = self.spec.body(self.spec.template.render(rec.data))
                except RecordError as e:
                    err = e
            if self.journal is not None and self._key(rec) in self.journal:
                saved = self.journal.get(self._key(rec))
                if body is not None and journaled_digest(saved) == body_digest(body):
                    results[i] = saved if not self.dry_run else {self.id_field: rec.id, "resumed": True}
                    self.stats["resumed"] += 1
                    continue
                # the journaled answer is for another request (the input, model, template or options changed,
                # or a record without an id moved to this line): never emitted in this record's place
                self.stats["changed"] += 1
            if err is not None:
                results[i] = err
                continue
            if self.dry_run:
                url = self.backend.url(self.spec.endpoint) if hasattr(self.backend, "url") else "local"
                results[i] = {self.id_field: rec.id, "request": {"method": "POST", "url": url, "body": body}}
                self.stats["would_send"] += 1
                continue
            todo.append((i, rec, body))
        if not todo:
            return results

        def on_done(j: int, res: Any) -> None:
            i, rec, body = todo[j]
            try:
                results[i] = self._finish(rec, res, body)
            except RecordError as e:  # this record alone; answers of the others are kept
                results[i] = e
            except Exception as e:  # noqa: BLE001 - never let one record's bookkeeping fail its batch
                results[i] = RecordError("internal_error", f"could not record the answer ({type(e).__name__})")

        self.backend.run([(rec.id, body) for _, rec, body in todo], self.spec.endpoint, on_done)
        if self.stop_error is not None:  # requests never sent after the journal failed: not this run's output
            return [UNPROCESSED if r is None else r for r in results]
        return results

    def _finish(self, rec: Record, res: Any, body: dict | None = None) -> Any:
        """Turn an answer into the output record (and journal it at once)."""
        if isinstance(res, RecordError):
            with self._lock:
                self.stats["failed"] += 1
            return res
        assert isinstance(res, Answer)
        out = dict(rec.data)
        out[self.spec.output_field] = res.text
        block = dict(self._base_block)
        block.update(
            {
                "usage": res.usage,
                "finish_reason": res.finish_reason,
                "attempts": res.attempts,
                "latency_s": res.latency_s,
            }
        )
        if res.response_id:
            block["response_id"] = res.response_id
        if res.model and res.model != self.spec.model:
            block["response_model"] = res.model
        if self.id_field not in rec.data or rec.data.get(self.id_field) is None:
            block["line"] = rec.line_no  # lets --resume recognise records without ids
        if body is not None:
            block["request_sha256"] = body_digest(body)  # --resume emits this answer only for the same request
        out = stamp(out, "query", block)
        with self._lock:
            self.stats["answered"] += 1
            for k, v in res.usage.items():
                self.usage[k] += v
        if self.journal is not None:
            try:
                self.journal.append(self._key(rec), out, replace=True)
            except OSError as e:  # the answer is paid for: keep it (written to the output), send nothing more
                self._journal_failed(e)
        return out

    def _journal_failed(self, e: OSError) -> None:
        with self._lock:
            if self.stop_error is None:
                why = e.strerror or type(e).__name__
                self.stop_error = PptError(
                    f"could not write the --resume journal ({why}): stopped sending; the answers received are "
                    "in the output, records not yet sent are not",
                    ExitCode.IOERR,
                    hint="free space or choose another --resume file, then rerun with --resume",
                )
        stop = getattr(self.backend, "stop_sending", None)
        if stop is not None:
            stop()

    def summary_line(self) -> str:
        """The one-line end-of-run report on stderr (answered, resumed, retries, tokens)."""
        s, u = self.stats, self.usage
        bits = [f"{s['answered']} answered"]
        if s["resumed"]:
            bits.append(f"{s['resumed']} resumed from the journal")
        if s["changed"]:
            bits.append(f"{s['changed']} sent again (changed since journaled)")
        if s["would_send"]:
            bits.append(f"{s['would_send']} would be sent (dry run)")
        stats = getattr(self.backend, "stats", None)
        if stats:
            retries = {k.split(":", 1)[1]: v for k, v in stats.items() if k.startswith("retry:")}
            bits.append(f"{stats['requests']} requests")
            if retries:
                bits.append("retried: " + ", ".join(f"{k} x{v}" for k, v in sorted(retries.items())))
        if u:
            bits.append(f"tokens: prompt {u['prompt_tokens']}, completion {u['completion_tokens']}")
        return "ppt: query: " + "; ".join(bits)
