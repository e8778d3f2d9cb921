"""What each detector needs installed, checked for all the requested detectors at once before any is built, so
a missing install is one error with one command instead of one exit 78 per detector.

    missing_for(["patterns", "ner", "categories"])  # ["presidio-analyzer", "spacy", "en_core_web_md"]
    require(["patterns", "ner"])  # PptError (exit 78) listing both, with one command that installs both

Checking finds the packages' import specs and the offline model's files; it imports nothing.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence

EXTRA = "readable"  # the extra of the readable path: every detector's packages
# detector -> (import name, distribution) of the packages it imports; the shipped lists (categories, names)
# need none
PACKAGES: dict[str, tuple[tuple[str, str], ...]] = {
    "patterns": (("presidio_analyzer", "presidio-analyzer"), ("tldextract", "tldextract")),
    "ner": (("spacy", "spacy"),),
}


def _ner_model() -> str:
    """The spaCy pipeline the ner detector loads by default (read from it, so the two never disagree)."""
    import inspect

    from ppt.detect.ner import NerDetector

    return inspect.signature(NerDetector).parameters["model"].default


# detector -> the offline models (`ppt models install ALIAS`) it loads
MODELS = {"ner": (_ner_model,)}


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a broken parent package, or a module whose __spec__ is None
        return False


def _model_installed(alias: str) -> bool:
    from ppt.models.resolve import resolve

    return resolve(alias).installed


def _models(name: str) -> list[str]:
    return [alias() for alias in MODELS.get(name, ())]


def _missing(names: Sequence[str]) -> tuple[list[str], list[str]]:
    packages: list[str] = []
    models: list[str] = []
    for name in dict.fromkeys(names):
        packages += [dist for module, dist in PACKAGES.get(name, ()) if not _importable(module)]
        models += [alias for alias in _models(name) if not _model_installed(alias)]
    return list(dict.fromkeys(packages)), list(dict.fromkeys(models))


def missing_for(names: Sequence[str]) -> list[str]:
    """What the detectors ``names`` need and this installation lacks: package distributions, then offline
    model aliases; empty when everything is there (unknown names need nothing)."""
    packages, models = _missing(names)
    return packages + models


def install_command(names: Sequence[str]) -> str | None:
    """One shell command that installs everything :func:`missing_for` lists, or None when nothing is missing:
    the ``readable`` extra when a package is missing, then ``ppt models install`` for the missing models."""
    from ppt.dist import pip_install

    packages, models = _missing(names)
    steps = ([pip_install(EXTRA)] if packages else []) + ([f"ppt models install {' '.join(models)}"] if models else [])
    return " && ".join(steps) or None


def require(names: Sequence[str]) -> None:
    """Nothing when the detectors ``names`` have what they need; else one PptError (exit 78) naming, per
    detector, everything missing, with the one command that installs all of it."""
    from ppt.io import ExitCode, PptError

    packages, models = _missing(names)
    if not packages and not models:
        return
    per = []
    for name in dict.fromkeys(names):
        lacks = [dist for module, dist in PACKAGES.get(name, ()) if dist in packages]
        lacks += [f"the {alias} model" for alias in _models(name) if alias in models]
        if lacks:
            per.append(f"{name} needs {' and '.join(lacks)}")
    raise PptError(
        f"missing for the detectors: {'; '.join(per)}",
        ExitCode.CONFIG,
        hint=f"install everything with: {install_command(names)}",
    )
