"""SanitizeSpec: everything `ppt sanitize` is asked to do, in one frozen object.

Why: the same fourteen options used to be spelled out in the typer signature, the worker recipe, the stage,
``sanitize_records`` and the stamper (about nine signatures to touch for one new flag). The spec is built
once at the edge (the CLI, a Python caller, a cluster driver), validated there, and carried unchanged to
the stage, the stamper, the worker pool and Ray actors (presidio's ``OperatorConfig``, llm's ``Options``).
A new sanitize flag is one field here and one typer option.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ppt.io import ExitCode, PptError
from ppt.log import note
from ppt.mechanisms import Mechanism, Policy, get_mechanism, mechanism_class
from ppt.mechanisms.base import check_eps

WEAK_EPS = 10.0
STAMP_MODES = ("compact", "full")
PROTECT_MODES = ("all", "detected")
DEFAULT_DETECTORS = ("patterns", "addresses", "ner", "names", "categories")
# named bundles of sanitize settings; what the user gives explicitly wins over the preset
PRESETS: dict[str, dict[str, str]] = {
    # private and readable: detected spans (patterns, names and places, the special categories, --deny) become
    # typed placeholders, the rest is kept; --mapping + `ppt restore` put the values back into the answer
    "readable": {"mech": "placeholder", "protect": "detected"},
}


def with_preset(preset: str | None, *, mech: str | None, protect: str | None) -> tuple[str, str]:
    """(mech, protect) after ``preset``: an explicit value wins; without either, rantext over all tokens."""
    base = PRESETS.get(preset or "", {})
    if preset and not base:
        raise PptError(f"unknown preset {preset!r}", exit_code=ExitCode.USAGE, hint=f"choose from {', '.join(PRESETS)}")
    return mech or base.get("mech", "rantext"), protect or base.get("protect", "all")


@dataclass(frozen=True)
class SanitizeSpec:
    """What to sanitize with and what to write; validated when made (PptError, exit 2, on a bad combination)."""

    mech: str = "rantext"
    eps: float | None = None
    space: str | None = None
    model: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    policy: Mapping[str, str | None] = field(default_factory=dict)
    device: str = "auto"
    text_field: str = "text"
    extra_text_fields: tuple[str, ...] = ()  # more text fields, each sanitized, one stamp composing them all
    seed: int | None = None
    keep_original: str | None = None
    emit_alignment: str | None = None
    min_kept: int = 0
    diagnostics: str | None = None
    stamp_mode: str = "compact"
    protect: str = "all"  # "detected": only what a detector marks is replaced (ppt.detect)
    detect: tuple[str, ...] = ()  # detectors for --protect detected (default: patterns, ner, categories without --deny)
    deny: str | None = None  # a deny-list file: its words and phrases are always detected
    allow: str | None = None  # an allow-list file: detected spans with exactly this text are kept
    keep_kinds: tuple[str, ...] = ()  # detected kinds kept verbatim (--keep-kinds ORG,NORP: public organisations)
    mapping: str | None = None  # a local-only field for each replaced span's surrogate -> original (ppt restore)

    def __post_init__(self) -> None:
        named = [
            ("--keep-original", self.keep_original),
            ("--emit-alignment", self.emit_alignment),
            ("--diagnostics", self.diagnostics),
            ("--mapping", self.mapping),
        ]
        for opt, name in named:
            if name is not None and name in ("", self.text_field, "ppt", *self.extra_text_fields):
                raise PptError(
                    f"{opt} must name a field other than the text fields and 'ppt'", exit_code=ExitCode.USAGE
                )
        if self.extra_text_fields and (self.emit_alignment or self.mapping):
            raise PptError(
                "--emit-alignment and --mapping take one --text-field (their entries point into one text)",
                exit_code=ExitCode.USAGE,
            )
        given = [(opt, name) for opt, name in named if name is not None]
        for i, (opt, name) in enumerate(given):
            for opt2, name2 in given[i + 1 :]:
                if name == name2:
                    raise PptError(f"{opt} and {opt2} need two different fields", exit_code=ExitCode.USAGE)
        if self.stamp_mode not in STAMP_MODES:
            raise PptError(f"--stamp must be compact or full (got {self.stamp_mode!r})", exit_code=ExitCode.USAGE)
        if self.min_kept < 0:
            raise PptError(f"--min-kept must be >= 0 (got {self.min_kept})", exit_code=ExitCode.USAGE)
        if self.protect not in PROTECT_MODES:
            raise PptError(f"--protect must be all or detected (got {self.protect!r})", exit_code=ExitCode.USAGE)
        if self.protect == "all" and (self.detect or self.deny or self.allow or self.mapping or self.keep_kinds):
            raise PptError(
                "--detect, --deny, --allow, --keep-kinds and --mapping need --protect detected",
                exit_code=ExitCode.USAGE,
            )

    @property
    def private_fields(self) -> list[str]:
        """Fields the stage writes that reveal the raw text or depend on it (they stay local)."""
        return [f for f in (self.keep_original, self.emit_alignment, self.diagnostics, self.mapping) if f]

    def build_mechanism(self, *, quiet: bool = False) -> Mechanism:
        """The mechanism this spec names, instantiated and validated before any input is read (with its
        detector under ``--protect detected``)."""
        mech = build_mechanism(
            self.mech,
            self.eps,
            space=self.space,
            model=self.model,
            policy=dict(self.policy),
            params=dict(self.params),
            device=self.device,
            quiet=quiet,
        )
        if getattr(mech, "needs_detector", False) and self.protect != "detected":
            raise PptError(f"{self.mech} replaces detected spans: add --protect detected", exit_code=ExitCode.USAGE)
        if self.protect == "detected":
            from ppt.detect import build_detector
            from ppt.mechanisms.pipeline import TokenPipeline

            if not (isinstance(mech, TokenPipeline) or getattr(mech, "needs_detector", False)):
                raise PptError(
                    f"--protect detected needs a token mechanism; {self.mech} is not one",
                    exit_code=ExitCode.USAGE,
                    hint="use placeholder, rantext, santext(+), custext(+), tem or cape",
                )
            names = self.detect or (() if self.deny else DEFAULT_DETECTORS)
            mech.detector = build_detector(names, deny=self.deny, allow=self.allow, keep_kinds=self.keep_kinds)
        return mech

    def build_hint(self) -> str:
        """How to build every table this spec reads, once, where the cluster's cache lives."""
        cmd = ["ppt", "sanitize", "--mech", self.mech]
        if self.eps is not None:
            cmd += ["--eps", f"{self.eps:g}"]
        for opt, value in (("--space", self.space), ("--model", self.model)):
            if value:
                cmd += [opt, value]
        for key, value in self.params.items():
            cmd += ["--param", f"{key}={value if isinstance(value, str) else json.dumps(value)}"]
        for key, value in self.policy.items():
            if value is not None:
                cmd += [f"--{key}", value]
        cmd += ["-i", "/dev/null", "-o", "/dev/null", "--quiet"]
        space = f"`ppt precompute {self.space}` builds the space and its distance tables; " if self.space else ""
        return (
            f"build the tables once where the cluster's cache (PPT_CACHE) lives, on the head node or shared "
            f"storage: {space}`{shlex.join(cmd)}` builds everything this mechanism reads"
        )


def validate_eps(eps: float | None, mech_cls) -> float:
    if eps is None:
        eps = mech_cls.default_eps
    try:
        eps = check_eps(eps)
    except ValueError as e:
        raise PptError(f"--{e}", exit_code=ExitCode.USAGE, hint="e.g. --eps 6") from None
    if eps > WEAK_EPS:
        note(f"eps = {eps:g} per token gives weak protection (above {WEAK_EPS:g}).")
    return float(eps)


def build_mechanism(
    name: str,
    eps: float | None,
    *,
    space: str | None = None,
    model: str | None = None,
    policy: dict[str, str | None] | None = None,
    params: dict[str, Any] | None = None,
    device: str = "auto",
    quiet: bool = False,
) -> Mechanism:
    """Instantiate and validate a mechanism before any input is read; errors carry the fix."""
    try:
        cls = mechanism_class(name)
    except KeyError as e:
        raise PptError(str(e.args[0]), exit_code=ExitCode.USAGE, hint="list them with `ppt mechs`") from None
    except ImportError as e:
        raise PptError(
            f"mechanism {name!r} is not available in this install ({e})", exit_code=ExitCode.CONFIG
        ) from None
    eps = validate_eps(eps, cls)
    kwargs: dict[str, Any] = dict(params or {})
    try:  # declared parameters are checked before any space or model loads
        check = getattr(cls, "check_params", None)
        if check is not None:
            check({k: v for k, v in kwargs.items() if v is not None})
    except ValueError as e:
        raise PptError(
            str(e), exit_code=ExitCode.USAGE, hint=f"see `ppt mechs --json` for {name}'s parameters"
        ) from None
    if space:
        from ppt.spaces import load_space

        try:
            kwargs["space"] = load_space(space, device=device, quiet=quiet)
        except ValueError as e:
            raise PptError(str(e), hint="see `ppt precompute --help` for space names") from None
    if model:
        kwargs["model"] = model
    chosen = {k: v for k, v in (policy or {}).items() if v is not None}
    if chosen:
        base = getattr(cls, "default_policy", Policy())
        try:
            kwargs["policy"] = dataclasses.replace(base, **chosen)
        except ValueError as e:
            raise PptError(str(e), exit_code=ExitCode.USAGE) from None
    try:
        return get_mechanism(name, eps, device=device, quiet=quiet, **kwargs)
    except (ValueError, TypeError) as e:
        raise PptError(
            f"{name}: {e}", exit_code=ExitCode.USAGE, hint=f"see `ppt mechs` for {name}'s parameters"
        ) from None


__all__ = ["SanitizeSpec", "STAMP_MODES", "WEAK_EPS", "build_mechanism", "validate_eps"]
