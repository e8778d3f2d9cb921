"""PHR, privacy hiding rate (ProSan): the share of listed private items that are absent from the output.

Counts what actually reaches the output (the ProSan code counted flagged words instead). Matching is
case- and format-insensitive: both sides are NFKC-normalised, case-folded and cut into alphanumeric runs;
an item is present when its runs occur contiguously in the output's runs, or when its runs joined
without separators equal a contiguous run of output tokens joined the same way ("555-0134" matches
"555 0134" and "5550134"; "Dr. J. Smith" matches "dr j smith"). Matching is on whole tokens, so "Ann"
is not found inside "announce".
"""

from __future__ import annotations

import re
import unicodedata

_ALNUM = re.compile(r"[^\W_]+", re.UNICODE)


def _runs(text: str) -> list[str]:
    return _ALNUM.findall(unicodedata.normalize("NFKC", text).casefold())


def item_present(item: str, output_runs: list[str]) -> bool:
    runs = _runs(item)
    if not runs:
        return False
    n = len(runs)
    for i in range(len(output_runs) - n + 1):  # whole-token sequence
        if output_runs[i : i + n] == runs:
            return True
    target = "".join(runs)
    for i in range(len(output_runs)):  # same characters, different separators
        acc = ""
        for j in range(i, len(output_runs)):
            acc += output_runs[j]
            if len(acc) >= len(target):
                if acc == target:
                    return True
                break
            if not target.startswith(acc):
                break
    return False


def phr(items: list[str], output: str) -> dict:
    """{"absent", "total", "phr"} for one record (phr null without items)."""
    items = [i for i in items if isinstance(i, str) and _runs(i)]
    out_runs = _runs(output)
    absent = sum(1 for it in items if not item_present(it, out_runs))
    return {"absent": absent, "total": len(items), "phr": absent / len(items) if items else None}
