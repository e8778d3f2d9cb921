"""`ppt query`: send sanitized prompts to an OpenAI-compatible endpoint (or a local model)."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Literal

import typer

from ppt.cli.common import Endpoint, SeedOpt, check_resume_target, warn
from ppt.cli.kit import STREAM, StreamArgs, stream_command

ENDPOINT_PANEL = "Endpoint"
REQUEST_PANEL = "Request"
RELIABILITY_PANEL = "Concurrency, retries, resume"
LOCAL_PANEL = "Local backend (--backend local)"

HELP = """Send each sanitized record to a black-box LLM and add its answer (InferDPT's remote step).

The request is built from [bold]--template[/] only (default: the paper's continuation prompt over the
text field), so no other field of a record leaves the machine; records without a [bold]ppt.sanitize[/]
stamp, or templates naming unsanitized fields, are refused unless --allow-raw. The answer goes to
--output-field (default generation) with a [bold]ppt.query[/] stamp: endpoint, model, template hash,
parameters, token usage, finish reason, attempts.

Keys come only from the environment: --api-key-env NAME sends $NAME; without it $OPENAI_API_KEY is
sent only to the default OpenAI URL, never to a custom --base-url. 429/5xx/timeouts/dropped connections
are retried with exponential backoff and jitter (Retry-After honoured); exit 69 when the endpoint cannot
be reached, 75 when retries run out. --resume FILE journals every answer as it arrives and skips ids
already in FILE on the next run, so a killed job loses nothing and pays for nothing twice.

[bold]Examples[/]
  ppt query --backend local --model smollm2 --allow-raw --max-tokens 30 < examples/prompts.jsonl
  ppt serve --model smollm2 --port 8000 &
  ppt sanitize --mech rantext --eps 6 --keep-original raw < examples/prompts.jsonl \\
    | ppt query --base-url http://127.0.0.1:8000/v1 --model smollm2 > remote.jsonl
  ppt query --model gpt-4o-mini --api-key-env OPENAI_API_KEY --concurrency 8 \\
    --resume journal.jsonl < private.jsonl > remote.jsonl
  ppt query --dry-run --model m --allow-raw < examples/prompts.jsonl
"""


@stream_command()
def query(
    model: Annotated[
        str,
        typer.Option(
            "--model",
            "-m",
            help="Model name at the endpoint; with --backend local, a local causal LM (alias, path, hub id).",
            rich_help_panel=ENDPOINT_PANEL,
        ),
    ],
    base_url: Annotated[
        str | None,
        typer.Option(
            "--base-url",
            help="OpenAI-compatible base URL (default: $OPENAI_BASE_URL, else https://api.openai.com/v1).",
            rich_help_panel=ENDPOINT_PANEL,
        ),
    ] = None,
    backend: Annotated[
        Literal["http", "local"],
        typer.Option(
            "--backend",
            help="http: an OpenAI-compatible endpoint; local: run the same requests on a local model.",
            rich_help_panel=ENDPOINT_PANEL,
        ),
    ] = "http",
    endpoint: Annotated[
        Endpoint,
        typer.Option(
            "--endpoint", help="chat (/chat/completions) or completions (/completions).", rich_help_panel=ENDPOINT_PANEL
        ),
    ] = "chat",
    api_key_env: Annotated[
        str | None,
        typer.Option(
            "--api-key-env",
            help="NAME of the environment variable holding the API key (never the key itself).",
            rich_help_panel=ENDPOINT_PANEL,
        ),
    ] = None,
    template: Annotated[
        str | None,
        typer.Option(
            "--template",
            help="Prompt with {field} placeholders, or @FILE (default: the paper's continuation prompt over the text field).",
            rich_help_panel=REQUEST_PANEL,
        ),
    ] = None,
    system: Annotated[
        str | None,
        typer.Option("--system", help="A fixed system message (no placeholders).", rich_help_panel=REQUEST_PANEL),
    ] = None,
    temperature: Annotated[
        float,
        typer.Option(
            "--temperature", min=0.0, max=2.0, help="Sampling temperature (paper: 0.5).", rich_help_panel=REQUEST_PANEL
        ),
    ] = 0.5,
    max_tokens: Annotated[
        int,
        typer.Option(
            "--max-tokens", min=1, help="Maximum tokens in each answer (paper: 100).", rich_help_panel=REQUEST_PANEL
        ),
    ] = 100,
    top_p: Annotated[
        float | None,
        typer.Option("--top-p", min=0.0, max=1.0, help="Nucleus sampling mass.", rich_help_panel=REQUEST_PANEL),
    ] = None,
    stop: Annotated[
        list[str], typer.Option("--stop", help="Stop sequence (repeatable, up to 4).", rich_help_panel=REQUEST_PANEL)
    ] = [],
    extra_body: Annotated[
        str | None,
        typer.Option(
            "--extra-body",
            help="JSON object (or @FILE) merged into each request body, e.g. '{\"presence_penalty\": 0.5}'.",
            rich_help_panel=REQUEST_PANEL,
        ),
    ] = None,
    output_field: Annotated[
        str, typer.Option("--output-field", help="Field that receives the answer.", rich_help_panel=REQUEST_PANEL)
    ] = "generation",
    allow_raw: Annotated[
        bool,
        typer.Option(
            "--allow-raw",
            help="Send records without a ppt.sanitize stamp, and fields sanitize did not cover.",
            rich_help_panel=REQUEST_PANEL,
        ),
    ] = False,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Print the requests that would be sent (one JSON object per record) and send nothing.",
            rich_help_panel=REQUEST_PANEL,
        ),
    ] = False,
    concurrency: Annotated[
        int,
        typer.Option(
            "--concurrency", "-c", min=1, max=256, help="Requests in flight at once.", rich_help_panel=RELIABILITY_PANEL
        ),
    ] = 4,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            min=0.001,
            help="Seconds to wait for a response before retrying.",
            rich_help_panel=RELIABILITY_PANEL,
        ),
    ] = 120.0,
    max_retries: Annotated[
        int,
        typer.Option(
            "--max-retries",
            min=0,
            help="Retries per request on 429/5xx/timeouts/connection errors.",
            rich_help_panel=RELIABILITY_PANEL,
        ),
    ] = 5,
    retry_backoff: Annotated[
        float,
        typer.Option(
            "--retry-backoff",
            min=0.0,
            help="First backoff in seconds; doubles per retry (capped at 30 s), with jitter.",
            rich_help_panel=RELIABILITY_PANEL,
        ),
    ] = 0.5,
    resume: Annotated[
        str | None,
        typer.Option(
            "--resume",
            help="Journal FILE: answers are appended as they arrive; ids already answered there are not sent again (their saved records are emitted in place).",
            rich_help_panel=RELIABILITY_PANEL,
        ),
    ] = None,
    dtype: Annotated[
        str | None,
        typer.Option(
            "--dtype", help="Local model dtype: auto, float32, float16, bfloat16.", rich_help_panel=LOCAL_PANEL
        ),
    ] = None,
    seed: SeedOpt = None,
    stream: StreamArgs = STREAM,
) -> None:
    import sys

    from ppt.io import ExitCode, PptError, run_stream, stdout_guard
    from ppt.lm.templates import QUERY_TEMPLATE, load_template
    from ppt.stages.query import PROTECTED_BODY_KEYS, QueryRunner, QuerySpec

    text_field, quiet = stream.text_field, stream.quiet
    tpl = load_template(template, QUERY_TEMPLATE, "paper-continuation", {"text": text_field})
    if len(stop) > 4:
        raise PptError("at most 4 --stop sequences", ExitCode.USAGE)
    extra = _parse_extra_body(extra_body, PROTECTED_BODY_KEYS)
    spec = QuerySpec(
        model=model,
        template=tpl,
        endpoint=endpoint,
        system=system,
        temperature=temperature,
        max_tokens=max_tokens,
        top_p=top_p,
        stop=tuple(stop),
        extra_body=extra,
        output_field=output_field,
        text_field=text_field,
        allow_raw=allow_raw,
    )
    if allow_raw:
        warn("--allow-raw: records are sent without requiring a ppt.sanitize stamp")
    if resume is not None:
        check_resume_target(resume, stream.output)

    if backend == "local":
        if base_url is not None or api_key_env is not None:
            raise PptError("--base-url and --api-key-env do not apply to --backend local", ExitCode.USAGE)
        from ppt.lm.door import get_lm
        from ppt.remote.backends import LocalQueryBackend

        with stdout_guard():
            gen = get_lm(model, device=stream.device, dtype=dtype, batch_size=min(stream.batch_size, 16))
        impl = LocalQueryBackend(gen, seed=seed)
    else:
        if seed is not None:
            raise PptError(
                "--seed applies to --backend local only (a seed is never sent to a remote party)", ExitCode.USAGE
            )
        from ppt.remote.auth import check_base_url, default_base_url, is_loopback, resolve_api_key
        from ppt.remote.client import HttpBackend, RetryPolicy

        url = check_base_url(base_url or default_base_url())
        key = resolve_api_key(api_key_env, url, required=not dry_run)
        if key and url.startswith("http://") and not is_loopback(url):
            warn("the API key is sent over plain http to a non-loopback host; prefer https")
        impl = HttpBackend(
            url,
            api_key=key,
            concurrency=concurrency,
            timeout_s=timeout,
            retry=RetryPolicy(max_retries=max_retries, backoff_base_s=retry_backoff),
        )

    journal = None
    if resume is not None:
        from ppt.remote.journal import Journal

        journal = Journal(resume, stream.id_field, output_field)
        if not quiet and len(journal):
            print(f"ppt: query: resuming: {len(journal)} answered record(s) in {resume}", file=sys.stderr)
    runner = QueryRunner(spec, impl, journal=journal, dry_run=dry_run, id_field=stream.id_field)
    # a batch is the unit that runs in parallel: never smaller than the number of workers
    args = dataclasses.replace(
        stream, batch_size=max(stream.batch_size, concurrency), require_text=text_field in tpl.fields
    )
    clean = False
    try:
        code = run_stream(args, runner, desc="query")
        clean = True
    finally:
        impl.close(wait=clean)
        if journal is not None:
            journal.close()
        if not quiet:
            print(runner.summary_line(), file=sys.stderr, flush=True)
    raise typer.Exit(code)


def _parse_extra_body(value: str | None, protected: tuple[str, ...]) -> dict:
    import orjson

    from ppt.io import ExitCode, PptError

    if value is None:
        return {}
    text = value
    if value.startswith("@"):
        try:
            with open(value[1:], "rb") as fh:
                text = fh.read().decode("utf-8")
        except OSError as e:
            raise PptError(f"cannot read --extra-body file {value[1:]}: {e.strerror}", ExitCode.NOINPUT) from None
    try:
        obj = orjson.loads(text)
    except orjson.JSONDecodeError:
        raise PptError(
            "--extra-body is not valid JSON", ExitCode.USAGE, hint="e.g. --extra-body '{\"presence_penalty\": 0.5}'"
        ) from None
    if not isinstance(obj, dict):
        raise PptError("--extra-body must be a JSON object", ExitCode.USAGE)
    bad = [k for k in obj if k in protected]
    if bad:
        raise PptError(
            f"--extra-body may not set {', '.join(bad)} (the prompt comes from --template only)", ExitCode.USAGE
        )
    return obj


def register(app: typer.Typer) -> None:
    app.command(
        "query",
        help=HELP,
        short_help="Send sanitized prompts to an OpenAI-compatible LLM (or a local model); retries, resume.",
    )(query)
