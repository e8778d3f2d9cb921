"""The stream-command kit (ppt.cli.kit): the shared stream options declared once, on a throwaway typer app."""

from __future__ import annotations

from typing import Annotated

import pytest
import typer
from typer.testing import CliRunner

from ppt.cli.common import RUN_PANEL
from ppt.cli.kit import SHARED, STREAM, StreamArgs, custom, stream_command
from ppt.io import ExitCode, PptError

runner = CliRunner()

KOpt = Annotated[int, typer.Option("--k", help="An option of this command only.")]
LazyBatchOpt = Annotated[
    int | None, typer.Option("--batch-size", min=1, help="Default: the model's.", rich_help_panel=RUN_PANEL)
]


def app_of(command) -> typer.Typer:
    app = typer.Typer()
    app.command("cmd")(command)

    @app.callback()
    def root() -> None:  # a group, so that `cmd` is named on the command line as in ppt
        pass

    return app


def params_of(app: typer.Typer) -> list[str]:
    return [p.name for p in typer.main.get_command(app).commands["cmd"].params]


def test_defaults_flags_and_the_stream_passed_in():
    seen = {}

    @stream_command()
    def cmd(k: KOpt = 1, stream: StreamArgs = STREAM) -> None:
        seen.update(k=k, stream=stream)

    app = app_of(cmd)
    r = runner.invoke(app, ["cmd"])
    assert r.exit_code == 0, r.output
    assert seen == {"k": 1, "stream": StreamArgs()}

    args = ["-i", "a.jsonl", "-o", "b.jsonl", "--text-field", "body", "--id-field", "uid", "--on-error", "record"]
    r = runner.invoke(app, ["cmd", *args, "--batch-size", "8", "--device", "cuda:1", "-q", "--k", "3"])
    assert r.exit_code == 0, r.output
    assert seen["k"] == 3
    assert seen["stream"] == StreamArgs("a.jsonl", "b.jsonl", "body", "uid", "record", 8, True, device="cuda:1")


def test_the_shared_options_stand_where_the_stream_parameter_is_in_one_order():
    @stream_command()
    def cmd(k: KOpt = 1, stream: StreamArgs = STREAM, k2: Annotated[int, typer.Option("--k2")] = 2) -> None:
        pass

    assert params_of(app_of(cmd)) == ["k", *SHARED, "report", "k2"]
    assert list(SHARED) == [
        "input",
        "output",
        "input_format",
        "output_format",
        "text_field",
        "id_field",
        "on_error",
        "batch_size",
        "device",
        "quiet",
    ]


def test_per_command_defaults_omissions_and_declarations():
    seen = {}

    @stream_command(omit={"device", "on_error", "text_field"}, on_error="record", batch_size=8, private=True)
    def small(stream: StreamArgs = STREAM) -> None:
        seen["stream"] = stream

    app = app_of(small)
    assert params_of(app) == [
        "input",
        "output",
        "input_format",
        "output_format",
        "id_field",
        "batch_size",
        "quiet",
        "report",
    ]
    assert runner.invoke(app, ["cmd"]).exit_code == 0
    # an omitted option's StreamArgs field: the value given, else its default
    assert seen["stream"] == StreamArgs(on_error="record", batch_size=8, private=True)
    assert runner.invoke(app, ["cmd", "--device", "cpu"]).exit_code == 2

    @stream_command(batch_size=custom(LazyBatchOpt, None), require_text=False)
    def lazy(stream: StreamArgs = STREAM) -> None:
        seen["stream"] = stream

    app = app_of(lazy)
    assert runner.invoke(app, ["cmd"]).exit_code == 0
    assert seen["stream"].batch_size is None and seen["stream"].require_text is False
    r = runner.invoke(app, ["cmd", "--help"], env={"COLUMNS": "200"})
    assert "Default: the model's." in r.output
    assert runner.invoke(app, ["cmd", "--batch-size", "0"]).exit_code == 2


@pytest.mark.parametrize(
    "args", [["--on-error", "ignore"], ["--batch-size", "0"], ["--device", "gpu"], ["--text-field"]]
)
def test_bad_shared_options_are_usage_errors(args):
    @stream_command()
    def cmd(stream: StreamArgs = STREAM) -> None:
        pass

    assert runner.invoke(app_of(cmd), ["cmd", *args]).exit_code == 2


def test_errors_are_reported_like_every_command():
    @stream_command()
    def cmd(stream: StreamArgs = STREAM) -> None:
        raise PptError(f"cannot read {stream.input}", ExitCode.NOINPUT, hint="check the path")

    r = runner.invoke(app_of(cmd), ["cmd", "-i", "x.jsonl"])
    assert r.exit_code == 66
    assert "ppt: error: cannot read x.jsonl" in r.stderr and "  hint: check the path" in r.stderr


def test_mistakes_fail_when_the_command_is_defined():
    with pytest.raises(TypeError, match="not a shared stream option: seed"):
        stream_command(seed=1)
    with pytest.raises(TypeError, match="not a shared stream option: dev"):
        stream_command(omit={"dev"})
    with pytest.raises(TypeError, match="stream: StreamArgs"):

        @stream_command()
        def no_stream(k: KOpt = 1) -> None:
            pass

    with pytest.raises(TypeError, match="quiet is a shared stream option"):

        @stream_command()
        def twice(quiet: bool = False, stream: StreamArgs = STREAM) -> None:
            pass


def test_the_documented_stream_subcommand_runs():
    """docs/ARCHITECTURE.md's walkthrough (c), copied from the doc, with a stand-in for its stage."""
    import re
    from pathlib import Path

    from ppt.io import run_stream
    from ppt.stages.base import Stage

    class RedactStage(Stage):
        def __init__(self, text_field, keep_years):
            self.text_field = text_field

        def __call__(self, records):
            return [{**r.data, self.text_field: re.sub(r"\d", "0", r.text)} for r in records]

        def signature(self):
            return {"stage": "redact"}

    doc = Path(__file__).resolve().parents[2] / "docs" / "ARCHITECTURE.md"
    text = doc.read_text()
    code = re.search(r"```python\n(.*?)```", text[text.index("**(c) A stream subcommand**") :], re.S).group(1)
    ns = {"Annotated": Annotated, "typer": typer, "StreamArgs": StreamArgs, "STREAM": STREAM}
    ns.update(stream_command=stream_command, run_stream=run_stream, RedactStage=RedactStage)
    exec(compile(code, str(doc), "exec"), ns)  # noqa: S102 - the doc's own example
    app = typer.Typer()
    ns["register"](app)

    @app.callback()
    def root() -> None:
        pass

    r = runner.invoke(
        app, ["redact-numbers", "--text-field", "body", "-q"], input='{"id": 1, "body": "call 555 0134"}\n'
    )
    assert r.exit_code == 0, r.output
    assert '"body":"call 000 0000"' in r.stdout
    assert runner.invoke(app, ["redact-numbers", "--on-error", "ignore"]).exit_code == 2
