"""spaCy pipelines from the offline carriers (``en_core_web_sm``, ``en_core_web_md``: ``ppt models install ALIAS``)
or a path, for ProSan's tagger and the NER detector of ``--protect detected``.

spaCy and its pipelines are loaded without transformers and torch (:func:`ppt.models._imports.without_transformers_engine`):
thinc imports torch when it is installed, and ``spacy.load`` imports every package that registers a spaCy factory
entry point (presidio-analyzer does), which pulled in transformers and torch: seconds of a short run's start-up,
for CNN pipelines that use neither. A pipeline whose config names a transformer loads with them."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from ppt.dist import pip_install_static
from ppt.models._imports import without_transformers_engine

# ProSan's (static text); errors name the extra and the model of the call (:func:`install_hint`)
SPACY_INSTALL = f"{pip_install_static('prosan')} && ppt models install en_core_web_sm"


def install_hint(name: str, extra: str = "prosan") -> str:
    """The one command that installs spaCy (with ppt's ``extra``) and, when ``name`` is an offline alias, it."""
    from ppt.dist import pip_install
    from ppt.models.catalog import OFFLINE

    return pip_install(extra) + (f" && ppt models install {name}" if name in OFFLINE else "")


def load_spacy(name: str, exclude: tuple[str, ...] = (), needed_for: str = "spaCy", extra: str = "prosan") -> Any:
    """A spaCy pipeline by alias (``en_core_web_sm``, ``en_core_web_md``: offline carriers) or path; PptError
    (exit 78) with the install command when spaCy (``pip install`` ppt's ``extra``) or the model is missing.
    Loaded without transformers and torch unless the pipeline runs a transformer."""
    import importlib.util

    from ppt.io import ExitCode, PptError
    from ppt.models.catalog import OFFLINE
    from ppt.models.resolve import resolve

    try:
        found = importlib.util.find_spec("spacy") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise PptError(
            f"{needed_for}, which is not installed", exit_code=ExitCode.CONFIG, hint=install_hint(name, extra)
        )
    r = resolve(name)
    if r.source == "alias":
        path = r.require_installed()  # PptError naming `ppt models install ALIAS`
    elif r.source == "path":
        path = r.path
    else:
        raise PptError(
            f"spaCy model {name!r} is not a local path or an offline alias",
            exit_code=ExitCode.CONFIG,
            hint="spaCy's offline aliases: "
            + ", ".join(a.alias for a in OFFLINE.values() if a.kind == "spacy")
            + " (ppt models ls)",
        )
    with contextlib.ExitStack() as stack:
        if not _uses_torch(Path(path)):
            stack.enter_context(without_transformers_engine())
        try:
            import spacy

            return spacy.load(str(path), exclude=list(exclude))
        except Exception as e:  # noqa: BLE001 - spaCy raises IOError/ValueError/OSError on a bad package
            raise PptError(
                f"cannot load spaCy model {name!r}: {type(e).__name__}: {e}"[:500],
                exit_code=ExitCode.CONFIG,
                hint=install_hint(name, extra),
            ) from None


def _uses_torch(path: Path) -> bool:
    """Whether the pipeline at ``path`` runs a transformer (spacy-transformers, spacy-curated-transformers: they
    need torch), read from its config.cfg; False when there is none to read."""
    try:
        text = (path / "config.cfg").read_text(encoding="utf-8", errors="replace").lower()
    except OSError:
        return False
    return "transformer" in text or "pytorch" in text
