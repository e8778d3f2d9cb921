"""Entry point: builds the typer app from one module per subcommand.

``SUBCOMMANDS`` maps each subcommand's name to the module that defines it; every such module has one
``register(app)`` that adds its command or group (and nothing registers at import). Heavy imports (torch,
transformers) happen inside command bodies so that ``ppt --help`` stays fast.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys

import typer
from typer.core import TyperGroup

from ppt import __version__

# subcommand name -> its module in ppt.cli (in the order `ppt --help` lists them)
SUBCOMMANDS = {
    "precompute": "precompute_cmd",
    "sanitize": "sanitize_cmd",
    "mechs": "mechs_cmd",
    "query": "query_cmd",
    "serve": "serve_cmd",
    "extract": "extract_cmd",
    "restore": "restore_cmd",
    "report": "report_cmd",
    "attack": "attack_cmd",
    "eval": "eval_cmd",
    "cache": "cache_cmd",
    "models": "models_cmd",
    "env": "env_cmd",
    "audit": "audit_cmd",
    "snd": "snd_cmd",
    "dp-opt": "dpopt_cmd",
    "prosan": "prosan_cmd",
}


def repeated_option(group, args: list[str]) -> str | None:
    """The first option given twice on the command line that takes one value (the last would silently win:
    `--text-field a --text-field b`), or None. ``args``: the tokens after ``ppt``."""
    cmd, seen, i = group, {}, 0
    while i < len(args):
        tok = args[i]
        if tok == "--":
            break
        sub = getattr(cmd, "commands", None)
        if isinstance(sub, dict) and tok in sub:
            cmd, seen = sub[tok], {}
            i += 1
            continue
        name, _, inline = tok.partition("=")
        param = next((p for p in cmd.params if name in [*getattr(p, "opts", []), *(p.secondary_opts or [])]), None)
        if param is not None and getattr(param, "param_type_name", "") == "option":
            takes_value = not getattr(param, "is_flag", False) and not getattr(param, "count", False)
            if takes_value and not getattr(param, "multiple", False):
                if param.name in seen:
                    return name
                seen[param.name] = name
            i += 2 if takes_value and not inline and tok == name else 1
            continue
        i += 1
    return None


class PptGroup(TyperGroup):
    """The root command: refuses an option repeated where only one value is kept (exit 2); per-project
    defaults from ``ppt.toml`` / ``--config FILE`` (ppt.cli.config) become the options' defaults; every
    command's help prose reflows to the terminal (ppt.cli.help), applied here, when typer builds the app."""

    def __init__(self, *args, **kwargs) -> None:  # noqa: ANN002, ANN003 - click's signature
        super().__init__(*args, **kwargs)
        from ppt.cli.help import reflow_tree

        reflow_tree(self)

    def make_context(self, info_name, args, parent=None, **extra):  # noqa: ANN001, ANN201 - click's signature
        from ppt.cli import config

        explicit, args = config.split_config_flag(list(args))
        config.LOADED.clear()
        path = config.config_path(explicit)
        if path is not None and "default_map" not in extra:
            from ppt.cli.common import report
            from ppt.io import PptError

            try:
                tables = config.read_config(path)
                extra["default_map"] = config.default_map(self, tables, path)
            except PptError as err:
                report(err)
                raise SystemExit(int(err.exit_code)) from None
            config.LOADED.update(path=os.path.abspath(path), tables=tables)
        return super().make_context(info_name, args, parent=parent, **extra)

    def parse_args(self, ctx, args: list[str]) -> list[str]:  # noqa: ANN001 - click's signature
        again = repeated_option(self, args)
        if again is not None:
            try:
                from typer._click.exceptions import UsageError  # typer vendors click from 0.20 on
            except ImportError:  # pragma: no cover - older typer on click
                from click import UsageError

            raise UsageError(f"{again} is given more than once; it takes one value (the last would win)", ctx)
        return super().parse_args(ctx, args)


def _flags_without_a_type_marker() -> None:
    """Help shows a value's type (``<str>``, ``<int>``) and none for an on/off flag, which takes no value (typer
    0.2x prints ``<bool>`` beside every flag, ``--help`` included)."""
    try:
        from typer.core import TyperOption
    except ImportError:  # pragma: no cover - another typer layout: leave its help as it is
        return
    shown = getattr(TyperOption, "display_type_rich", None)
    if shown is None or getattr(shown, "_ppt", False):
        return

    def display_type_rich(self, ctx):  # noqa: ANN001 - typer's signature
        return None if getattr(self, "is_flag", False) and not getattr(self, "count", False) else shown(self, ctx)

    display_type_rich._ppt = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display_type_rich


_flags_without_a_type_marker()

app = typer.Typer(
    cls=PptGroup,
    name="ppt",
    help="Keep private text out of prompts sent to black-box LLMs. Reads and writes JSONL streams. "
    "Per-project defaults: ppt.toml in the working directory (or --config FILE before the subcommand, or "
    "$PPT_CONFIG), one table per subcommand, keys named like the flags; flags win.",
    no_args_is_help=True,
    rich_markup_mode="rich",
    context_settings={"help_option_names": ["-h", "--help"]},
    add_completion=True,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"ppt {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Keep private text out of prompts sent to black-box LLMs."""
    _install_log_handlers()
    from ppt.progress import set_run_quiet

    set_run_quiet(False)  # every invocation starts loud (in-process runs too); the stream options set it


def _install_log_handlers() -> None:
    """Render library warnings and notes as ``ppt: warning: ...`` / ``ppt: note: ...`` on this run's stderr."""
    import logging

    from ppt.log import install_cli_handlers, logger

    install_cli_handlers()
    for handler in logger.handlers:  # follow sys.stderr when it was replaced since the last run (tests)
        if getattr(handler, "_ppt", False) and isinstance(handler, logging.StreamHandler):
            handler.setStream(sys.stderr)


def build_app(only: str | None = None) -> typer.Typer:
    """Register every subcommand, or only ``only`` (start-up: a run of one subcommand does not import
    the other fourteen modules)."""
    for name in SUBCOMMANDS if only is None else [only]:
        modname = f"ppt.cli.{SUBCOMMANDS[name]}"
        if importlib.util.find_spec(modname) is None:
            continue
        importlib.import_module(modname).register(app)
    return app


def requested_subcommand(argv: list[str] | None = None) -> str | None:
    """The subcommand this process runs when it is the ppt executable (``ppt NAME ...`` or ``python -m
    ppt.cli.main NAME ...``) and is not completing a command line; None (register all) otherwise, e.g.
    ``ppt --help``, shell completion, or an import from other code (tests, docgen)."""
    argv = sys.argv if argv is None else argv
    if len(argv) < 2 or argv[1] not in SUBCOMMANDS or any(k.endswith("_COMPLETE") for k in os.environ):
        return None
    prog = os.path.basename(argv[0] or "")
    main_py = os.path.abspath(argv[0] or "") == os.path.abspath(__file__)
    return argv[1] if prog == "ppt" or main_py else None


build_app(requested_subcommand())


def run() -> None:
    """Console-script entry: keep library chatter off stdout, exit quietly on a closed pipe."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    try:
        app()
    except BrokenPipeError:
        from ppt.io.stdout import silence_stdout

        silence_stdout()
        sys.exit(0)


if __name__ == "__main__":
    run()
