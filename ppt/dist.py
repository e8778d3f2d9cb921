"""ppt's distribution on the package index and the install commands ppt prints.

The command and the import are ``ppt``, the distribution is :data:`DIST`: the name ``ppt`` on the package
index belongs to another project, so a hint naming ``ppt`` with an extra would install that one.
Every install hint is made here: :func:`pip_install` for an error at run time (from a checkout, an editable
install of that checkout), :func:`pip_install_static` for text that must not depend on the machine (help
text, man pages).
"""

from __future__ import annotations

import os
import shlex
from functools import lru_cache
from pathlib import Path

DIST = "ppt-private-prompts"


def pip_install_static(*extras: str) -> str:
    """``pip install 'ppt-private-prompts[readable,serve]'``: the command from the package index."""
    return f"pip install '{DIST}[{','.join(extras)}]'" if extras else f"pip install {DIST}"


@lru_cache(maxsize=1)
def checkout() -> Path | None:
    """The source checkout ppt runs from (the directory above the package holding ppt's pyproject.toml), or
    None for an installed wheel."""
    root = Path(__file__).resolve().parents[1]
    try:
        text = (root / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return None
    return root if f'name = "{DIST}"' in text else None


def pip_install(*extras: str) -> str:
    """The command that adds ``extras`` to this installation: ``pip install -e '.[readable,serve]'`` when ppt
    runs from a checkout (the checkout's path in place of ``.`` unless it is the working directory), else
    :func:`pip_install_static`."""
    root = checkout()
    if root is None:
        return pip_install_static(*extras)
    try:
        here = Path(os.getcwd()).resolve() == root
    except OSError:
        here = False
    where = "." if here else str(root)
    if extras:
        where += "[" + ",".join(extras) + "]"
    return f"pip install -e {shlex.quote(where)}"
