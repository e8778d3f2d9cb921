"""`ppt report`: a run report (--report run.json) as a self-contained HTML page."""

from __future__ import annotations

from typing import Annotated

import typer

from ppt.cli.common import handle_errors

HELP = """Render a run report written by --report (any stream command: sanitize, query, extract, attack, eval)
as one self-contained HTML page: the counts, the eps and token distributions as histograms, errors by type,
kept and dropped tokens by reason (under --diagnostics) and the run's parameters and versions. The page has
no external assets (inline CSS and SVG, no script): open it offline, attach it, keep it as a CI artifact.

When the report holds a sample (ppt sanitize --report-sample N --keep-original FIELD), the page shows the
original and the sanitized text side by side, the perturbed tokens highlighted (with --emit-alignment): it
then holds raw text, is written 0600 and stays local.

Examples
  ppt sanitize -m custext+ -e 3 -i docs.jsonl -o private.jsonl --report run.json
  ppt report run.json -o report.html
  ppt sanitize -e 6 --keep-original raw --emit-alignment al --report run.json --report-sample 5 < docs.jsonl > local.jsonl
"""


@handle_errors
def report(
    run_json: Annotated[str, typer.Argument(metavar="RUN_JSON", help="The file --report wrote ('-': stdin).")],
    output: Annotated[
        str, typer.Option("--output", "-o", metavar="FILE", help="Where the HTML page goes ('-': stdout).")
    ] = "-",
) -> None:
    from ppt.io.report_html import render_html
    from ppt.io.run_report import load_report, write_private_aware

    data = load_report(run_json)
    page = render_html(data)
    local = bool(data.get("local_only") or data.get("sample"))
    write_private_aware(output, page, local)
    if local and output != "-":
        typer.echo(f"ppt: note: {output} depends on the raw text (local only): written 0600", err=True)


def register(app: typer.Typer) -> None:
    app.command("report", help=HELP, short_help="A run report (--report run.json) as a self-contained HTML page.")(
        report
    )
