"""`ppt audit`: certify a lower bound on each mechanism's per-token privacy loss and compare it with its stamp."""

from __future__ import annotations

from typing import Annotated

import typer

from ppt.cli.common import DeviceOpt, QuietOpt, handle_errors, parse_params

AUDIT_PANEL = "Audit"

HELP = """Empirical privacy audit: a certified LOWER bound on the per-token privacy loss, against the stamp's claim.

For each mechanism and eps, searches neighbouring token pairs (x, x') and outputs y for the largest
ln P(y|x) / P(y|x'): exact probabilities from the mechanism's own tables (SanText, CusText, TEM, Cape at
a one-token context), RANTEXT's over sampled radii (exact given the radius, KL-Chernoff bounds). The
attaining pairs then run end to end through the sanitize pipeline (--e2e-samples one-token prompts
each, per-record generators) and the counts give a Clopper-Pearson certified bound: this catches a
sampler that does not do what its stamp says. The claim is read from a stamped record's
[bold]ppt.sanitize.accounting[/] (metric-DP claims per unit distance: each pair against eps * d(x, x')
and the worst case eps * max distance over the vocabulary).

stdout: one JSON record per (mechanism, eps): claim, certified, method, confidence, status
("violated" | "holds" | "no-claim"), attaining pairs, end-to-end counts. stderr: a table.
Exit 0 unless the options are wrong, or a violation with --fail-on-violation (exit 1).

[bold]Examples[/]
  ppt audit --mech rantext --eps 1 --eps 3 --eps 6 > rantext-audit.jsonl
  ppt audit -m tem -m santext -e 3 --space glove-6b-50d:2000 --pairs 100
  ppt audit -m custext --eps 1 --e2e-samples 200000 --alpha 1e-9 --fail-on-violation
  ppt audit -m cape -e 6 --model smollm2 --pairs 32 --e2e-samples 2000
"""


def audit(
    mech: Annotated[
        list[str],
        typer.Option(
            "--mech", "-m", help="Mechanism to audit (repeatable; see `ppt mechs`).", rich_help_panel=AUDIT_PANEL
        ),
    ] = ["rantext"],  # noqa: B006
    eps: Annotated[
        list[float],
        typer.Option(
            "--eps", "-e", help="Privacy parameter (repeatable; default: the mechanism's).", rich_help_panel=AUDIT_PANEL
        ),
    ] = [],  # noqa: B006
    space: Annotated[
        str | None,
        typer.Option("--space", help="Embedding space (default: each mechanism's own).", rich_help_panel=AUDIT_PANEL),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option("--model", help="Context model for Cape (alias, path or hub id).", rich_help_panel=AUDIT_PANEL),
    ] = None,
    param: Annotated[
        list[str],
        typer.Option("--param", "-p", help="Mechanism parameter KEY=VALUE (repeatable).", rich_help_panel=AUDIT_PANEL),
    ] = [],  # noqa: B006
    pairs: Annotated[
        int,
        typer.Option(
            "--pairs",
            min=1,
            help="Input tokens sampled for the pair search (every pair on vocabularies up to 64).",
            rich_help_panel=AUDIT_PANEL,
        ),
    ] = 200,
    samples: Annotated[
        int,
        typer.Option(
            "--samples",
            min=100,
            help="RANTEXT: radii drawn to certify P(y|x) over the random list.",
            rich_help_panel=AUDIT_PANEL,
        ),
    ] = 1_000_000,
    e2e_samples: Annotated[
        int,
        typer.Option(
            "--e2e-samples",
            min=0,
            help="End-to-end runs of each attaining one-token prompt (0: skip).",
            rich_help_panel=AUDIT_PANEL,
        ),
    ] = 50_000,
    top: Annotated[
        int,
        typer.Option("--top", min=1, help="Attaining pairs reported and run end to end.", rich_help_panel=AUDIT_PANEL),
    ] = 3,
    context: Annotated[
        str,
        typer.Option(
            "--context",
            help="Cape: audit the position after this text (words the policy keeps, e.g. 'in the '), not a "
            "one-token prompt.",
            rich_help_panel=AUDIT_PANEL,
        ),
    ] = "",
    alpha: Annotated[
        float, typer.Option("--alpha", help="Failure probability of each certified bound.", rich_help_panel=AUDIT_PANEL)
    ] = 1e-6,
    seed: Annotated[
        int | None,
        typer.Option(
            "--seed",
            help="Seed of the search and the end-to-end runs (default 0; the audit is about the mechanism, not a secret).",
            rich_help_panel=AUDIT_PANEL,
        ),
    ] = 0,
    fail_on_violation: Annotated[
        bool,
        typer.Option("--fail-on-violation", help="Exit 1 when any claim is violated.", rich_help_panel=AUDIT_PANEL),
    ] = False,
    device: DeviceOpt = "auto",
    quiet: QuietOpt = False,
) -> None:
    with handle_errors():
        import orjson
        from rich.console import Console
        from rich.table import Table

        from ppt.io import stdout_guard
        from ppt.io.stamp import jsonable
        from ppt.stages.audit import run_audit

        params = parse_params(param)
        results = []
        for name in mech:
            for e in eps or [None]:
                with stdout_guard():
                    res = run_audit(
                        name,
                        e,
                        space=space,
                        model=model,
                        params=params,
                        pairs=pairs,
                        samples=samples,
                        e2e_samples=e2e_samples,
                        alpha=alpha,
                        seed=seed,
                        top=top,
                        device=device,
                        quiet=quiet,
                        context=context,
                    )
                typer.echo(orjson.dumps(jsonable(res)).decode())
                results.append(res)
        if not quiet:
            table = Table(title=f"ppt audit (certified lower bounds, confidence 1 - {alpha:g})", show_lines=True)
            for col in (
                "mechanism",
                "eps",
                "claimed",
                "certified",
                "end to end",
                "status",
                "attaining pairs (x, x' -> y: loss)",
            ):
                table.add_column(col, overflow="fold")
            for r in results:
                c = r["claim"]
                claimed = (
                    "—"
                    if c["eps_per_token"] is None
                    else f"{c['eps_per_token']:g}"
                    + (f" per unit (worst {c['worst_case_eps']:.3g})" if "worst_case_eps" in c else "")
                )
                cert = r["certified"]
                cert_s = cert if isinstance(cert, str) else f"{cert:.3f}"
                if "certified_per_unit" in r:
                    cpu = r["certified_per_unit"]
                    cert_s += f" ({cpu if isinstance(cpu, str) else f'{cpu:.3f}'} per unit)"
                e2e = r["end_to_end"]["certified"]
                e2e_s = e2e if isinstance(e2e, str) else f"{e2e:.3f}"
                pairs_s = "\n".join(
                    f"{p['x']}, {p['x_prime']} -> {p['y']}: {p['loss'] if isinstance(p['loss'], str) else format(p['loss'], '.3f')}"
                    for p in r["pairs"]
                )
                table.add_row(r["mechanism"], f"{r['eps']:g}", claimed, cert_s, e2e_s, r["status"], pairs_s)
            Console(stderr=True, width=max(Console(stderr=True).width, 160)).print(table)
        if fail_on_violation and any(r["status"] == "violated" for r in results):
            raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command(
        "audit", help=HELP, short_help="Certify a lower bound on each mechanism's per-token privacy loss vs its stamp."
    )(audit)
