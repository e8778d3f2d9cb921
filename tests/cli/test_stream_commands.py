"""Every stream subcommand of ppt takes the shared options from the kit, and the CLI modules share helpers
only through public names."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import typer

from ppt.cli.kit import SHARED

# every stream subcommand of ppt, and the shared options it does not offer
STREAM_COMMANDS = {
    ("sanitize",): set(),
    ("extract",): {"text_field"},
    ("query",): set(),
    ("restore",): {"text_field", "device"},
    ("attack", "knn"): set(),
    ("attack", "mti"): set(),
    ("attack", "llm"): set(),
    ("attack", "ngram"): {"device"},
    ("attack", "snd-inversion"): set(),
    ("eval", "metrics"): {"output", "output_format"},  # no --output: no --output-format either
    ("eval", "phr"): {"output", "output_format", "device"},
    ("snd", "embed"): set(),
    ("dp-opt", "tune"): {"on_error", "batch_size", "output_format"},  # -o: one JSON object
    ("dp-opt", "eval"): {"on_error"},
    ("dp-opt", "apply"): {"device"},
}


@pytest.mark.parametrize("path", list(STREAM_COMMANDS), ids=" ".join)
def test_every_stream_subcommand_lists_the_shared_options_together_in_one_order(path):
    from ppt.cli.main import app

    cmd = typer.main.get_command(app)
    for name in path:
        cmd = cmd.commands[name]
    names = [p.name for p in cmd.params]
    shared = [n for n in SHARED if n not in STREAM_COMMANDS[path]]
    start = names.index(shared[0])
    assert names[start : start + len(shared)] == shared


def test_no_cli_module_imports_the_private_names_of_another():
    for path in sorted((Path(__file__).resolve().parents[2] / "ppt" / "cli").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ppt.cli"):
                private = [a.name for a in node.names if a.name.startswith("_")]
                assert not private, f"{path.name} imports {private} from {node.module}"
