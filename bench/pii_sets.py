"""bench/pii.py's independent sets (issue 35): text the detectors were not tuned on, each with a tuning split
and a report split. Figures for docs come from the report split only; tune on the tune split.

Sets (``--set``):
  - ``outside``: sentences from presidio-evaluator's generator (``PresidioSentenceFaker``: its own hand-written
    templates and fake person records; en_US, 5% lower-cased names, the generator's own example settings).
    Split by template: the templates at even positions (0, 2, 4, ...) of its template file are the tune split,
    those at odd positions the report split, so no report template is ever seen while tuning. -n sentences per
    split (default 400) drawn from that split's templates; seed 1 for tune, 2026 for report (``--seed`` overrides).
    Gold items: the generator's spans (value text and entity type).
  - ``freeform``: ``bench/data/pii_freeform.jsonl``, hand-written prompts in many styles, by an author independent
    of the detectors; records {"id", "split": "tune"|"report", "style", "text", "items": [{"value", "kind"}]},
    every value a substring of its text.
  - ``none``: ``bench/data/pii_none.jsonl``, same schema, no items: prompts without personal data, to measure
    over-redaction.

Methods: every command reads JSONL records on stdin and writes them back with the text sanitized, so quality and
speed are measured on the same whole-process runs: ``ppt-readable`` (``ppt sanitize --preset readable``, the CLI
defaults), ``ppt-readable --detect NAME`` for each name in ``ppt.detect.build.DETECTORS`` (read when run), ``ppt-surrogate``
(``-m surrogate``) and ``presidio`` (bench/presidio_baseline.py: analyzer + anonymizer out of the box, on the spaCy
pipeline ppt's ner detector loads).

Metrics, each with a 95% Wilson interval (items and words counted as independent trials; read them as lower bounds
on the real uncertainty):
  - lenient hide rate: an item is hidden when its value no longer occurs in the output as whole words
    (``ppt.metrics.phr``: case-, whitespace- and separator-insensitive);
  - strict hide rate: hidden leniently and no word of the value leaks; the value's words are its alphanumeric runs
    but stopwords and single characters, and a word leaks when the output has it more often than the input has it
    outside every gold value (a word that is legitimately elsewhere in the prompt is no leak);
  - per kind (kinds with >= 15 items marked *), and the special categories as one group;
  - content kept: the share of the input's content words (letters, no stopword, in no gold value) in the output;
  - on ``none``: the share of content words replaced (1 - kept) and the share of prompts changed at all;
  - the paired difference of hide rates, each ppt method minus presidio on the same items (bootstrap over prompts,
    2000 draws, 95% percentile interval);
  - speed: whole-process prompts/s of ``ppt sanitize --preset readable -q < FILE > /dev/null`` and of the Presidio
    script on the same FILE (the set's texts), each run as a subprocess, wall clock, best of 3, alternating; and a
    one-record cold start of each (best of 3). The commands are printed (``--inputs DIR`` keeps the files they
    read).

Placeholders a method writes (``<PERSON>``, ``<PERSON_1>``) are not words of its output.
``--show-leaks K`` prints up to K missed items per method with the output: tune split only (refused on the report
split, so that no one tunes on it); nothing of the report split's text is printed or written.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
import unicodedata
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
FILES = {"freeform": DATA / "pii_freeform.jsonl", "none": DATA / "pii_none.jsonl"}
SETS = ("outside", "freeform", "none")
SPLITS = ("tune", "report")
SEEDS = {"tune": 1, "report": 2026}  # the outside set's generator seeds; 2026 was never used before the report
SPECIAL = frozenset(
    {"HEALTH", "SEXUAL_ORIENTATION", "RELIGION", "POLITICAL", "NRP", "CRIMINAL", "IMMIGRATION", "FINANCIAL"}
)
MIN_KIND = 15  # kinds with at least this many items carry a goal (marked * in the tables)
BOOTSTRAP = 2000
REPEATS = 3

_ALNUM = re.compile(r"[^\W_]+", re.UNICODE)  # as ppt.metrics.phr
_PLACEHOLDER = re.compile(r"<[A-Z][A-Z0-9_]*>")


# ---------------------------------------------------------------- the sets


def outside(split: str, n: int, seed: int) -> list[dict]:
    """``n`` sentences of presidio-evaluator's generator from the templates of ``split`` (even template positions:
    tune; odd: report)."""
    from presidio_evaluator.data_generator import PresidioSentenceFaker
    from presidio_evaluator.data_generator.presidio_sentence_faker import presidio_templates_file_path

    templates = [line.strip() for line in presidio_templates_file_path.read_text().splitlines()]
    first = SPLITS.index(split)  # 0: even positions, 1: odd positions
    chosen = templates[first::2]
    with contextlib.redirect_stdout(sys.stderr):  # the generator prints its settings
        faker = PresidioSentenceFaker("en_US", lower_case_ratio=0.05, sentence_templates=chosen, random_seed=seed)
        samples = faker.generate_new_fake_sentences(n)
    recs = []
    for i, s in enumerate(samples):
        template = first + 2 * int(s.template_id)  # its position in the generator's template file
        items = [
            {"value": s.full_text[sp.start_position : sp.end_position], "kind": str(sp.entity_type).upper()}
            for sp in s.spans
        ]
        recs.append({"id": f"outside-{split}-{seed}-{i}", "template": template, "text": s.full_text, "items": items})
    return recs


def read_jsonl_set(path: Path, split: str) -> list[dict]:
    """The records of ``split`` in a set file (schema above); items whose value is not in the text are dropped
    with a warning."""
    recs = []
    with open(path, encoding="utf-8") as f:
        for line_no, line in enumerate(f, 1):
            if not line.strip():
                continue
            r = json.loads(line)
            if r.get("split") != split:
                continue
            items = []
            for it in r.get("items") or []:
                if it["value"] and it["value"] in r["text"]:
                    items.append({"value": it["value"], "kind": str(it["kind"]).upper()})
                else:
                    print(
                        f"warning: {path.name}:{line_no}: an item's value is not in its text; dropped", file=sys.stderr
                    )
            recs.append(
                {"id": str(r.get("id", line_no)), "style": r.get("style", ""), "text": r["text"], "items": items}
            )
    return recs


def load(name: str, split: str, n: int | None, seed: int | None, data: str | None) -> tuple[list[dict], dict]:
    """(records, what they are) of set ``name``."""
    if name == "outside":
        seed = SEEDS[split] if seed is None else seed
        n = 400 if n is None else n
        recs = outside(split, n, seed)
        rule = "presidio-evaluator templates at " + ("even" if split == "tune" else "odd") + " positions"
        return recs, {"set": name, "split": split, "seed": seed, "source": rule}
    path = Path(data) if data else FILES[name]
    if not path.exists():
        raise SystemExit(f"{path} does not exist (yet): give --data FILE with the same schema")
    recs = read_jsonl_set(path, split)
    if n is not None:
        recs = recs[:n]
    return recs, {
        "set": name,
        "split": split,
        "source": str(path.relative_to(HERE.parent) if path.is_relative_to(HERE.parent) else path),
    }


# ---------------------------------------------------------------- metrics


def runs(text: str) -> list[str]:
    return _ALNUM.findall(unicodedata.normalize("NFKC", text).casefold())


def unplaceholder(output: str) -> str:
    return _PLACEHOLDER.sub(" ", output)


def without(text: str, values: list[str]) -> str:
    """``text`` with every occurrence of each value (case-insensitive) cut out."""
    for v in sorted(set(values), key=len, reverse=True):
        text = re.sub(re.escape(v), " ", text, flags=re.IGNORECASE)
    return text


def value_words(value: str, stop: set[str]) -> list[str]:
    return [w for w in dict.fromkeys(runs(value)) if len(w) > 1 and w not in stop]


def score_record(rec: dict, output: str, stop: set[str]) -> list[tuple[bool, bool]]:
    """(hidden leniently, hidden strictly) for each gold item of ``rec`` in ``output``."""
    from ppt.metrics.phr import item_present

    out = unplaceholder(output)
    out_runs = runs(out)
    values = [it["value"] for it in rec["items"]]
    elsewhere = Counter(runs(without(rec["text"], values)))
    have = Counter(out_runs)
    flags = []
    for it in rec["items"]:
        lenient = not item_present(it["value"], out_runs)
        strict = lenient and all(have[w] <= elsewhere[w] for w in value_words(it["value"], stop))
        flags.append((lenient, strict))
    return flags


def content(rec: dict, output: str, stop: set[str]) -> tuple[int, int]:
    """(content words of the input still in the output, content words of the input)."""
    from pii import content_kept

    return content_kept(rec["text"], unplaceholder(output), [it["value"] for it in rec["items"]], stop)


def wilson(k: int, n: int) -> list[float]:
    from ppt.attacks.summary import wilson as w

    return list(w(k, n))


def rate(k: int, n: int) -> dict:
    return {"k": k, "n": n, "rate": k / n if n else None, "ci95": wilson(k, n)}


def paired_bootstrap(a: list[tuple[int, int]], b: list[tuple[int, int]], seed: int = 0) -> dict:
    """Hide rate of ``a`` minus that of ``b`` ((hidden, items) per prompt, same prompts), with a 95% percentile
    interval over prompts resampled."""
    import numpy as np

    arr = np.asarray([(x[0], y[0], x[1]) for x, y in zip(a, b)], dtype=np.float64)
    if not len(arr) or arr[:, 2].sum() == 0:
        return {"diff": None, "ci95": None}
    diff = (arr[:, 0].sum() - arr[:, 1].sum()) / arr[:, 2].sum()
    idx = np.random.default_rng(seed).integers(0, len(arr), size=(BOOTSTRAP, len(arr)))
    s = arr[idx].sum(axis=1)
    d = np.divide(s[:, 0] - s[:, 1], s[:, 2], out=np.zeros(BOOTSTRAP), where=s[:, 2] > 0)
    lo, hi = np.quantile(d, [0.025, 0.975])
    return {"diff": float(diff), "ci95": [float(lo), float(hi)]}


def evaluate(recs: list[dict], outs: list[str], stop: set[str]) -> dict:
    """One method's figures on one set; ``_per_prompt`` keeps (lenient hidden, strict hidden, items) per prompt."""
    kinds: dict[str, list[int]] = {}
    per_prompt = []
    kept = words = changed = 0
    leaks = []
    for rec, out in zip(recs, outs):
        flags = score_record(rec, out, stop)
        per_prompt.append((sum(f[0] for f in flags), sum(f[1] for f in flags), len(flags)))
        for it, (len_ok, strict_ok) in zip(rec["items"], flags):
            for key in (it["kind"], "special categories") if it["kind"] in SPECIAL else (it["kind"],):
                t = kinds.setdefault(key, [0, 0, 0])
                t[0] += len_ok
                t[1] += strict_ok
                t[2] += 1
            if not strict_ok:
                leaks.append({"id": rec["id"], "kind": it["kind"], "value": it["value"], "strict_only": len_ok})
        k, c = content(rec, out, stop)
        kept, words = kept + k, words + c
        changed += " ".join(out.split()) != " ".join(rec["text"].split())
    hid = sum(p[0] for p in per_prompt)
    hid_strict = sum(p[1] for p in per_prompt)
    items = sum(p[2] for p in per_prompt)
    return {
        "prompts": len(recs),
        "items": items,
        "lenient": rate(hid, items),
        "strict": rate(hid_strict, items),
        "by_kind": {
            k: {"items": n, "lenient": rate(a, n), "strict": rate(s, n)} for k, (a, s, n) in sorted(kinds.items())
        },
        "content_kept": rate(kept, words),
        "content_replaced": rate(words - kept, words),
        "prompts_changed": rate(changed, len(recs)),
        "_per_prompt": per_prompt,
        "_leaks": leaks,
    }


# ---------------------------------------------------------------- methods


def ppt_command() -> list[str]:
    """``ppt`` of this interpreter's environment."""
    import shutil

    exe = Path(sys.executable).with_name("ppt")
    if exe.exists():
        return [str(exe)]
    found = shutil.which("ppt")
    return [found] if found else [sys.executable, "-m", "ppt"]


def ner_pipeline() -> str:
    """The spaCy pipeline ppt's ner detector loads by default (a path), for Presidio to load the same."""
    from ppt.detect.ner import NerDetector

    nlp = NerDetector().nlp
    if getattr(nlp, "path", None):
        return str(nlp.path)
    import inspect

    from ppt.models.resolve import resolve

    return str(resolve(inspect.signature(NerDetector).parameters["model"].default).require_installed())


def methods(only: list[str] | None) -> dict[str, list[str]]:
    """Method name -> the command that reads JSONL records on stdin and writes them sanitized on stdout."""
    from ppt.detect.build import DETECTORS

    ppt = [*ppt_command(), "sanitize", "--preset", "readable", "-q"]
    found = {"ppt-readable": ppt}
    for name in DETECTORS:
        found[f"ppt-readable --detect {name}"] = [*ppt, "--detect", name]
    found["ppt-surrogate"] = [*ppt, "-m", "surrogate"]
    want = [m for m in [*found, "presidio"] if not only or any(o in m for o in only)]
    out = {m: found[m] for m in want if m in found}
    if "presidio" in want:
        out["presidio"] = [sys.executable, str(HERE / "presidio_baseline.py"), "--model", ner_pipeline()]
    return out


def write_input(recs: list[dict], path: Path) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for r in recs:
            f.write(json.dumps({"id": r["id"], "text": r["text"]}, ensure_ascii=False) + "\n")


def run_method(cmd: list[str], path: Path, recs: list[dict]) -> tuple[list[str], float, str | None]:
    """The outputs (in ``recs``' order), the wall seconds of one whole-process run and ppt's stamp signature
    (what ran: mechanism, detectors and their versions; None for Presidio)."""
    with open(path, "rb") as src:
        t0 = time.perf_counter()
        p = subprocess.run(cmd, stdin=src, capture_output=True)
        seconds = time.perf_counter() - t0
    if p.returncode != 0:
        tail = p.stderr.decode(errors="replace").strip().splitlines()[-3:]
        raise RuntimeError(f"exit {p.returncode}: " + " / ".join(tail))
    got, signature = {}, None
    for line in p.stdout.decode().splitlines():
        if line.strip():
            r = json.loads(line)
            got[r["id"]] = r.get("text") or ""
            signature = signature or ((r.get("ppt") or {}).get("sanitize") or {}).get("signature")
    missing = [r["id"] for r in recs if r["id"] not in got]
    if missing:
        raise RuntimeError(f"{len(missing)} records missing from the output")
    return [got[r["id"]] for r in recs], seconds, signature


def timed(cmd: list[str], path: Path) -> float:
    with open(path, "rb") as src:
        t0 = time.perf_counter()
        subprocess.run(cmd, stdin=src, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        return time.perf_counter() - t0


def speed(cmds: dict[str, list[str]], path: Path, one: Path, n: int, repeats: int = REPEATS) -> dict:
    """Best-of-``repeats`` wall seconds of each command on ``path`` (``n`` prompts) and on ``one`` (one record),
    the commands alternating."""
    full = {m: [] for m in cmds}
    cold = {m: [] for m in cmds}
    for _ in range(repeats):
        for m, cmd in cmds.items():
            full[m].append(timed(cmd, path))
            cold[m].append(timed(cmd, one))
    res = {
        m: {
            "command": shlex.join(cmd) + f" < {path} > /dev/null",
            "prompts": n,
            "seconds": min(full[m]),
            "prompts_per_s": n / min(full[m]),
            "cold_start_s": min(cold[m]),
            "runs_s": full[m],
            "cold_runs_s": cold[m],
        }
        for m, cmd in cmds.items()
    }
    return res


# ---------------------------------------------------------------- output


def _ci(r: dict) -> str:
    if r["rate"] is None:
        return ""
    lo, hi = r["ci95"]
    return f"{r['rate']:.3f} [{lo:.3f}, {hi:.3f}]"


def _diff(d: dict | None) -> str:
    if not d or d["diff"] is None:
        return ""
    lo, hi = d["ci95"]
    return f"{d['diff']:+.3f} [{lo:+.3f}, {hi:+.3f}]"


def print_tables(rows: list[dict], meta: dict, speeds: dict | None, repeats: int = REPEATS) -> None:
    print(
        f"### {meta['set']}, {meta['split']} split ({meta['source']}"
        + (f", seed {meta['seed']}" if "seed" in meta else "")
        + ")\n"
    )
    if meta["set"] != "none":
        print(
            "| method | prompts | items | hide lenient [95% CI] | hide strict [95% CI] | special categories lenient "
            "| content kept [95% CI] | lenient - presidio [95% bootstrap] | strict - presidio [95% bootstrap] |"
        )
        print("|---" * 9 + "|")
        for r in rows:
            sp = r["by_kind"].get("special categories")
            spc = f"{_ci(sp['lenient'])} ({sp['items']})" if sp else ""
            print(
                f"| {r['method']} | {r['prompts']} | {r['items']} | {_ci(r['lenient'])} | {_ci(r['strict'])} | {spc} "
                f"| {_ci(r['content_kept'])} | {_diff(r.get('vs_presidio_lenient'))} "
                f"| {_diff(r.get('vs_presidio_strict'))} |"
            )
        kinds = sorted({k for r in rows for k in r["by_kind"]}, key=lambda k: (k == "special categories", k))
        for which in ("lenient", "strict"):
            print(f"\n{which} hide rate per kind (* : {MIN_KIND} items or more)\n")
            print("| kind (items) | " + " | ".join(r["method"] for r in rows) + " |")
            print("|---" * (len(rows) + 1) + "|")
            for k in kinds:
                n = max(r["by_kind"].get(k, {"items": 0})["items"] for r in rows)
                cells = [_ci(r["by_kind"][k][which]) if k in r["by_kind"] else "" for r in rows]
                mark = " *" if n >= MIN_KIND else ""
                print(f"| {k} ({n}){mark} | " + " | ".join(cells) + " |")
    else:
        print("| method | prompts | content words replaced [95% CI] | prompts changed [95% CI] |")
        print("|---" * 4 + "|")
        for r in rows:
            print(f"| {r['method']} | {r['prompts']} | {_ci(r['content_replaced'])} | {_ci(r['prompts_changed'])} |")
    if speeds:
        names = list(speeds)
        print(f"\n| command | prompts | best of {repeats} (s) | prompts/s | one-record cold start (s) |")
        print("|---" * 5 + "|")
        for m in names:
            s = speeds[m]
            print(f"| {m} | {s['prompts']} | {s['seconds']:.2f} | {s['prompts_per_s']:.1f} | {s['cold_start_s']:.2f} |")
        if "ppt-readable" in speeds and "presidio" in speeds:
            a, b = speeds["ppt-readable"], speeds["presidio"]
            print(
                f"\nppt-readable / presidio: {a['prompts_per_s'] / b['prompts_per_s']:.2f}x prompts/s; "
                f"cold start {a['cold_start_s']:.2f} s vs {b['cold_start_s']:.2f} s"
            )
        print(f"\ncommands (whole process, wall clock, best of {repeats}, alternating):")
        for m in names:
            print(f"    {speeds[m]['command']}")


def show_leaks(rows: list[dict], recs: list[dict], outs: dict[str, list[str]], k: int) -> None:
    by_id = {r["id"]: i for i, r in enumerate(recs)}
    for r in rows:
        print(
            f"\n--- leaks of {r['method']} (up to {k} of {len(r['_leaks'])}; 'strict' = only a word leaked)",
            file=sys.stderr,
        )
        for leak in r["_leaks"][:k]:
            i = by_id[leak["id"]]
            tag = "strict" if leak["strict_only"] else "whole"
            print(
                f"[{leak['kind']}] {tag} {leak['value']!r}\n    in:  {recs[i]['text']}\n    out: {outs[r['method']][i]}",
                file=sys.stderr,
            )


def main(args) -> None:
    """bench/pii.py --set: one set, one split, every method; tables on stdout, --json."""
    from ppt.mechanisms.policy import stopwords_en

    split = args.split
    if args.show_leaks and split != "tune":
        raise SystemExit("--show-leaks is for the tune split only: nothing of the report split is shown")
    stop = set(stopwords_en())
    recs, meta = load(args.set, split, args.n, args.seed, args.data)
    if not recs:
        raise SystemExit(f"no records in the {split} split of {args.set}")
    cmds = methods(args.only)
    print(
        f"{len(recs)} prompts, {sum(len(r['items']) for r in recs)} items; methods: {', '.join(cmds)}", file=sys.stderr
    )
    load_start = os.getloadavg()[0]  # the CPU may be shared: speeds compare within one run only
    rows, outs = [], {}
    keep = getattr(args, "inputs", None)
    with tempfile.TemporaryDirectory(prefix="pii-bench-") as tmp:
        where = Path(keep) if keep else Path(tmp)
        where.mkdir(parents=True, exist_ok=True)
        path, one = where / f"{args.set}-{split}.jsonl", where / f"{args.set}-{split}-one.jsonl"
        write_input(recs, path)
        write_input(recs[:1], one)
        for name, cmd in cmds.items():
            try:
                got, seconds, signature = run_method(cmd, path, recs)
            except (RuntimeError, OSError) as e:
                print(f"skip {name}: {e}", file=sys.stderr)
                continue
            outs[name] = got
            row = {"method": name, "command": shlex.join(cmd), "signature": signature, "run_s": seconds}
            rows.append(row | evaluate(recs, got, stop))
            print(f"done {name} ({seconds:.1f} s)", file=sys.stderr)
        base = next((r for r in rows if r["method"] == "presidio"), None)
        if base is not None:
            for r in rows:
                if r is not base:
                    for j, which in ((0, "lenient"), (1, "strict")):
                        a = [(p[j], p[2]) for p in r["_per_prompt"]]
                        b = [(p[j], p[2]) for p in base["_per_prompt"]]
                        r[f"vs_presidio_{which}"] = paired_bootstrap(a, b)
        speeds = None
        timing = {m: cmds[m] for m in ("ppt-readable", "presidio") if m in outs}
        if args.speed and timing:
            print("timing ...", file=sys.stderr)
            speeds = speed(timing, path, one, len(recs), args.repeats)
    meta["load_avg_1min"] = [load_start, os.getloadavg()[0]]
    print_tables(rows, meta, speeds, args.repeats)
    print(f"load average (1 min): {load_start:.1f} at the start, {os.getloadavg()[0]:.1f} at the end", file=sys.stderr)
    if args.show_leaks:
        show_leaks(rows, recs, outs, args.show_leaks)
    if args.json:
        clean = []
        for r in rows:
            c = {k: v for k, v in r.items() if not k.startswith("_")}
            if split == "tune":
                c["leaks"] = r["_leaks"][:200]
            clean.append(c)
        with open(args.json, "w") as f:
            json.dump({**meta, "prompts": len(recs), "rows": clean, "speed": speeds}, f, indent=1)
