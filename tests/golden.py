"""Golden seeded outputs of every mechanism, policy and case mode: the refactoring safety net.

``python -m tests.golden --write`` regenerates ``tests/data/golden/*.jsonl`` on purpose (say why in
CHANGELOG); ``tests/test_golden.py`` re-runs every configuration through the real CLI entry point and
requires byte-identical output.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

GOLDEN = Path(__file__).parent / "data" / "golden"

# texts that exercise every piece kind: names, numbers, punctuation, stopwords, out-of-vocabulary
# pieces (emoji, CJK, rare words), mixed case, empty text, whitespace runs
TEXTS = [
    "Alice Johnson moved to Paris in 2019 to study medicine at the Sorbonne.",
    "My phone number is 555-0199 and my email is alice.j@example.com, call me!",
    "The doctor said the results were fine; the patient went home on Tuesday.",
    "",
    "   leading and trailing spaces   ",
    "Zanzibar Quux-Secretname 4417 paid $3,200.50 on 12/03/2021.",
    "I think he told her that they would meet us at the station at 9:30 am.",
    "BREAKING: Markets FALL as inflation hits 7.5% in the UK!!!",
    "Café au lait, naïve résumé, and 東京 are fine 🙂 too.",
    "Bob's cat (named Whiskers) doesn't like rain -- or snow.",
    "Please summarize the following meeting notes for the team, thanks!",
    "Patient ID 88412: diagnosed with type 2 diabetes, prescribed metformin 500mg.",
    "the and of at to in is the, and of the.",
    "Mr. O'Neill, CEO of Acme Corp., earned £1.2m in 2020.",
    "New York\nLos Angeles\n\tChicago",
    "A b C d E f G h I j.",
    "She was born on 1 January 1990 in Manchester, England.",
    "Thanks for your help yesterday — really appreciated it.",
    "The quick brown fox jumps over the lazy dog 3 times.",
    "Send 0.5 BTC to wallet 1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa now.",
]

# (name, argv): every mechanism at its defaults, then the policies and case modes on one of each kind
CONFIGS: list[tuple[str, list[str]]] = [
    ("rantext", ["-m", "rantext", "-e", "6"]),
    ("rantext-eps1", ["-m", "rantext", "-e", "1"]),
    ("rantext-paper", ["-m", "rantext", "-e", "3", "-p", "z=paper"]),
    (
        "rantext-oov-uniform",
        ["-m", "rantext", "-e", "6", "--oov", "uniform", "--numbers", "perturb", "--case", "vocab"],
    ),
    (
        "rantext-keep",
        [
            "-m",
            "rantext",
            "-e",
            "6",
            "--oov",
            "keep",
            "--numbers",
            "keep",
            "--punct",
            "drop",
            "--stopwords",
            "keep",
            "--case",
            "original",
        ],
    ),
    ("rantext-drop", ["-m", "rantext", "-e", "10", "--numbers", "drop", "--punct", "drop"]),
    ("custext", ["-m", "custext", "-e", "2", "--space", "glove-6b-50d:2000"]),
    ("custext+", ["-m", "custext+", "-e", "1", "--space", "glove-6b-50d:2000"]),
    (
        "custext+-case",
        ["-m", "custext+", "-e", "3", "--space", "glove-6b-50d:2000", "--case", "original", "--oov", "uniform"],
    ),
    ("custext-cl100k", ["-m", "custext", "-e", "2"]),
    ("santext", ["-m", "santext", "-e", "3", "--space", "glove-6b-50d:2000"]),
    ("santext+", ["-m", "santext+", "-e", "3", "--space", "glove-6b-50d:2000"]),
    (
        "santext+-params",
        [
            "-m",
            "santext+",
            "-e",
            "2",
            "--space",
            "glove-6b-50d:2000",
            "-p",
            "w=0.8",
            "-p",
            "p=0.5",
            "--case",
            "vocab",
            "--stopwords",
            "keep",
        ],
    ),
    ("tem", ["-m", "tem", "-e", "6", "--space", "glove-6b-50d:2000"]),
    (
        "tem-policies",
        [
            "-m",
            "tem",
            "-e",
            "3",
            "--space",
            "glove-6b-50d:2000",
            "--oov",
            "keep",
            "--numbers",
            "perturb",
            "--case",
            "original",
        ],
    ),
    ("tem-cl100k", ["-m", "tem", "-e", "6", "--punct", "drop"]),
    ("cape", ["-m", "cape", "-e", "6", "--model", "{tiny_lm}"]),
    (
        "cape-policies",
        [
            "-m",
            "cape",
            "-e",
            "2",
            "--model",
            "{tiny_lm}",
            "-p",
            "buckets=10",
            "-p",
            "utility=additive",
            "--stopwords",
            "perturb",
            "--numbers",
            "random-digits",
            "--case",
            "original",
        ],
    ),
]


def seed_of(i: int) -> int:
    return 7 + 1000 * i


def input_lines() -> str:
    """The records each configuration sanitizes: every text under a few ids (ids seed the noise)."""
    recs = [{"id": f"t{i}-s{k}", "text": t, "n": i} for k in range(3) for i, t in enumerate(TEXTS)]
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs)


def argv(config: list[str], seed: int, tiny_lm: str) -> list[str]:
    return [
        "sanitize",
        *[a.format(tiny_lm=tiny_lm) for a in config],
        "--seed",
        str(seed),
        "--quiet",
        "--batch-size",
        "7",
        "--on-error",
        "record",
        "--keep-original",
        "raw",
        "--emit-alignment",
        "al",
        "--device",
        "cpu",
    ]


def normalise(out: str, tiny_lm: str) -> str:
    """Replace the machine-dependent tiny model path in stamps."""
    return out.replace(tiny_lm, "<tiny-lm>")


def run(config: list[str], seed: int, tiny_lm: str) -> tuple[int, str, str]:
    import subprocess

    from tests.helpers import PPT

    r = subprocess.run(
        [*PPT, *argv(config, seed, tiny_lm)], input=input_lines(), capture_output=True, text=True, timeout=900
    )
    return r.returncode, normalise(r.stdout, tiny_lm), r.stderr


# Stamp fields allowed to vary between runs (none: TEM's truncated-set size used to, when its
# distances were float32 and a word at distance ~gamma flipped with BLAS rounding).
VOLATILE: tuple[str, ...] = ()


def comparable(line: str) -> str:
    """The line with VOLATILE accounting fields removed (the rest stays byte-exact)."""
    if not any(key in line for key in VOLATILE):
        return line
    rec = json.loads(line)
    acc = rec.get("ppt", {}).get("sanitize", {}).get("accounting", {})
    for key in VOLATILE:
        acc.pop(key, None)
    return json.dumps(rec, ensure_ascii=False, sort_keys=True)


def make_tiny_lm(path: Path) -> str:
    from ppt.testing import make_tiny_causal_lm

    return str(make_tiny_causal_lm(path, seed=0))


def main() -> int:
    import tempfile

    if "--write" not in sys.argv:
        print(__doc__)
        return 2
    GOLDEN.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        tiny = make_tiny_lm(Path(tmp) / "tiny-lm")
        for i, (name, config) in enumerate(CONFIGS):
            rc, out, err = run(config, seed_of(i), tiny)
            if rc not in (0, 1):
                print(f"{name}: exit {rc}\n{err}", file=sys.stderr)
                return 1
            (GOLDEN / f"{name}.jsonl").write_text(out)
            print(f"{name}: {out.count(chr(10))} records", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
