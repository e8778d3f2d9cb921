"""`ppt mechs`: list the mechanisms with their privacy notion, parameters and defaults."""

from __future__ import annotations

from typing import Annotated

import typer


def describe(name: str) -> dict:
    """What `ppt mechs` shows about one mechanism: its class's ``describe()``."""
    from ppt.mechanisms import mechanism_class

    return mechanism_class(name).describe(name)


def expand_signature(sig: str) -> dict:
    """A stamp signature expanded into the mechanism's full parameters: its class's defaults and default
    policy overridden by what the signature names (nothing is loaded: no space, no model)."""
    from ppt import __version__
    from ppt.mechanisms.privacy import PASS_THROUGH
    from ppt.mechanisms.signature import parse_signature

    p = parse_signature(sig)
    d = describe(p["mechanism"])
    params = {k: v for k, v in d["defaults"].items() if k != "eps"}
    params.update(p["params"])
    policy = {**(d["policy"] or {}), **(p["policy"] or {})}
    try:
        from ppt.mechanisms.policy import Policy
        from ppt.mechanisms.privacy import policy_passes

        passes = {r: PASS_THROUGH[r] for r, _ in policy_passes(Policy(**policy))}
    except (TypeError, ValueError):
        passes = PASS_THROUGH
    if "protect" in p["params"]:  # --protect detected: what no detector marks is released raw
        passes = {**passes, "undetected": PASS_THROUGH["undetected"]}
    out = {
        "signature": sig,
        "mechanism": p["mechanism"],
        "space": p["space"] or d["default_space"],
        "space_hash_prefix": p["space_hash"],
        "params": params,
        "policy": policy,
        "notion": d["notion"],
        "summary": d["summary"],
        "version": p["version"],
        "unprotected_by_policy": passes,
    }
    if d["default_eps"] is not None:  # a mechanism that takes no eps shows none (older signatures wrote eps:1)
        out = {**dict(list(out.items())[:2]), "eps": p["eps"], **dict(list(out.items())[2:])}
    if p["version"] and p["version"] != __version__:
        out["note"] = f"stamped by ppt {p['version']}; this is ppt {__version__}: defaults may differ"
    return out


def mechs(
    json_out: Annotated[bool, typer.Option("--json", help="One JSON object per mechanism.")] = False,
    describe_sig: Annotated[
        str | None,
        typer.Option(
            "--describe",
            metavar="SIGNATURE",
            help="Expand a stamp signature (ppt.sanitize.signature) into the mechanism's full parameters, as JSON.",
        ),
    ] = None,
) -> None:
    """List mechanisms with their privacy notion, default eps, space, parameters and keep-verbatim policies,
    or expand one stamp signature with --describe.

    Example: ppt mechs        ppt mechs --json | jq -r .name
             ppt mechs --describe 'rantext|eps:6|space:cl100k-minilm:11000#59d7616b|z:calibrated|pol:drop.digits.keep.perturb.sentence|v:0.1.0'
    """
    import orjson
    from rich.console import Console
    from rich.table import Table

    from ppt.mechanisms import available

    if describe_sig is not None:
        from ppt.cli.common import handle_errors
        from ppt.io import ExitCode, PptError

        with handle_errors():
            try:
                out = expand_signature(describe_sig)
            except ValueError as e:
                raise PptError(
                    str(e), exit_code=ExitCode.USAGE, hint="copy it from a record's ppt.sanitize.signature"
                ) from None
            except KeyError as e:
                raise PptError(str(e.args[0]), exit_code=ExitCode.USAGE, hint="list them with `ppt mechs`") from None
            typer.echo(orjson.dumps(out, option=orjson.OPT_INDENT_2).decode())
        return

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
        declared = {p["name"]: p["expects"] for p in r.get("params", [])}
        params = ", ".join(
            f"{k}={v}" + (f" ({declared[k]})" if k in declared else "") for k, v in r["defaults"].items()
        )
        table.add_row(
            r["name"],
            r["notion"],
            "none" if r["default_eps"] is None else f"{r['default_eps']:g}",
            str(r["default_space"] or ""),
            params,
            pol,
        )
    Console().print(table)


def register(app: typer.Typer) -> None:
    app.command("mechs", short_help="List mechanisms with their privacy notion and defaults.")(mechs)
