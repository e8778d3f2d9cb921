"""Generate man pages and static shell completions from the CLI itself, so they never drift.

``python -m ppt.cli.docgen`` rewrites ``man/`` and ``completions/``; ``--check`` exits 1 when the
committed files differ from what the current CLI generates (a test runs it).
"""

from __future__ import annotations

import re
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer

from ppt import __version__

_MARKUP = re.compile(r"\[/?[a-z ]*\]")

# EXIT STATUS of every page, from ppt.io.exitcodes (sysexits-style).
EXIT_STATUS = (
    ("0", "success"),
    ("1", "some records failed (--on-error skip or record), or a record failed processing under --on-error fail"),
    ("2", "usage error: a bad option or argument"),
    ("65", "bad input data: a malformed record under --on-error fail"),
    ("66", "input missing or unreadable"),
    ("69", "endpoint unavailable: the remote server could not be reached"),
    ("74", "I/O error: output cannot be written, or input cannot be read"),
    ("75", "temporary failure: retries exhausted (the endpoint kept failing), or a --workers process died"),
    ("78", "bad configuration: options, a missing artifact or model, a rejected API key"),
    ("130", "interrupted (Ctrl-C)"),
)

# ENVIRONMENT of every page: what ppt itself reads (and the hub switch it honours).
ENVIRONMENT = (
    ("PPT_CACHE", "root of the artifact cache (spaces, tables, converted models); default: the user cache directory"),
    ("PPT_QUIET", "when set, no progress bars"),
    ("PPT_CONFIG", "a TOML file of per-project defaults (instead of ./ppt.toml)"),
    ("PPT_PROGRESS", "when set, progress bars even when stderr is not a terminal"),
    ("HF_HUB_OFFLINE", "1 keeps model loading off the network (offline aliases and local paths only)"),
    ("OPENAI_API_KEY", "API key sent to the default OpenAI endpoint only (never to a custom --base-url)"),
    ("OPENAI_BASE_URL", "default --base-url of ppt query"),
    ("NAME given to --api-key-env", "the variable holding the endpoint's API key (ppt query, ppt attack llm)"),
    ("TIKTOKEN_CACHE_DIR", "where tiktoken's BPE files are placed; default: <cache>/tiktoken"),
)


def _plain(text: str | None) -> str:
    """Help text without its rich markup; ``\\[`` (a literal bracket rich must not read as markup) -> ``[``."""
    protected = (text or "").replace("\\[", "\x00")
    return _MARKUP.sub("", protected).replace("\x00", "[").strip()


def _is_group(cmd: Any) -> bool:
    """typer vendors click, so commands are recognised by shape rather than by click's classes."""
    return isinstance(getattr(cmd, "commands", None), dict)


def _tree(cmd: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, cmd
    if _is_group(cmd):
        for name in sorted(cmd.commands):
            sub = cmd.commands[name]
            if not sub.hidden:
                yield from _tree(sub, path + (name,))


def _options(cmd: Any) -> list[Any]:
    hidden = {"install_completion", "show_completion"}
    return [p for p in cmd.params if not getattr(p, "hidden", False) and p.name not in hidden]


def _roff(text: str) -> str:
    out = []
    for line in text.splitlines():
        line = line.replace("\\", "\\\\").replace("-", "\\-")
        if line.startswith((".", "'")):
            line = "\\&" + line
        out.append(line)
    return "\n".join(out)


# roff source lines of filled text are wrapped here (the reader's man fills them to its own width)
ROFF_WIDTH = 90


def _filled(text: str) -> list[str]:
    """Prose for fill mode: escaped, cut into source lines of at most ROFF_WIDTH characters (a word longer
    than that stays whole); man joins and refills them to the reader's width."""
    escaped = text.replace("\\", "\\\\").replace("-", "\\-")
    lines = textwrap.wrap(escaped, ROFF_WIDTH, break_long_words=False, break_on_hyphens=False) or [""]
    return ["\\&" + line if line.startswith((".", "'")) else line for line in lines]


def _description(help_text: str) -> list[str]:
    """DESCRIPTION from reflowed help (ppt.cli.help): each paragraph filled to the reader's width; an
    indented line (an example) kept as written, in no-fill mode; a list item starts a line."""
    out: list[str] = []
    for para in help_text.split("\n\n"):
        out.append(".PP")
        literal, prose_before = False, False
        for line in para.split("\n"):
            if line[:1] in (" ", "\t"):
                if not literal:
                    out.append(".nf")
                    literal = True
                out.append(_roff(line))
                prose_before = False
                continue
            if literal:
                out.append(".fi")  # also breaks the line
                literal = False
            elif prose_before:
                out.append(".br")
            out += _filled(line)
            prose_before = True
        if literal:
            out.append(".fi")
    return out


def man_page(path: tuple[str, ...], cmd: Any) -> str:
    name = "-".join(("ppt",) + path)
    title = name.upper()
    short = _plain(cmd.get_short_help_str(200)) if path else "keep private text out of prompts sent to black-box LLMs"
    lines = [
        f'.TH "{title}" "1" "" "ppt {__version__}" "ppt manual"',
        ".ad l",  # filled text left-aligned, without hyphenating words (flags, paths) at line ends
        ".nh",
        ".SH NAME",
        *_filled(f"{name} - {short}"),
        ".SH SYNOPSIS",
        f".B {' '.join(('ppt',) + path)}",
        "[OPTIONS]" + (" COMMAND [ARGS]..." if _is_group(cmd) else ""),
        ".SH DESCRIPTION",
    ]
    lines += _description(_plain(cmd.help))
    args = [p for p in _options(cmd) if p.param_type_name == "argument"]
    opts = [p for p in _options(cmd) if p.param_type_name == "option"]
    if args:
        lines.append(".SH ARGUMENTS")
        for p in args:
            lines += [".TP", f".B {_roff(p.name.upper())}", *_filled(_plain(getattr(p, "help", "")) or "")]
    if opts:
        lines.append(".SH OPTIONS")
        for p in opts:
            flags = ", ".join(p.opts + p.secondary_opts)
            default = "" if p.default in (None, False, (), []) or p.is_flag else f" (default: {p.default})"
            values = choices(p) if not p.is_flag else None
            one_of = f" (one of: {', '.join(values)})" if values else ""
            lines += [".TP", f".B {_roff(flags)}", *_filled(_plain(p.help) + one_of + default)]
    if _is_group(cmd):
        lines.append(".SH COMMANDS")
        for sub in sorted(cmd.commands):
            c = cmd.commands[sub]
            lines += [".TP", f".B {_roff(sub)}", *_filled(_plain(c.get_short_help_str(200)))]
    lines.append(".SH EXIT STATUS")
    for code, meaning in EXIT_STATUS:
        lines += [".TP", f".B {code}", *_filled(meaning)]
    lines.append(".SH ENVIRONMENT")
    for var, meaning in ENVIRONMENT:
        lines += [".TP", f".B {_roff(var)}", *_filled(meaning)]
    if _is_group(cmd):
        see_also = ", ".join(f"ppt-{'-'.join(path + (s,))}(1)" for s in sorted(cmd.commands))
        lines += [".SH SEE ALSO", *textwrap.wrap(see_also, ROFF_WIDTH, break_on_hyphens=False)]
    return "\n".join(lines) + "\n"


def _flags(cmd: Any) -> list[str]:
    out = []
    for p in _options(cmd):
        if p.param_type_name == "option":
            out += [o for o in p.opts + p.secondary_opts if o.startswith("-")]
    return sorted(set(out + ["--help"]))


def _named_values(name: str) -> list[str] | None:
    """Values of options whose choices live elsewhere: mechanisms, spaces, offline model aliases."""
    if name == "mech":
        from ppt.mechanisms.registry import MECHANISMS

        return sorted(MECHANISMS)
    if name == "space":
        from ppt.spaces import SPACES

        return sorted(SPACES)
    if name == "model":
        from ppt.models.catalog import OFFLINE

        return sorted(a for a, asset in OFFLINE.items() if asset.kind in ("causal-lm", "sentence-encoder", "masked-lm"))
    return None


def choices(p: Any) -> list[str] | None:
    """The fixed values of option ``p``: a click Choice, a ``Literal[...]``, or an Enum (a repeatable option,
    where typer takes no Literal); None when it has none."""
    found = getattr(getattr(p, "type", None), "choices", None)
    if found:
        return [str(getattr(c, "value", c)) for c in found]
    import enum
    import typing

    annotation = getattr(getattr(p, "type_descriptor", None), "annotation", None)  # typer's own params
    for arg in (annotation, *typing.get_args(annotation)):
        if typing.get_origin(arg) is typing.Literal:
            return [str(a) for a in typing.get_args(arg)]
        if isinstance(arg, type) and issubclass(arg, enum.Enum):
            return [str(m.value) for m in arg]
    return None


def option_values(p: Any) -> list[str] | None:
    """What completes after option ``p``: its choices, the known names of --mech/--space/--model, or None
    when it takes a free value (files, numbers: the shell's default)."""
    return choices(p) or _named_values(p.name or "")


def _valued(cmd: Any) -> list[tuple[list[str], list[str] | None]]:
    """(flags, values or None) of every option of ``cmd`` that takes a value."""
    out = []
    for p in _options(cmd):
        if p.param_type_name == "option" and not getattr(p, "is_flag", False) and not getattr(p, "count", False):
            out.append(([o for o in p.opts if o.startswith("-")], option_values(p)))
    return out


def bash_completion(root: Any) -> str:
    cases, value_cases = [], []
    for path, cmd in _tree(root):
        key = " ".join(path)
        words = list(cmd.commands) if _is_group(cmd) else []
        cases.append(f'        "{key}") opts="{" ".join(sorted(words) + _flags(cmd))}" ;;')
        for flags, values in _valued(cmd):
            pattern = "|".join(f'"{key}|{f}"' for f in flags)
            value_cases.append(f'        {pattern}) vals="{" ".join(values or [])}"; takes=1 ;;')
    return "\n".join(
        [
            "# bash completion for ppt (generated by `python -m ppt.cli.docgen`; do not edit)",
            "_ppt() {",
            "    local cur path i w",
            '    cur="${COMP_WORDS[COMP_CWORD]}"',
            '    path=""',
            "    for ((i = 1; i < COMP_CWORD; i++)); do",
            '        w="${COMP_WORDS[i]}"',
            '        [[ "$w" == -* ]] && continue',
            '        case "${path:+$path }$w" in',
            *[f'            "{" ".join(p)}") path="{" ".join(p)}" ;;' for p, _ in _tree(root) if p],
            "        esac",
            "    done",
            '    local prev="${COMP_WORDS[COMP_CWORD-1]}" vals="" takes=0',
            '    case "$path|$prev" in',
            *value_cases,
            "    esac",
            "    if ((takes)); then  # the option's values; none known: the shell's default (files)",
            '        COMPREPLY=( $(compgen -W "$vals" -- "$cur") )',
            "        return",
            "    fi",
            '    local opts=""',
            '    case "$path" in',
            *cases,
            "    esac",
            '    COMPREPLY=( $(compgen -W "$opts" -- "$cur") )',
            "}",
            "complete -o default -F _ppt ppt",
            "",
        ]
    )


def zsh_completion(root: Any) -> str:
    body = [
        "#compdef ppt",
        "# zsh completion for ppt (generated by `python -m ppt.cli.docgen`; do not edit)",
        "_ppt() {",
        "  local -a words_; local path_=''",
        "  local w",
        "  for w in ${words[2,CURRENT-1]}; do",
        "    [[ $w == -* ]] && continue",
        '    case "${path_:+$path_ }$w" in',
    ]
    body += [f'      "{" ".join(p)}") path_="{" ".join(p)}" ;;' for p, _ in _tree(root) if p]
    body += ["    esac", "  done", "  case $path_ in"]
    for path, cmd in _tree(root):
        items = []
        if _is_group(cmd):
            items += [
                f"'{n}:{_plain(c.get_short_help_str(60)).replace(chr(39), '')}'"
                for n, c in sorted(cmd.commands.items())
            ]
        items += [f"'{f}'" for f in _flags(cmd)]
        body.append(f'    "{" ".join(path)}") words_=({" ".join(items)}) ;;')
    body += ["  esac", "  _describe 'ppt' words_", "}", "compdef _ppt ppt", ""]
    return "\n".join(body)


def fish_completion(root: Any) -> str:
    lines = ["# fish completion for ppt (generated by `python -m ppt.cli.docgen`; do not edit)", "complete -c ppt -f"]
    for path, cmd in _tree(root):
        cond = "__fish_use_subcommand" if not path else f"__fish_seen_subcommand_from {path[-1]}"
        if _is_group(cmd):
            for n, c in sorted(cmd.commands.items()):
                desc = _plain(c.get_short_help_str(60)).replace("'", "")
                lines.append(f"complete -c ppt -n '{cond}' -a {n} -d '{desc}'")
        for p in _options(cmd):
            if p.param_type_name == "option":
                values = option_values(p) if not getattr(p, "is_flag", False) else None
                extra = f" -xa '{' '.join(values)}'" if values else ""
                for o in p.opts:
                    flag = f"-l {o[2:]}" if o.startswith("--") else f"-s {o[1:]}"
                    desc = _plain(p.help).split(". ")[0].replace("'", "")[:60]
                    if path:
                        lines.append(f"complete -c ppt -n '{cond}' {flag}{extra} -d '{desc}'")
    return "\n".join(lines) + "\n"


def render() -> dict[str, str]:
    from ppt.cli.main import app

    root = typer.main.get_command(app)
    files = {}
    for path, cmd in _tree(root):
        files[f"man/{'-'.join(('ppt',) + path)}.1"] = man_page(path, cmd)
    files["completions/ppt.bash"] = bash_completion(root)
    files["completions/ppt.zsh"] = zsh_completion(root)
    files["completions/ppt.fish"] = fish_completion(root)
    return files


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    check = "--check" in argv
    root = Path(argv[argv.index("--root") + 1]) if "--root" in argv else Path(__file__).resolve().parents[2]
    files = render()
    stale = []
    for rel, text in files.items():
        p = root / rel
        if check:
            if not p.is_file() or p.read_text() != text:
                stale.append(rel)
        else:
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
    if check:
        extra = [
            str(p.relative_to(root))
            for d in ("man", "completions")
            for p in (root / d).glob("*")
            if str(p.relative_to(root)) not in files
        ]
        stale += extra
        if stale:
            print("stale generated docs (run `python -m ppt.cli.docgen`): " + ", ".join(sorted(stale)), file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
