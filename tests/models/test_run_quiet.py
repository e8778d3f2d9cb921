"""--quiet reaches what never sees the flag (issue 26): a model load under a quiet run shows no transformers
progress bar and writes nothing to stderr, even on a terminal; the next invocation starts loud again."""

from __future__ import annotations

import sys

import pytest

from ppt.models._quiet import quiet_loading
from ppt.progress import run_quiet, set_run_quiet


@pytest.fixture(autouse=True)
def _reset():
    yield
    set_run_quiet(False)


def test_a_quiet_run_holds_back_library_bars_even_on_a_terminal(monkeypatch, capsys):
    import transformers

    monkeypatch.setattr("ppt.models._quiet._stderr_is_tty", lambda: True)
    set_run_quiet(True)
    transformers.utils.logging.enable_progress_bar()
    with quiet_loading():
        print("Loading weights 100%", file=sys.stderr)
        assert not transformers.utils.logging.is_progress_bar_enabled()
    assert "Loading weights" not in capsys.readouterr().err
    set_run_quiet(False)
    transformers.utils.logging.enable_progress_bar()
    with quiet_loading():  # a loud run on a terminal: bars and messages through
        print("Loading weights 100%", file=sys.stderr)
        assert transformers.utils.logging.is_progress_bar_enabled()
    assert "Loading weights" in capsys.readouterr().err


def test_each_cli_invocation_sets_it_from_its_own_flags():
    from tests.helpers import ppt

    ppt("sanitize", "-m", "custext+", "-e", "6", "-q", stdin='{"text": "the river"}\n')
    assert run_quiet()
    ppt("mechs")
    assert not run_quiet()
