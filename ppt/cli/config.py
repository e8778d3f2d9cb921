"""Per-project defaults: ``ppt.toml`` in the working directory (or ``--config FILE`` before the subcommand, or
``$PPT_CONFIG``), one table per subcommand, keys named like the flags::

    [sanitize]
    mech = "custext+"
    eps = 3
    text-field = "body"
    stopwords = "keep"

    [attack.knn]
    k = [1, 5]

Why click's ``default_map``: a value from the file is the option's default, so a flag given on the command
line always wins, and types and choices are checked exactly as for the flag. Unknown tables or keys are an
error naming them (a typo must not silently leave a default in place). ``ppt env`` prints what was loaded.
"""

from __future__ import annotations

import os
from typing import Any

FILE_NAME = "ppt.toml"
ENV_VAR = "PPT_CONFIG"
LOADED: dict[str, Any] = {}  # this run's config: {"path", "tables"} (for `ppt env`), empty without one


def config_path(explicit: str | None = None) -> str | None:
    """The config file of this run: ``--config FILE``, else ``$PPT_CONFIG``, else ``./ppt.toml`` when present."""
    if explicit:
        return explicit
    if os.environ.get(ENV_VAR):
        return os.environ[ENV_VAR]
    return FILE_NAME if os.path.isfile(FILE_NAME) else None


def read_config(path: str) -> dict[str, Any]:
    """The file's tables (PptError 66 when unreadable, 78 when it is not TOML)."""
    import tomllib

    from ppt.io import ExitCode, PptError

    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except OSError as e:
        raise PptError(f"cannot read config {path}: {e.strerror}", ExitCode.NOINPUT) from None
    except tomllib.TOMLDecodeError as e:
        raise PptError(f"config {path} is not valid TOML: {e}", ExitCode.CONFIG) from None


def default_map(command: Any, tables: dict[str, Any], path: str, where: str = "") -> dict[str, Any]:
    """``tables`` as click's default_map for ``command`` (a click group or command): flag names become
    parameter names; a table or key that names nothing is a PptError (78) naming it."""
    from ppt.io import ExitCode, PptError

    subcommands = getattr(command, "commands", None)
    if subcommands is not None:
        from ppt.cli.main import SUBCOMMANDS

        out: dict[str, Any] = {}
        for name, value in tables.items():
            sub = subcommands.get(name)
            if sub is None and not where and name in SUBCOMMANDS and isinstance(value, dict):
                continue  # a subcommand this run did not load (only the one run is imported): not checked here
            if sub is None or not isinstance(value, dict):
                known = ", ".join(sorted(subcommands))
                raise PptError(
                    f"config {path}: [{where}{name}] is not a subcommand"
                    + (f" of ppt {where.strip('.')}" if where else ""),
                    ExitCode.CONFIG,
                    hint=f"tables name subcommands: {known}",
                )
            out[name] = default_map(sub, value, path, f"{where}{name}.")
        return out
    params = {p.name: p for p in command.params}
    flags = {opt.lstrip("-"): p.name for p in command.params for opt in getattr(p, "opts", [])}
    out = {}
    for key, value in tables.items():
        name = flags.get(key) or (key.replace("-", "_") if key.replace("-", "_") in params else None)
        if name is None or name == "help":
            known = ", ".join(sorted(k for k in flags if len(k) > 1 and k != "help"))
            raise PptError(
                f"config {path}: [{where.rstrip('.')}] has no option {key!r}", ExitCode.CONFIG, hint=f"options: {known}"
            )
        out[name] = value
    return out


def split_config_flag(args: list[str]) -> tuple[str | None, list[str]]:
    """A leading ``--config FILE`` (or ``--config=FILE``) taken off the root command line."""
    if args and args[0] == "--config" and len(args) > 1:
        return args[1], args[2:]
    if args and args[0].startswith("--config="):
        return args[0].split("=", 1)[1], args[1:]
    return None, args


__all__ = ["ENV_VAR", "FILE_NAME", "LOADED", "config_path", "default_map", "read_config", "split_config_flag"]
