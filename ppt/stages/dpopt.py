"""`ppt dp-opt`: read labelled JSONL through the I/O core, validate before any model loads, run the
library (ppt.dpopt), write one JSON object; `apply` is a stream Stage wrapping text in the forward template.

Why here: the library is floor 4 and never opens files or endpoints; this floor owns input, output, the
model choice and the HTTP client for endpoint evaluation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ppt.io import (
    ExitCode,
    PptError,
    Record,
    RecordError,
    StreamArgs,
    iter_lines,
    parse_line,
    stamp,
    stamp_block,
)
from ppt.stages.base import Stage

STAGE = "dp-opt"


@dataclass
class Labelled:
    ids: list[Any]
    texts: list[str]
    labels: list[str]


def _open(args: StreamArgs) -> tuple[Any, bool]:
    from ppt.io.formats import open_input  # --input-format, .jsonl.gz, .csv, .parquet: read as JSONL lines

    return open_input(args.input, args.input_format)


def read_labelled(args: StreamArgs, label_field: str) -> Labelled:
    """Every record of ``args.input`` with its text and label; the first bad line stops the run (exit 65)
    naming its line and the problem, never its content. Labels are compared as strings."""
    stream, close = _open(args)
    out = Labelled([], [], [])
    try:
        for line_no, raw in iter_lines(stream):
            rec = parse_line(raw, line_no, args)
            if not isinstance(rec, Record):
                raise PptError(
                    f"line {line_no}: {rec.error.message}",
                    ExitCode.DATAERR,
                    hint="fix or drop that line (training data is read whole)",
                )
            y = rec.data.get(label_field)
            if isinstance(y, bool) or not isinstance(y, (str, int)) or str(y).strip() == "":
                raise PptError(
                    f"line {line_no}: label field '{label_field}' is missing or not a string/integer",
                    ExitCode.DATAERR,
                    hint=f"give every record a '{label_field}', or set --label-field",
                )
            out.ids.append(rec.id)
            out.texts.append(rec.text)
            out.labels.append(str(y))
    finally:
        if close:
            stream.close()
    if not out.texts:
        raise PptError("the input has no records", ExitCode.DATAERR, hint="give labelled JSONL records")
    return out


def parse_labels(spec: str) -> list[str]:
    return [s.strip() for s in spec.split(",") if s.strip()]


def write_json(path: str, obj: dict) -> None:
    from ppt.io import dumps_line
    from ppt.io.sinks import write_lines

    write_lines(path, [dumps_line(obj)])


def run_tune(
    args: StreamArgs,
    label_field: str,
    cfg,
    model: str,
    checkpoint: str | None,
    progress: Callable[[dict], None] | None = None,
) -> dict:
    """Validate (no model), load the model, tune, write the result object with its ``dp-opt`` stamp."""
    from ppt.dpopt import checkpoint as ckpt
    from ppt.dpopt.tune import prepare, tune

    data = read_labelled(args, label_field)
    held = ckpt.lock(checkpoint) if checkpoint is not None else None  # one run per checkpoint, from its load on
    try:
        plan = prepare(cfg, data.texts, data.labels, checkpoint=checkpoint, model_name=model)
        if progress is not None:  # what the budget covers, before the model loads
            progress({"event": "plan", **plan_summary(plan)})
        from ppt.models import load_causal_lm

        lm, tok = load_causal_lm(model, device=args.device)
        out = tune(lm, tok, plan, data.texts, data.labels, checkpoint=checkpoint, progress=progress, model_name=model)
    finally:
        if held is not None:
            held.release()
    if out.pop("resumed_finished", False):
        from ppt.log import note

        note("the checkpoint holds a finished run: its recorded result is written again (nothing new is released)")
    block = dict(out.pop("block"))
    result = stamp(dict(out), STAGE, block)
    write_json(args.output, result)
    return result


def plan_summary(plan) -> dict:
    """The figures of a validated run that need no model: what the budget covers and how it is spent."""
    c = plan.cfg
    return {
        "budget_queries": plan.budget_queries,
        "queries_spent": plan.acct.queries,
        "max_queries": c.max_queries(),
        "eps": c.eps,
        "delta": c.delta,
        "eps0": c.eps0,
        "delta0": plan.acct.delta0,
        "rate": c.rate,
        "ensemble": c.ensemble,
        "shots": c.shots,
        "max_prompts": c.max_prompts,
        "max_tokens": c.max_tokens,
        "retries": c.retries,
    }


def load_prompt(path: str) -> dict:
    import orjson

    try:
        with open(path, "rb") as f:
            obj = orjson.loads(f.read())
    except FileNotFoundError:
        raise PptError(
            f"prompt file not found: {path}", ExitCode.NOINPUT, hint="write one with `ppt dp-opt tune -o`"
        ) from None
    except (OSError, orjson.JSONDecodeError) as exc:
        raise PptError(f"cannot read the prompt file {path}: {type(exc).__name__}", ExitCode.DATAERR) from None
    if (
        not isinstance(obj, dict)
        or not isinstance(obj.get("instruction"), str)
        or not isinstance(obj.get("labels"), list)
    ):
        raise PptError(
            "the prompt file has no 'instruction' and 'labels'",
            ExitCode.DATAERR,
            hint="use the object written by `ppt dp-opt tune`",
        )
    return obj


def _endpoint_logprobs(
    base_url: str,
    model: str | None,
    instruction: str,
    texts: list[str],
    labels: list[str],
    api_key_env: str | None = None,
    concurrency: int = 4,
) -> Any:
    """Label-word log-probabilities from an OpenAI-compatible ``/completions`` endpoint that echoes prompt
    logprobs (``echo: true, max_tokens: 0, logprobs: 0``); the label's tokens are those past the prefix."""
    import numpy as np

    from ppt.dpopt.templates import forward
    from ppt.remote.auth import resolve_api_key
    from ppt.remote.client import HttpBackend

    backend = HttpBackend(
        base_url, api_key=resolve_api_key(api_key_env, base_url, required=False), concurrency=concurrency
    )
    out = np.zeros((len(texts), len(labels)))
    try:
        for i, t in enumerate(texts):
            prefix = forward(instruction, t)
            for j, y in enumerate(labels):
                body = {"prompt": prefix + " " + y, "max_tokens": 0, "echo": True, "logprobs": 0, "temperature": 0}
                if model:
                    body["model"] = model
                resp = backend.client.post(backend.url("completions"), json=body)
                if resp.status_code != 200:
                    raise PptError(
                        f"the endpoint answered HTTP {resp.status_code} to a logprobs request",
                        ExitCode.UNAVAILABLE,
                        hint="it must support echo=true with logprobs on /completions",
                    )
                lp = (resp.json().get("choices") or [{}])[0].get("logprobs") or {}
                offs, vals = lp.get("text_offset"), lp.get("token_logprobs")
                if not isinstance(offs, list) or not isinstance(vals, list) or len(offs) != len(vals):
                    raise PptError(
                        "the endpoint's response has no prompt logprobs",
                        ExitCode.UNAVAILABLE,
                        hint="it must support echo=true with logprobs on /completions",
                    )
                out[i, j] = sum(v for o, v in zip(offs, vals) if o >= len(prefix) and v is not None)
    finally:
        backend.close()
    return out


def run_eval(
    prompt_path: str,
    args: StreamArgs,
    label_field: str,
    model: str | None,
    base_url: str | None,
    instruction: str | None = None,
    remote_model: str | None = None,
    api_key_env: str | None = None,
) -> dict:
    """Zero-shot accuracy of the prompt's instruction (or ``instruction``) on labelled records, with a
    Wilson 95% interval. Only aggregate figures are written."""
    import numpy as np

    from ppt.dpopt.evaluate import accuracy, label_logprobs

    prompt = load_prompt(prompt_path)
    labels = [str(y) for y in prompt["labels"]]
    inst = prompt["instruction"] if instruction is None else instruction
    data = read_labelled(args, label_field)
    bad = [i for i, y in enumerate(data.labels) if y not in labels]
    if bad:
        raise PptError(
            f"{len(bad)} record(s) have a label outside the prompt's labels (first at record {bad[0] + 1})",
            ExitCode.DATAERR,
            hint="evaluate on data with the labels the prompt was tuned for",
        )
    if (model is None) == (base_url is None):
        raise PptError("give exactly one of --model and --base-url", ExitCode.USAGE)
    if base_url is not None:
        lp = _endpoint_logprobs(base_url, remote_model, inst, data.texts, labels, api_key_env)
        where = {"base_url": "endpoint"}
    else:
        from ppt.models import load_causal_lm

        lm, tok = load_causal_lm(model, device=args.device)
        lp = label_logprobs(lm, tok, inst, data.texts, labels, batch_size=args.batch_size)
        where = {"model": model}
    gold = np.array([labels.index(y) for y in data.labels])
    res = {**accuracy(lp.argmax(1), gold), **where, "labels": labels}
    write_json(args.output, res)
    return res


class ApplyStage(Stage):
    """Wrap each record's text in the forward template of a tuned prompt (input to `ppt query`)."""

    name = "dp-opt-apply"

    def __init__(self, prompt: dict, text_field: str):
        self.prompt, self.text_field = prompt, text_field

    def __call__(self, records: list[Record]) -> list[dict | RecordError]:
        from ppt.dpopt.templates import forward

        out: list[dict | RecordError] = []
        inst = self.prompt["instruction"]
        src = (self.prompt.get("ppt") or {}).get(STAGE) or {}
        block = {
            "applied": True,
            "prompt_eps": src.get("eps"),
            "prompt_delta": src.get("delta"),
            "prompt_eps_covers": "the tuning data only; this record's text is not protected by it",
            "template": "forward",
        }
        for r in records:
            data = dict(r.data)
            data[self.text_field] = forward(inst, r.text)
            san = stamp_block(r.data, "sanitize")
            covered = san is not None and (san.get("text_field") or self.text_field) == self.text_field
            where = (
                "sanitized: its privacy is ppt.sanitize's"
                if covered
                else "raw (not sanitized): the input text is released as is"
            )
            try:
                out.append(stamp(data, STAGE, {**block, "input": where}))
            except RecordError as e:
                out.append(e)
        return out

    def signature(self) -> dict[str, Any]:
        return {"stage": self.name}
