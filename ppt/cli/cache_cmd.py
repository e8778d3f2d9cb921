"""`ppt cache ls|verify|rm`: inspect and manage cached artifacts."""

from __future__ import annotations

from typing import Annotated

import typer

from ppt.cli.common import handle_errors

cache_app = typer.Typer(help="Inspect and manage cached artifacts (spaces, tables, converted models).", no_args_is_help=True)


@cache_app.command("ls")
def ls(json_out: Annotated[bool, typer.Option("--json", help="One JSON object per artifact on stdout.")] = False) -> None:
    """List artifacts: kind, key, size, whether complete.

    Example: ppt cache ls --json | jq .path
    """
    with handle_errors():
        import json

        import orjson
        from rich.console import Console
        from rich.table import Table

        from ppt.cache import MANIFEST, Cache, dir_size

        cache = Cache()
        rows = []
        for kind, key, path in cache.entries():
            mpath = path / MANIFEST
            meta = json.loads(mpath.read_bytes()).get("deps", {}) if mpath.is_file() else {}
            rows.append({"kind": kind, "key": key, "path": str(path), "bytes": dir_size(path),
                         "complete": mpath.is_file(), "deps": meta})
        if json_out:
            for r in rows:
                typer.echo(orjson.dumps(r).decode())
            return
        table = Table(title=f"ppt cache: {cache.root}")
        for col in ("kind", "key", "MB", "complete", "depends on"):
            table.add_column(col)
        for r in rows:
            deps = ", ".join(f"{k}={v}" for k, v in r["deps"].items() if k not in ("builder",))
            table.add_row(r["kind"], r["key"], f"{r['bytes'] / 1e6:.1f}", "yes" if r["complete"] else "NO", deps[:80])
        Console().print(table)


@cache_app.command("verify")
def verify_cmd(
    fix: Annotated[bool, typer.Option("--fix", help="Remove artifacts that fail (they are rebuilt on next use).")] = False,
) -> None:
    """Check every artifact's files against its sha256 manifest; exit 1 if any fails.

    Example: ppt cache verify --fix
    """
    with handle_errors():
        import sys

        from ppt.cache import Cache, CorruptArtifact, verify

        cache = Cache()
        bad = 0
        for kind, key, path in cache.entries():
            try:
                verify(path, deep=True)
                print(f"ok      {kind}/{key}", file=sys.stderr)
            except CorruptArtifact as e:
                bad += 1
                print(f"CORRUPT {kind}/{key}: {e}", file=sys.stderr)
                if fix:
                    cache.remove(kind, key)
                    print(f"removed {kind}/{key}", file=sys.stderr)
        if bad:
            raise typer.Exit(1)


@cache_app.command("rm")
def rm(
    target: Annotated[list[str], typer.Argument(help="KIND, KIND/KEY, or 'all'.")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Required with 'all'.")] = False,
) -> None:
    """Remove artifacts by kind, kind/key, or all of them.

    Example: ppt cache rm sorted-rows      ppt cache rm all --yes
    """
    with handle_errors():
        import sys

        from ppt.cache import Cache
        from ppt.io import ExitCode, PptError

        cache = Cache()
        if "all" in target and not yes:
            raise PptError("refusing to remove the whole cache without --yes", exit_code=ExitCode.USAGE)
        removed = 0
        for kind, key, _ in cache.entries():
            if "all" in target or kind in target or f"{kind}/{key}" in target:
                cache.remove(kind, key)
                removed += 1
        print(f"ppt: removed {removed} artifact(s)", file=sys.stderr)


def register(app: typer.Typer) -> None:
    app.add_typer(cache_app, name="cache", help="Inspect and manage cached artifacts: ls, verify, rm.")
