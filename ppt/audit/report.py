"""Markdown table of `ppt audit` JSONL records (docs/audit/README.md is made with it).

python -m ppt.audit.report docs/audit/audit.jsonl
"""

from __future__ import annotations

import json
import sys


def _n(x, fmt: str = ".2f") -> str:
    return x if isinstance(x, str) else format(x, fmt)


def markdown(records: list[dict]) -> str:
    lines = [
        "| mechanism | space | eps | claimed (stamp) | certified (model) | certified end to end | status | attaining pairs: x, x' -> y (ln P(y|x)/P(y|x')) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        c = r["claim"]
        claimed = "none" if c["eps_per_token"] is None else _n(c["eps_per_token"], "g")
        if str(c.get("notion", "")).startswith("conditional"):
            claimed += " (conditional, not proven)"
        if "worst_case_eps" in c:
            claimed += f" per unit distance (worst case {_n(c['worst_case_eps'], '.1f')} at max distance {_n(c['max_distance'])})"
        model = max((p["loss"] for p in r["pairs"]), key=lambda v: float("inf") if v == "inf" else v, default="-")
        cert = _n(model) + (f" ({_n(r['certified_per_unit'])} per unit)" if "certified_per_unit" in r else "")
        pairs = "; ".join(f"{p['x']}, {p['x_prime']} -> {p['y']} ({_n(p['loss'])})" for p in r["pairs"])
        status = r["status"] + (" (sampler mismatch)" if r.get("sampler_mismatch") else "")
        lines.append(
            f"| {r['mechanism']} | {r['space']} | {r['eps']:g} | {claimed} | {cert} | {_n(r['end_to_end']['certified'])} | {status} | {pairs} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    recs = [json.loads(line) for path in sys.argv[1:] for line in open(path) if line.strip()]
    print(markdown(recs))
