"""Shared CLI options and error handling (ppt.cli.common) on a throwaway typer app."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from ppt.cli.common import (
    BatchSizeOpt,
    DeviceOpt,
    IdFieldOpt,
    InputOpt,
    OnErrorOpt,
    OutputOpt,
    QuietOpt,
    SeedOpt,
    TextFieldOpt,
    handle_errors,
    stream_args,
)
from ppt.io import ExitCode, PptError, StreamArgs

runner = CliRunner()


def make_app(behaviour: str = "ok") -> tuple[typer.Typer, dict]:
    app = typer.Typer()
    seen: dict = {}

    @app.command()
    @handle_errors
    def cmd(
        input: InputOpt = "-",
        output: OutputOpt = "-",
        text_field: TextFieldOpt = "text",
        id_field: IdFieldOpt = "id",
        on_error: OnErrorOpt = "fail",
        batch_size: BatchSizeOpt = 64,
        seed: SeedOpt = None,
        quiet: QuietOpt = False,
        device: DeviceOpt = "auto",
    ) -> None:
        seen["seed"] = seed
        seen["opts"] = stream_args(
            input=input,
            output=output,
            text_field=text_field,
            id_field=id_field,
            on_error=on_error,
            batch_size=batch_size,
            quiet=quiet,
            device=device,
        )
        if behaviour == "config":
            raise PptError("eps must be > 0", ExitCode.CONFIG, hint="pass --eps 6")
        if behaviour == "interrupt":
            raise KeyboardInterrupt

    return app, seen


def test_defaults_and_parsing():
    app, seen = make_app()
    r = runner.invoke(app, [])
    assert r.exit_code == 0, r.output
    assert seen["opts"] == StreamArgs()
    assert seen["seed"] is None and seen["opts"].device == "auto"

    r = runner.invoke(
        app,
        [
            "-i",
            "a.jsonl",
            "-o",
            "b.jsonl",
            "--text-field",
            "body",
            "--id-field",
            "uid",
            "--on-error",
            "record",
            "--batch-size",
            "8",
            "--seed",
            "3",
            "-q",
            "--device",
            "cuda:1",
        ],
    )
    assert r.exit_code == 0, r.output
    assert seen["opts"] == StreamArgs("a.jsonl", "b.jsonl", "body", "uid", "record", 8, True, device="cuda:1")
    assert seen["seed"] == 3 and not hasattr(seen["opts"], "seed")  # the seed goes to the stage, not the stream


@pytest.mark.parametrize(
    "args", [["--on-error", "ignore"], ["--batch-size", "0"], ["--device", "gpu"], ["--seed", "x"]]
)
def test_bad_options_are_usage_errors(args):
    app, _ = make_app()
    assert runner.invoke(app, args).exit_code == 2


def test_ppt_error_reported_with_hint():
    app, _ = make_app("config")
    r = runner.invoke(app, [])
    assert r.exit_code == 78
    assert "ppt: error: eps must be > 0" in r.stderr
    assert "  hint: pass --eps 6" in r.stderr
    assert r.stdout == ""


def test_keyboard_interrupt_exits_130():
    app, _ = make_app("interrupt")
    r = runner.invoke(app, [])
    assert r.exit_code == 130


def test_context_manager_form(capsys):
    with pytest.raises(typer.Exit) as ei:
        with handle_errors():
            raise PptError("no input", ExitCode.NOINPUT)
    assert ei.value.exit_code == 66
    assert "ppt: error: no input" in capsys.readouterr().err
