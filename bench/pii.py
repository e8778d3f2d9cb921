#!/usr/bin/env python
"""The PII benchmark (issue 25): ppt's readable modes beside the tools a user would pick instead, on the same
prompts, in one run. Prints a markdown table and writes JSON (and a PHR-vs-utility plot with --plot).

Prompts: ``ppt eval make-pii`` records, -n per style: the templated set (names, ages, cities, occupations,
e-mails, phones, health conditions in fixed sentences) and the free-form set (letters, lists, questions, first
or third person, and every special category), inserted into BBC News sentences; seed 7 by default, a tuning seed:
the detectors were tuned on the misses of seeds 7 and 8 (and checked on 9 and 10), so a measurement to report
runs once on a seed never looked at (docs/pii: 13, 14, 15, 16, then 17). Per method:
  - PHR (privacy hiding rate): the share of private items absent from the output, overall and per kind,
    with a 95% Wilson interval (ppt.metrics.phr; a name counts as first name and surname);
  - content words kept: the share of the prompt's other words (no private item, no stopword) still there;
  - MiniLM cosine between prompt and output, private items removed from both;
  - prompts/s of the sanitization alone (detector and model loads excluded);
  - with ``--answers K`` (the first K prompts of each style): a small LM's answer utility, MiniLM cosine
    between smollm2's greedy answer to the original prompt and its answer to the method's output, after
    ``ppt restore`` where the method keeps a mapping (placeholder, surrogate); and for those, the restore
    rate: of the answers that mention a surrogate, the share where every mentioned surrogate is gone and its
    real value is back.
Slow methods (ProSan: a forward and backward pass of smollm2 per prompt) run on the first ``--slow-n``
prompts of each style; the table's "prompts" column says on how many each row is measured.
Methods whose package is missing (presidio-analyzer, scrubadub, spaCy) are skipped with a note.

    python bench/pii.py [-n 120] [--seed 7] [--styles template,free] [--answers 30] [--slow-n 40]
                        [--json out.json] [--plot out.png]

Independent sets (issue 35; bench/pii_sets.py says what each is and how it is scored): text the detectors were not
tuned on, each with a tune and a report split; lenient and strict hide rates per kind, content kept,
over-redaction, ppt minus Presidio paired, whole-process speed and cold start:

    python bench/pii.py --set outside|freeform|none [--split tune|report] [-n 400] [--seed S] [--only NAME]
                        [--show-leaks K] [--no-speed] [--data FILE] [--inputs DIR] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections import Counter
from collections.abc import Callable

METHODS: dict[str, Callable[[], Callable[[list[str]], list[str]]]] = {}


SLOW: set[str] = set()  # methods run on the first --slow-n prompts of each style


def method(name: str, slow: bool = False):
    def register(fn):
        METHODS[name] = fn
        if slow:
            SLOW.add(name)
        return fn

    return register


def _runner(m):
    """A prepared ppt mechanism as a method: each batch seeded per record from OS entropy; each output with
    its restore mapping (None where the mechanism keeps none)."""
    from ppt.rng import record_generator

    m.prepare()

    def run(texts: list[str]) -> list[tuple[str, list | None]]:
        gens = [record_generator(None, i) for i in range(len(texts))]
        return [(o.text, o.mapping) for o in m.sanitize_batch(texts, gens)]

    return run


def _ppt(mech: str, eps: float | None, detect: tuple[str, ...], **params):
    from ppt.stages.sanitize_spec import SanitizeSpec

    spec = SanitizeSpec(mech, eps=eps, protect="detected", detect=detect, params=params)
    return _runner(spec.build_mechanism(quiet=True))


def _whole(mech: str, eps: float, **params):
    """A mechanism on every token (no detection); ProSan takes eps 1.0, its placeholder (it has none)."""
    from ppt.mechanisms import get_mechanism

    return _runner(get_mechanism(mech, eps, quiet=True, **params))


def detectors() -> tuple[str, ...]:
    import importlib.util

    found = ["categories"]
    if importlib.util.find_spec("presidio_analyzer"):
        found.insert(0, "patterns")
    if importlib.util.find_spec("spacy"):
        found.insert(-1, "ner")
    return tuple(found)


@method("ppt placeholder")
def _placeholder():
    return _ppt("placeholder", None, detectors())


@method("ppt surrogate")
def _surrogate():
    return _ppt("surrogate", None, detectors())


@method("ppt custext+ eps 6, detected only")
def _custext_detected():
    return _ppt("custext+", 6.0, detectors())


@method("ppt tem eps 6, detected only")
def _tem_detected():
    return _ppt("tem", 6.0, detectors())


@method("ppt custext+ eps 1 (all tokens)")
def _custext_all():
    return _whole("custext+", 1.0)


@method("ppt prosan (defaults)", slow=True)
def _prosan():
    return _whole("prosan", 1.0)


@method("ppt prosan (bfloat16, batching=mixed)", slow=True)
def _prosan_fast():
    return _whole("prosan", 1.0, dtype="bfloat16", batching="mixed")


@method("presidio analyzer, <TYPE> placeholders")
def _presidio():
    from presidio_analyzer import AnalyzerEngine
    from presidio_analyzer.nlp_engine import NlpEngineProvider

    from ppt.models.resolve import resolve

    path = resolve("en_core_web_sm").require_installed()
    conf = {"nlp_engine_name": "spacy", "models": [{"lang_code": "en", "model_name": str(path)}]}
    engine = AnalyzerEngine(nlp_engine=NlpEngineProvider(nlp_configuration=conf).create_engine())

    def run(texts: list[str]) -> list[str]:
        out = []
        for t in texts:
            res = sorted(engine.analyze(t, language="en"), key=lambda r: r.start, reverse=True)
            for r in res:
                t = t[: r.start] + f"<{r.entity_type}>" + t[r.end :]
            out.append(t)
        return out

    return run


@method("scrubadub")
def _scrubadub():
    import scrubadub

    scrubber = scrubadub.Scrubber()
    return lambda texts: [scrubber.clean(t) for t in texts]


def wilson(k: int, n: int) -> tuple[float, float]:
    from ppt.attacks.summary import wilson as w

    return w(k, n)


_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")


def content_kept(original: str, output: str, items: list[str], stop: set[str]) -> tuple[int, int]:
    private = {w.lower() for it in items for w in _WORD.findall(it)}
    words = [w.lower() for w in _WORD.findall(original)]
    content = [w for w in words if w not in private and w not in stop]
    have = Counter(w.lower() for w in _WORD.findall(output))
    kept = 0
    for w in content:
        if have[w] > 0:
            have[w] -= 1
            kept += 1
    return kept, len(content)


def without(text: str, items: list[str]) -> str:
    for it in sorted(set(items), key=len, reverse=True):
        text = re.sub(re.escape(it), " ", text, flags=re.IGNORECASE)
    return text


def evaluate(name: str, run, recs: list[dict], encoder, stop: set[str]) -> dict:
    from ppt.metrics.phr import phr
    from ppt.metrics.similarity import paired_cosine

    texts = [r["text"] for r in recs]
    run(texts[:2])  # warm-up (lazy model loads, spaCy's first batch): not timed
    t0 = time.perf_counter()
    got = []
    for s in range(0, len(texts), 32):
        got += run(texts[s : s + 32])
    seconds = time.perf_counter() - t0
    # a runner returns texts, or (text, mapping) pairs where the method keeps a restore mapping
    outs = [g[0] if isinstance(g, tuple) else g for g in got]
    mappings = [g[1] if isinstance(g, tuple) else None for g in got]
    by_kind: dict[str, list[int]] = {}
    absent = total = 0
    kept = content = 0
    for r, o in zip(recs, outs):
        for item, kind in zip(r["private_items"], r["private_types"]):
            gone = phr([item], o)["absent"]
            by_kind.setdefault(kind, [0, 0])
            by_kind[kind][0] += gone
            by_kind[kind][1] += 1
            absent += gone
            total += 1
        k, c = content_kept(r["text"], o, r["private_items"], stop)
        kept, content = kept + k, content + c
    cos = paired_cosine(
        encoder,
        [without(r["text"], r["private_items"]) for r in recs],
        [without(o, r["private_items"]) for r, o in zip(recs, outs)],
    )
    lo, hi = wilson(absent, total)
    by_style: dict[str, list[int]] = {}
    for r, o in zip(recs, outs):
        tally = by_style.setdefault(r.get("style", "template"), [0, 0])
        tally[0] += phr(r["private_items"], o)["absent"]
        tally[1] += len(r["private_items"])
    return {
        "method": name,
        "phr": absent / total,
        "phr_ci95": [lo, hi],
        "phr_by_kind": {k: a / n for k, (a, n) in sorted(by_kind.items())},
        "phr_by_kind_ci95": {k: list(wilson(a, n)) for k, (a, n) in sorted(by_kind.items())},
        "items_by_kind": {k: n for k, (_, n) in sorted(by_kind.items())},
        "phr_by_style": {k: a / n for k, (a, n) in sorted(by_style.items())},
        "content_kept": kept / max(content, 1),
        "cosine": sum(cos) / len(cos),
        "prompts_per_s": len(recs) / seconds,
        "prompts": len(recs),
        "example": outs[0],
        "_outputs": outs,  # for the answers (not written to the JSON)
        "_mappings": mappings,
    }


_LOOSE = re.compile(r"[A-Za-z0-9@.+_-]{3,}")  # "<PERSON_1>" -> "PERSON_1"


def restored_ok(answer: str, restored: str, mapping: list[dict], source: str) -> bool | None:
    """None when ``answer`` mentions no surrogate; else whether every mentioned one is gone from ``restored``
    and its real value is there. "Mentions" is loose on purpose (any word of 3+ characters of the surrogate,
    case-insensitive, even inside another word, so "authors" mentions "author"): a surrogate the model
    inflected or cut counts as a miss rather than as not mentioned; a surrogate word that is also in the source
    prompt is not evidence. "There": a word of the original (a model that writes one surrogate name's first
    name with another's surname gets each word's original back, not either full name)."""
    low, back, src = answer.lower(), restored.lower(), source.lower()
    mentioned = []
    for m in mapping:
        words = [w.lower() for w in _LOOSE.findall(m.get("surrogate") or "")]
        hits = [w for w in words if w in low and w not in src]
        if hits:
            mentioned.append((m, hits))
    if not mentioned:
        return None
    for m, hits in mentioned:
        original = [w.lower() for w in _LOOSE.findall(m.get("original") or "")] or [(m.get("original") or "").lower()]
        if any(w in back for w in hits) or not any(w in back for w in original):
            return False
    return True


def answer_utility(rows: list[dict], recs: list[dict], k: int, styles: list[str], encoder, tokens: int) -> None:
    """Adds ``answer_cosine`` (and ``restore_rate``) to each row, on the first ``k`` prompts of each style."""
    from ppt.lm.base import SamplingParams
    from ppt.lm.generate import LocalGenerator
    from ppt.metrics.similarity import paired_cosine
    from ppt.stages.restore import restore_text

    idx = [i for st in styles for i in [j for j, r in enumerate(recs) if r.get("style", "template") == st][:k]]
    gen = LocalGenerator.load("smollm2", device="cpu", batch_size=8)
    params = SamplingParams(max_new_tokens=tokens, temperature=0.0)

    def answers(prompts: list[str]) -> list[str]:
        ask = "Summarize this message in one sentence, naming the people and places in it:\n\n{}"
        res = gen.generate([[{"role": "user", "content": ask.format(q)}] for q in prompts], params)
        return [getattr(r, "text", "") for r in res]

    t0 = time.perf_counter()
    base = answers([recs[i]["text"] for i in idx])
    for r in rows:
        pos = {i: j for j, i in enumerate(r["_index"])}  # prompt -> its output in this row
        have = [i for i in idx if i in pos]
        got = answers([r["_outputs"][pos[i]] for i in have])
        restored, tally = [], [0, 0]
        for i, a in zip(have, got):
            mapping = r["_mappings"][pos[i]]
            back = restore_text(a, mapping)[0] if mapping else a
            restored.append(back)
            ok = restored_ok(a, back, mapping, recs[i]["text"]) if mapping else None
            if ok is not None:
                tally[0] += ok
                tally[1] += 1
        cos = paired_cosine(encoder, [base[idx.index(i)] for i in have], restored)
        r["answer_cosine"] = sum(cos) / len(cos)
        r["answer_prompts"] = len(have)
        if tally[1]:
            r["restore_rate"], r["restore_answers"] = tally[0] / tally[1], tally[1]
            r["restore_ci95"] = list(wilson(*tally))
        if not r.get("answer_example"):
            r["answer_example"] = restored[0]
        print(f"answers {r['method']}: {time.perf_counter() - t0:.0f}s", file=sys.stderr)


def print_tables(rows: list[dict], styles: list[str]) -> None:
    """Markdown: one row per method (overall PHR with its interval, per style, utility, speed), then PHR per kind
    with 95% Wilson intervals (kinds as rows, methods as columns)."""
    print(
        "| method | prompts | PHR [95% CI] | "
        + " | ".join(f"PHR {s}" for s in styles)
        + " | content kept | cosine | answer cosine | restored | prompts/s |"
    )
    print("|---" * (len(styles) + 8) + "|")
    for r in rows:
        lo, hi = r["phr_ci95"]
        cells = [f"{r['phr_by_style'].get(s, float('nan')):.2f}" for s in styles]
        ans = f"{r['answer_cosine']:.2f}" if "answer_cosine" in r else ""
        back = f"{r['restore_rate']:.2f} ({r['restore_answers']})" if "restore_rate" in r else ""
        print(
            f"| {r['method']} | {r['prompts']} | {r['phr']:.2f} [{lo:.2f}, {hi:.2f}] | "
            + " | ".join(cells)
            + f" | {r['content_kept']:.2f} | {r['cosine']:.2f} | {ans} | {back} | {r['prompts_per_s']:.1f} |"
        )
    kinds = sorted({k for r in rows for k in r["phr_by_kind"]})
    print()
    print("| kind (items) | " + " | ".join(r["method"] for r in rows) + " |")
    print("|---" * (len(rows) + 1) + "|")
    for k in kinds:
        n = max(r["items_by_kind"].get(k, 0) for r in rows)
        cells = []
        for r in rows:
            if k not in r["phr_by_kind"]:
                cells.append("")
                continue
            lo, hi = r["phr_by_kind_ci95"][k]
            cells.append(f"{r['phr_by_kind'][k]:.2f} [{lo:.2f}, {hi:.2f}]")
        print(f"| {k} ({n}) | " + " | ".join(cells) + " |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--set",
        default="make-pii",
        choices=("make-pii", "outside", "freeform", "none"),
        help="make-pii (default: the tuning templates) or an independent set (bench/pii_sets.py)",
    )
    ap.add_argument("--split", default="tune", choices=("tune", "report"), help="split of an independent set")
    ap.add_argument(
        "--show-leaks", type=int, default=0, metavar="K", help="print up to K missed items per method (tune split only)"
    )
    ap.add_argument("--data", help="read --set freeform/none from this file (same schema)")
    ap.add_argument("--inputs", metavar="DIR", help="keep the JSONL inputs the timed commands read here")
    ap.add_argument("--no-speed", dest="speed", action="store_false", help="skip the whole-process timing")
    ap.add_argument("--repeats", type=int, default=3, help="timing runs per command (the best is kept)")
    ap.add_argument(
        "-n",
        type=int,
        default=None,
        help="prompts per style (make-pii, default 120) or per split (outside: 400; freeform/none: all)",
    )
    ap.add_argument("--styles", default="template,free", help="make-pii styles, comma-separated (each -n prompts)")
    ap.add_argument("--seed", type=int, default=None, help="make-pii: 7; outside: 1 (tune), 2026 (report)")
    ap.add_argument("--only", action="append", help="run only methods whose name contains this (repeatable)")
    ap.add_argument("--answers", type=int, default=0, help="answer utility on the first K prompts of each style")
    ap.add_argument("--answer-tokens", type=int, default=48)
    ap.add_argument("--slow-n", type=int, default=40, help="prompts of each style for the slow methods (ProSan)")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--plot", help="write a PHR-vs-utility plot here (matplotlib)")
    ap.add_argument("--replot", metavar="JSON", help="only redraw --plot from a results file this script wrote")
    args = ap.parse_args()
    if args.set != "make-pii":
        import pii_sets

        pii_sets.main(args)
        return
    args.n = 120 if args.n is None else args.n
    args.seed = 7 if args.seed is None else args.seed
    if args.replot:
        with open(args.replot) as f:
            saved = json.load(f)
        plot(saved["rows"], args.plot, saved.get("answers", 0))
        return

    from ppt.experiments.pii import make_pii
    from ppt.mechanisms.policy import stopwords_en
    from ppt.models import load_sentence_encoder

    styles = [x for x in args.styles.split(",") if x]
    recs = [r for st in styles for r in make_pii(args.n, args.seed, style=st)]
    encoder = load_sentence_encoder("minilm", device="cpu")
    stop = set(stopwords_en())
    print(
        f"{len(recs)} prompts (make-pii seed {args.seed}, {'+'.join(styles)}); detectors: {', '.join(detectors())}",
        file=sys.stderr,
    )
    load_start = os.getloadavg()[0]  # the CPU is shared: speeds are comparable within one run only
    rows = []
    for name, build in METHODS.items():
        if args.only and not any(o in name for o in args.only):
            continue
        try:
            run = build()
        except ImportError as e:
            print(f"skip {name}: {e}", file=sys.stderr)
            continue
        index = list(range(len(recs)))
        if name in SLOW:  # the first --slow-n of each style
            by = [[i for i, x in enumerate(recs) if x.get("style", "template") == st] for st in styles]
            index = [i for ids in by for i in ids[: args.slow_n]]
        rows.append(evaluate(name, run, [recs[i] for i in index], encoder, stop) | {"_index": index})
        print(f"done {name}", file=sys.stderr)
    if args.answers:
        answer_utility(rows, recs, args.answers, styles, encoder, args.answer_tokens)
    print_tables(rows, styles)
    print(f"load average (1 min): {load_start:.1f} at the start, {os.getloadavg()[0]:.1f} at the end", file=sys.stderr)
    if args.json:
        with open(args.json, "w") as f:
            meta = {"n": len(recs), "seed": args.seed, "styles": styles, "detectors": detectors()}
            meta["load_avg_1min"] = [load_start, os.getloadavg()[0]]  # at the start and at the end
            meta |= {"answers": args.answers, "answer_tokens": args.answer_tokens, "slow_n": args.slow_n}
            clean = [{k: v for k, v in r.items() if not k.startswith("_")} for r in rows]
            json.dump({**meta, "rows": clean}, f, indent=1)
    if args.plot:
        plot(rows, args.plot, args.answers)


def plot(rows: list[dict], path: str, answers: int) -> None:
    """PHR against content kept and, with answers, against answer utility: one marker per method, named in
    a legend (labels beside points overlap where methods land together)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [("content_kept", "content words kept")]
    if answers:
        panels.append(("answer_cosine", f"answer utility (smollm2 answers, MiniLM cos; {answers}/style)"))
    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 5.2), squeeze=False)
    markers = "osD^vP*Xh<>"
    for ax, (key, label) in zip(axes[0], panels):
        for i, r in enumerate(rows):
            if key in r:
                ax.scatter(r[key], r["phr"], marker=markers[i % len(markers)], s=60, alpha=0.8, label=r["method"])
        ax.set_xlabel(label)
        ax.set_ylabel("PHR (share of private items hidden)")
        ax.set_xlim(0, 1.05)
        ax.set_ylim(0, 1.05)
        ax.grid(alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.16, 1, 1))
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
