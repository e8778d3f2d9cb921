"""Every subcommand module registers one way: `register(app)` adds the command or group that `SUBCOMMANDS`
lists it under."""

from __future__ import annotations

import importlib

import typer


def test_each_subcommand_module_registers_the_command_it_is_listed_under():
    from ppt.cli.main import SUBCOMMANDS, requested_subcommand

    for name, module in SUBCOMMANDS.items():
        app = typer.Typer()

        @app.callback()
        def root() -> None:
            pass

        importlib.import_module(f"ppt.cli.{module}").register(app)
        assert list(typer.main.get_command(app).commands) == [name]
    assert requested_subcommand(["ppt", "dp-opt", "tune"]) == "dp-opt"
