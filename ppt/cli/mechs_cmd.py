"""`ppt mechs`: list the mechanisms with their privacy notion, parameters and defaults."""

from __future__ import annotations

from typing import Annotated

import typer


def describe(name: str) -> dict:
    """What `ppt mechs` shows about one mechanism: its class's ``describe()``."""
    from ppt.mechanisms import mechanism_class

    return mechanism_class(name).describe(name)


def mechs(json_out: Annotated[bool, typer.Option("--json", help="One JSON object per mechanism.")] = False) -> None:
    """List mechanisms with their privacy notion, default eps, space, parameters and keep-verbatim policies.

    Example: ppt mechs        ppt mechs --json | jq -r .name
    """
    import orjson
    from rich.console import Console
    from rich.table import Table

    from ppt.mechanisms import available

    rows = [describe(n) for n in available()]
    if json_out:
        for r in rows:
            typer.echo(orjson.dumps(r).decode())
        return
    table = Table(title="ppt mechanisms", show_lines=True)
    for col in ("name", "notion", "eps", "space / model", "parameters", "policy"):
        table.add_column(col, overflow="fold")
    for r in rows:
        pol = ", ".join(f"{k}={v}" for k, v in (r["policy"] or {}).items())
        params = ", ".join(f"{k}={v}" for k, v in r["defaults"].items())
        table.add_row(r["name"], r["notion"], f"{r['default_eps']:g}", str(r["default_space"] or ""), params, pol)
    Console().print(table)


def register(app: typer.Typer) -> None:
    app.command("mechs", short_help="List mechanisms with their privacy notion and defaults.")(mechs)
