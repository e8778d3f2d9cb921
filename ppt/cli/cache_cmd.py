"""`ppt cache ls|verify|rm`: inspect and manage cached artifacts."""

from __future__ import annotations

from typing import Annotated

import typer

from ppt.cli.common import handle_errors

_STATE_LABEL = {
    "ok": "yes",
    "incomplete": "NO (incomplete)",
    "bad-manifest": "NO (bad manifest)",
    "building": "building",
    "stale-build": "STALE build",
    "obsolete": "OBSOLETE (unused)",
}


def ls(
    json_out: Annotated[bool, typer.Option("--json", help="One JSON object per artifact on stdout.")] = False,
) -> None:
    """List artifacts: kind, key, size, state.

    State is ok, incomplete (no manifest), bad-manifest (unreadable or malformed), building (a live
    build), stale-build (left by a killed build; `ppt cache rm stale` removes it) or obsolete (a kind
    no version of ppt reads any more, such as the former per-eps santext-table; `ppt cache rm obsolete`).
    Files are not hashed here: `ppt cache verify` does that.

    Example: ppt cache ls --json | jq .path
    """
    with handle_errors():
        import orjson
        from rich.console import Console
        from rich.table import Table

        from ppt.cache import Cache, dir_size

        cache = Cache()
        rows = []
        for e in cache.scan():
            deps = (e.manifest or {}).get("deps", {})
            rows.append(
                {
                    "kind": e.kind,
                    "key": e.key,
                    "path": str(e.path),
                    "bytes": dir_size(e.path),
                    "complete": e.state in ("ok", "obsolete"),
                    "state": e.state,
                    "detail": e.detail,
                    "deps": deps,
                }
            )
        if json_out:
            for r in rows:
                typer.echo(orjson.dumps(r).decode())
            return
        table = Table(title=f"ppt cache: {cache.root}")
        for col in ("kind", "key", "MB", "complete", "depends on"):
            table.add_column(col)
        for r in rows:
            deps = ", ".join(f"{k}={v}" for k, v in r["deps"].items() if k not in ("builder",))
            table.add_row(
                r["kind"],
                r["key"],
                f"{r['bytes'] / 1e6:.1f}",
                _STATE_LABEL.get(r["state"], r["state"]),
                deps[:80] or r["detail"][:80],
            )
        Console().print(table)


def verify_cmd(
    fix: Annotated[
        bool,
        typer.Option(
            "--fix", help="Remove artifacts that fail and stale build directories (artifacts are rebuilt on next use)."
        ),
    ] = False,
) -> None:
    """Check every artifact's files against the full sha256 in its manifest; exit 1 if any fails.

    A passing artifact has its files' fingerprints recorded (when the cache is writable), so loads take
    the cheap check afterwards; run it before mounting a cache read-only. Stale build directories are
    reported and, with --fix, removed.

    Example: ppt cache verify --fix
    """
    with handle_errors():
        import sys

        from ppt.cache import Cache, CorruptArtifact, record_verified, verify

        cache = Cache()
        bad = 0
        for e in cache.scan():
            name = f"{e.kind}/{e.key}" if e.kind else e.key
            if e.is_build_dir:
                if e.state == "stale-build":
                    print(f"STALE   {name}: build directory {e.detail}", file=sys.stderr)
                    if fix and cache.remove_build_dir(e):
                        print(f"removed {name}", file=sys.stderr)
                continue
            try:
                manifest = verify(e.path, deep=True)
                record_verified(e.path, manifest)
                print(f"ok      {name}", file=sys.stderr)
            except CorruptArtifact as err:
                bad += 1
                print(f"CORRUPT {name}: {err}", file=sys.stderr)
                if fix:
                    cache.remove(e.kind, e.key)
                    print(f"removed {name}", file=sys.stderr)
        if bad:
            raise typer.Exit(1)


def rm(
    target: Annotated[
        list[str],
        typer.Argument(
            help="KIND, KIND/KEY, 'stale' (build directories left by killed builds), 'bad' (artifacts with a missing or malformed manifest), 'obsolete' (kinds nothing reads any more), or 'all'."
        ),
    ],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Required with 'all'.")] = False,
) -> None:
    """Remove artifacts by kind, kind/key, stale build directories, bad artifacts, or all of them.

    'all' removes stale build directories too; a build in progress (its lock held) is never removed.

    Example: ppt cache rm sorted-rows      ppt cache rm stale bad obsolete      ppt cache rm all --yes
    """
    with handle_errors():
        import sys

        from ppt.cache import Cache
        from ppt.io import ExitCode, PptError

        cache = Cache()
        if "all" in target and not yes:
            raise PptError("refusing to remove the whole cache without --yes", exit_code=ExitCode.USAGE)
        removed = stale = busy = 0
        for e in cache.scan():
            if e.is_build_dir:
                if "all" in target or "stale" in target or (e.kind and e.kind in target):
                    if cache.remove_build_dir(e):
                        stale += 1
                    else:
                        busy += 1
                continue
            if (
                "all" in target
                or e.kind in target
                or f"{e.kind}/{e.key}" in target
                or ("bad" in target and e.state in ("incomplete", "bad-manifest"))
                or ("obsolete" in target and e.state == "obsolete")
            ):
                cache.remove(e.kind, e.key)
                removed += 1
        msg = f"ppt: removed {removed} artifact(s)"
        if stale:
            msg += f" and {stale} stale build director{'y' if stale == 1 else 'ies'}"
        print(msg, file=sys.stderr)
        if busy:
            print(
                f"ppt: kept {busy} build director{'y' if busy == 1 else 'ies'} in use by a live build", file=sys.stderr
            )


def register(app: typer.Typer) -> None:
    group = typer.Typer(
        help="Inspect and manage cached artifacts (spaces, tables, converted models).", no_args_is_help=True
    )
    group.command("ls")(ls)
    group.command("verify")(verify_cmd)
    group.command("rm")(rm)
    app.add_typer(group, name="cache", help="Inspect and manage cached artifacts: ls, verify, rm.")
