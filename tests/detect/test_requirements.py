"""A missing detector install is one error listing everything missing, with one command (issue 36)."""

from __future__ import annotations

import json

import pytest

from ppt.detect import build_detector, requirements
from ppt.dist import pip_install
from ppt.io import ExitCode, PptError
from tests.helpers import ppt

MODEL = requirements._ner_model()  # the spaCy pipeline the ner detector loads


@pytest.fixture
def nothing_installed(monkeypatch):
    """No detector package importable and no offline model installed, whatever this machine has."""
    monkeypatch.setattr(requirements, "_importable", lambda module: False)
    monkeypatch.setattr(requirements, "_model_installed", lambda alias: False)


@pytest.fixture
def everything_installed(monkeypatch):
    monkeypatch.setattr(requirements, "_importable", lambda module: True)
    monkeypatch.setattr(requirements, "_model_installed", lambda alias: True)


def test_missing_for_lists_packages_then_models_once_each(nothing_installed):
    assert requirements.missing_for(["patterns", "ner", "categories", "ner"]) == [
        "presidio-analyzer",
        "tldextract",
        "spacy",
        MODEL,
    ]
    assert requirements.missing_for(["categories"]) == [] and requirements.missing_for([]) == []


def test_nothing_missing_raises_nothing(everything_installed):
    assert requirements.missing_for(["patterns", "ner", "categories"]) == []
    assert requirements.install_command(["patterns", "ner"]) is None
    requirements.require(["patterns", "ner", "categories"])


def test_one_error_names_every_missing_piece_with_one_command(nothing_installed):
    with pytest.raises(PptError) as e:
        build_detector(["patterns", "ner", "categories"])
    err = e.value
    assert err.exit_code == ExitCode.CONFIG
    assert "patterns needs presidio-analyzer" in str(err) and f"ner needs spacy and the {MODEL} model" in str(err)
    assert "categories" not in str(err)
    assert err.hint == f"install everything with: {pip_install('readable')} && ppt models install {MODEL}"


def test_only_the_model_missing_asks_for_the_model_only(monkeypatch):
    monkeypatch.setattr(requirements, "_importable", lambda module: True)
    monkeypatch.setattr(requirements, "_model_installed", lambda alias: False)
    assert requirements.missing_for(["patterns", "ner"]) == [MODEL]
    assert requirements.install_command(["patterns", "ner"]) == f"ppt models install {MODEL}"


def test_the_real_checks_agree_with_the_imports():
    """Unpatched: a package listed as missing does not import here, and one not listed does."""
    import importlib

    missing = requirements.missing_for(["patterns", "ner"])
    for detector, pairs in requirements.PACKAGES.items():
        for module, dist in pairs:
            if dist in missing:
                with pytest.raises(ImportError):
                    importlib.import_module(module)
            else:
                assert importlib.util.find_spec(module) is not None


def test_cli_exits_78_once_with_everything_missing(nothing_installed, tmp_path):
    deny = tmp_path / "deny.txt"
    deny.write_text("Maria\n")
    rec = json.dumps({"id": 1, "text": "Maria has asthma"}) + "\n"
    r = ppt("sanitize", "--preset", "readable", "--deny", str(deny), "--detect", "patterns,ner,categories", stdin=rec)
    assert r.returncode == ExitCode.CONFIG, r.stderr
    assert "presidio-analyzer" in r.stderr and "spacy" in r.stderr and MODEL in r.stderr
    assert pip_install("readable") in r.stderr and "Traceback" not in r.stderr
    # only the deny-list and the shipped lexicon: nothing to install
    r = ppt("sanitize", "--preset", "readable", "--deny", str(deny), "--detect", "categories", "-q", stdin=rec)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["text"] == "<DENY_1> has <HEALTH_1>"
