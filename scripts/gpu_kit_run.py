"""`scripts/gpu_kit.sh run`'s measurements: each bench as its own process, bounded in time, its figures read
from the JSON it writes; then one table (each figure beside the issue-28 goal where one is stated, and the
device's name) and one JSON (results.json) with every figure, every step's status and the run's log.

Sizes: --quick cuts every step to seconds (CI on a CPU); otherwise CUDA runs at the issue's sizes (RANTEXT
over >= 2M perturbed tokens, Cape 2048 prompts of 50 tokens, 1024 extractions of 64 tokens, 1024 serve
requests of 64 tokens from 256 concurrent clients) and a CPU at sizes a laptop finishes in minutes.
"""

from __future__ import annotations

import json
import math
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"

# (goal, how the table states it): the goals, all for a GPU (an H100); "scale" goals are per worker
GOALS = {
    "rantext_e2e": (1e6, ">= 1M tok/s"),
    "rantext_mechanism": (20e6, ">= 20M tok/s"),
    "cape": (2000.0, ">= 2,000 prompts/s"),
    "extract": (20000.0, ">= 20,000 tok/s"),
}


def sizes(device: str, quick: bool) -> dict:
    if quick:
        return {
            "space": "cl100k-minilm:2000",
            "records": 300,
            "repeat": 1,
            "token_records": 100,
            "cape": ["--layers", "1", "--n-prompts", "4", "--batch-sizes", "4"],
            "extract": ["--layers", "1", "--n", "4", "--max-new-tokens", "8"],
            "serve": ["--layers", "1", "--n", "8", "--concurrency", "4", "--max-tokens", "8"],
            "workers": [1, 2],
        }
    if device == "cuda":
        return {
            "space": "cl100k-minilm",
            "records": 80000,  # ~26 perturbed tokens per record: >= 2M tokens
            "repeat": 2,
            "token_records": 2000,
            "cape": ["--n-prompts", "2048", "--batch-sizes", "512"],
            "extract": ["--n", "1024", "--max-new-tokens", "64"],
            "serve": ["--n", "1024", "--concurrency", "256", "--max-tokens", "64"],
            "workers": [1, 2, 4, 8],
        }
    return {
        "space": "cl100k-minilm",
        "records": 4000,
        "repeat": 2,
        "token_records": 400,
        "cape": ["--layers", "4", "--n-prompts", "32", "--batch-sizes", "16"],
        "extract": ["--layers", "4", "--n", "16", "--max-new-tokens", "16"],
        "serve": ["--layers", "4", "--n", "32", "--concurrency", "8", "--max-tokens", "16"],
        "workers": [1, 2],
    }


class Runner:
    """Runs the steps within a wall-clock budget; keeps every step's status and the combined log."""

    def __init__(self, budget: float, log: Path):
        self.deadline = time.monotonic() + budget
        self.log = log
        self.steps: dict[str, dict] = {}

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def bench(self, step: str, script: str, argv: list[str], limit: float) -> dict | None:
        """Run bench/<script> with --json; its figures, or None (the step's status says why)."""
        with tempfile.TemporaryDirectory(prefix="ppt-kit-") as tmp:
            out = Path(tmp) / "out.json"
            ok = self.process(step, [sys.executable, str(BENCH / script), *argv, "--json", str(out)], limit)
            if not ok:
                return None
            if not out.is_file():
                self.steps[step].update(status="failed", detail="no JSON written")
                return None
            return json.loads(out.read_text())

    def process(
        self, step: str, cmd: list[str], limit: float, ok_codes: tuple[int, ...] = (0,), env: dict | None = None
    ) -> bool:
        timeout = min(limit, self.left())
        rec: dict = {"command": " ".join(cmd[1:]).replace(str(ROOT) + "/", ""), "limit_s": round(timeout, 1)}
        self.steps[step] = rec
        if timeout < 5:
            rec.update(status="skipped", detail="the run's time budget is spent", seconds=0.0)
            self.write_log(step, rec, "")
            return False
        t0 = time.monotonic()
        try:
            env = {**os.environ, **env} if env else None
            r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=env)
            text, rc = r.stdout + r.stderr, r.returncode
            rec["status"] = "ok" if rc in ok_codes else "failed"
            rec["rc"] = rc
        except subprocess.TimeoutExpired as e:
            text = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
            text += (e.stderr or b"").decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
            rec["status"], rc = "timeout", None
        rec["seconds"] = round(time.monotonic() - t0, 2)
        if rec["status"] != "ok":
            lines = [x for x in text.strip().splitlines() if x.strip()]
            rec["detail"] = lines[-1][:300] if lines else rec["status"]
        rec["output"] = text
        self.write_log(step, rec, text)
        return rec["status"] == "ok"

    def write_log(self, step: str, rec: dict, text: str) -> None:
        with open(self.log, "a") as f:
            f.write(f"===== {step}: {rec.get('status')} in {rec.get('seconds')} s: {rec['command']}\n{text}\n")


def device_info(device: str) -> dict:
    import torch

    info = {
        "device": device,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
    }
    try:
        import transformers

        info["transformers"] = transformers.__version__
    except ImportError:
        info["transformers"] = None
    if device == "cuda":
        info["name"] = torch.cuda.get_device_name(0)
        info["cuda"] = torch.version.cuda
        info["memory_gib"] = round(torch.cuda.get_device_properties(0).total_memory / 2**30, 1)
    else:
        name = platform.processor() or "cpu"
        try:
            for line in Path("/proc/cpuinfo").read_text().splitlines():
                if line.startswith("model name"):
                    name = line.split(":", 1)[1].strip()
                    break
        except OSError:
            pass
        info["name"] = f"{name} ({os.cpu_count()} cores)"
    return info


def missing_dependencies() -> list[str]:
    """ppt's declared dependencies that this Python cannot find (after the kit's wheels)."""
    import importlib.metadata as md

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from gpu_kit import TOO_BIG, project_dependencies

    out = []
    for name in dict.fromkeys(project_dependencies() + list(TOO_BIG)):
        try:
            md.distribution(name)
        except md.PackageNotFoundError:
            out.append(name)
    return out


PYTEST_COUNTS = ("passed", "failed", "skipped", "deselected", "errors", "xfailed", "xpassed")


def pytest_counts(text: str) -> dict[str, int]:
    """{passed: 3, skipped: 1, ...} from pytest -q's last summary line (every key present)."""
    last = text.strip().splitlines()[-1] if text.strip() else ""
    counts = dict.fromkeys(PYTEST_COUNTS, 0)
    for n, what in re.findall(r"(\d+) (passed|failed|skipped|deselected|errors?|xfailed|xpassed)", last):
        counts["errors" if what.startswith("error") else what] += int(n)
    return counts


def skip_reasons(text: str) -> list[str]:
    """The distinct reasons of pytest -rs's SKIPPED lines."""
    found = re.findall(r"^SKIPPED \[\d+\] [^:]+(?::\d+)?: (.*)$", text, re.M)
    return list(dict.fromkeys(found))


def figure(fid: str, label: str, value, unit: str, goal_key: str | None = None, goal=None, goal_text=None, **extra):
    if goal_key is not None:
        goal, goal_text = GOALS[goal_key]
    return {"id": fid, "label": label, "value": value, "unit": unit, "goal": goal, "goal_text": goal_text, **extra}


def clean(x):
    """NaN and infinities as null (strict JSON)."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: clean(v) for k, v in x.items()}
    if isinstance(x, list):
        return [clean(v) for v in x]
    return x


# CUDA-only tests outside tests/gpu (a skipif without CUDA, not marked gpu): run by node id beside -m gpu
CUDA_ONLY = (
    "tests/mechanisms/test_rantext_samplers.py::test_cuda_sampler_matches_cpu",
    "tests/spaces/test_distances.py::test_cpu_and_gpu_agree",
)


def pytest_gpu(run: Runner, device: str) -> list[dict]:
    """pytest -m gpu (tests/gpu: every GPU sampler against its exact law on CUDA) and the CUDA-only tests
    elsewhere, with their passed/failed/skipped counts. On a CPU they are collected and skip, saying why."""
    base = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider"]
    counts = dict.fromkeys(PYTEST_COUNTS, 0)
    reasons: list[str] = []
    with tempfile.TemporaryDirectory(prefix="ppt-kit-pytest-") as tmp:
        env = {"PPT_TEST_CACHE": tmp}
        for step, argv in (("pytest_gpu", ["-m", "gpu", "tests/gpu"]), ("pytest_cuda_only", list(CUDA_ONLY))):
            run.process(step, base + argv, 300, env=env)
            rec = run.steps[step]
            got = pytest_counts(rec.get("output", ""))
            rec["counts"] = got
            counts = {k: counts[k] + got[k] for k in counts}
            reasons += skip_reasons(rec.get("output", ""))
    steps = [run.steps["pytest_gpu"], run.steps["pytest_cuda_only"]]
    value = ", ".join(
        f"{counts[k]} {k}" for k in ("passed", "failed", "skipped", "errors") if counts[k] or k != "errors"
    )
    if any(st["status"] not in ("ok", "failed") for st in steps):  # a timeout or the budget
        value += " (" + ", ".join(st["status"] for st in steps if st["status"] not in ("ok", "failed")) + ")"
    label = "pytest -m gpu (+ CUDA-only tests)"
    reasons = list(dict.fromkeys(reasons))
    return [figure("pytest_gpu", label, value, "", goal_text="all pass", counts=counts, skip_reasons=reasons)]


def rantext(run: Runner, sz: dict, device: str, w: int, rates: dict[int, float]) -> list[dict]:
    """RANTEXT end to end at ``w`` workers (at 1: also the table build and the mechanism alone)."""
    argv = ["--space", sz["space"], "--eps", "6", "--records", str(sz["records"]), "--repeat", str(sz["repeat"])]
    argv += ["--device", device, "--workers", str(w), "--skip-reference"]
    res = run.bench(f"rantext_w{w}", "sanitize_rantext.py", argv, 150)
    r = (res or {}).get("runs", [{}])[0]
    figs = []
    if w == 1:
        label = "RANTEXT tables build (sorted rows + runs)"
        figs.append(figure("rantext_table_build_s", label, r.get("precompute_s"), "s"))
    label = f"RANTEXT end to end, {w} worker{'s' if w > 1 else ''}"
    tokens = r.get("perturbed_tokens")
    figs.append(figure(f"rantext_e2e_w{w}", label, r.get("tokens_per_s"), "tok/s", "rantext_e2e", tokens=tokens))
    if w == 1:
        core = r.get("core_tokens_per_s")
        figs.append(figure("rantext_mechanism", "RANTEXT mechanism alone", core, "tok/s", "rantext_mechanism"))
    if r.get("tokens_per_s"):
        rates[w] = r["tokens_per_s"]
    if w > 1:
        scale = rates[w] / rates[1] if w in rates and 1 in rates else None
        label = f"RANTEXT {w} workers / 1 worker"
        figs.append(figure(f"rantext_scale_w{w}", label, scale, "x", goal=0.7 * w, goal_text=f">= {0.7 * w:.1f}x"))
    return figs


def token_mechanisms(run: Runner, sz: dict, device: str) -> list[dict]:
    """SanText+, CusText+ and TEM input tokens/s end to end."""
    argv = ["--mechs", "santext+", "custext+", "tem", "--throughput-only", "--skip-reference", "--synthetic-texts"]
    argv += ["--text-space", sz["space"], "--records", str(sz["token_records"]), "--repeat", str(sz["repeat"])]
    res = run.bench("token_mechanisms", "sanitize.py", argv + ["--eps", "6", "--device", device], 150)
    figs = []
    for name in ("santext+", "custext+", "tem"):
        rate = (res or {}).get("mechanisms", {}).get(name, {}).get("tokens_per_s")
        figs.append(figure(f"{name.replace('+', '_plus')}_tokens_per_s", f"{name} end to end", rate, "tok/s"))
    return figs


def cape(run: Runner, sz: dict, device: str, dtype: str) -> list[dict]:
    """Cape at 50-token prompts, a smollm2-shaped random-weights context model in ``dtype``."""
    short = {"float32": "fp32", "bfloat16": "bf16"}[dtype]
    argv = ["--random-weights", "--model", "smollm2", "--tokens", "50", "--repeats", "1", "--batching", "mixed"]
    argv += ["--skip-eps-table", "--dtype", dtype, "--device", device] + sz["cape"]
    res = run.bench(f"cape_{short}", "sanitize_cape.py", argv, 150)
    r = (res or {}).get("runs", [{}])[-1]
    shape = layers(res) if res else ""
    label = f"Cape {short}, 50-token prompts"
    return [
        figure(f"cape_{short}", label, r.get("prompts_per_s"), "prompts/s", "cape", shape=shape),
        figure(
            f"cape_{short}_outside_forward",
            f"Cape {short}: share outside the forward",
            r.get("outside_forward_share"),
            "share",
        ),
    ]


def extract(run: Runner, sz: dict, device: str, compiled: bool = False) -> list[dict]:
    """Batched extraction with a smollm2-shaped random-weights model: generated tokens/s (``compiled``: the
    compiled one-token step, torch.compile with CUDA graphs; a no-op off CUDA)."""
    argv = ["--random-weights", "--model", "smollm2", "--batched-only", "--ignore-eos", "--device", device]
    step = "extract_compile" if compiled else "extract"
    res = run.bench(step, "extract.py", argv + sz["extract"] + (["--compile"] if compiled else []), 200)
    r = (res or {}).get("runs", {}).get("batched", {})
    shape = f"{layers(res)}, {res['dtype']}" if res else ""
    label = "extraction, generated" + (", --compile" if compiled else "")
    return [figure(step, label, r.get("tokens_per_s"), "tok/s", "extract", shape=shape)]


def serve(run: Runner, sz: dict, device: str, variant: str) -> list[dict]:
    """`ppt serve`'s throughput (bench/serve.py: serve's ModelService and transport, clients in another
    process) with a smollm2-shaped random-weights model: generated tokens/s, against extraction's goal (the
    issue states none for serve), and requests/s. ``variant``: "plain" (what serve runs), "compile"
    (LocalGenerator's compiled step, which serve has no option for) or "vllm" (--runtime vllm; skipped,
    with the reason, where vllm is not importable or there is no CUDA)."""
    argv = ["--random-weights", "--model", "smollm2", "--ignore-eos", "--device", device] + sz["serve"]
    argv += {"plain": [], "compile": ["--compile"], "vllm": ["--runtime", "vllm"]}[variant]
    step = "serve" if variant == "plain" else f"serve_{variant}"
    res = run.bench(step, "serve.py", argv, 240 if variant == "vllm" else 200)
    suffix = {"plain": "", "compile": ", --compile", "vllm": ", --runtime vllm"}[variant]
    if res and res.get("skipped"):
        run.steps[step]["detail"] = res["skipped"]
        value = f"skipped: {res['skipped']}"
        return [figure(step, f"ppt serve{suffix}", value, "", goal_text=GOALS["extract"][1] + " (extraction's)")]
    res = res or {}
    shape = f"{layers(res)}, {res['dtype']}, c{res['concurrency']}" if res.get("layers") else ""
    goal, goal_text = GOALS["extract"]
    return [
        figure(
            step,
            f"ppt serve{suffix}, generated",
            res.get("tokens_per_s"),
            "tok/s",
            goal=goal,
            goal_text=goal_text + " (extraction's)",
            shape=shape,
        ),
        figure(f"{step}_requests", f"ppt serve{suffix}, requests", res.get("requests_per_s"), "req/s"),
    ]


def measure(run: Runner, device: str, quick: bool, workers: list[int]) -> list[dict]:
    """Every figure, in the table's order. Steps run so that each kind of figure comes before the extra
    worker counts (4, 8), which the budget cuts first."""
    sz = sizes(device, quick)
    rates: dict[int, float] = {}
    first, extra = [w for w in workers if w <= 2], [w for w in workers if w > 2]
    figs = pytest_gpu(run, device)
    for w in first:
        figs += rantext(run, sz, device, w, rates)
    tail = token_mechanisms(run, sz, device)
    for dtype in ["float32"] + (["bfloat16"] if device == "cuda" else []):
        tail += cape(run, sz, device, dtype)
    tail += extract(run, sz, device)
    tail += extract(run, sz, device, compiled=True)
    for variant in ("plain", "compile", "vllm"):
        tail += serve(run, sz, device, variant)
    for w in extra:
        figs += rantext(run, sz, device, w, rates)
    return figs + tail


def layers(res: dict) -> str:
    n = res["layers"]
    return f"{n} layer{'s' if n != 1 else ''}"


def fmt(v, unit: str) -> str:
    if v is None:
        return "-"
    if isinstance(v, str):
        return v
    if unit == "s":
        return f"{v:.2f} s"
    if unit == "x":
        return f"{v:.2f}x"
    if unit == "share":
        return f"{100 * v:.0f}%"
    return f"{v:,.0f} {unit}" if v >= 100 else f"{v:,.2f} {unit}"


def status(f: dict, device: str) -> str:
    if f["value"] is None:
        return "missing"
    if "counts" in f:
        c = f["counts"]
        if device != "cuda":
            return "(skipped: no CUDA)" if not (c["passed"] or c["failed"] or c["errors"]) else ""
        return "met" if c["passed"] and not (c["failed"] or c["errors"]) else "below"
    if f["goal"] is None or isinstance(f["value"], str):
        return ""
    if device != "cuda":
        return "(goal is for a GPU)"
    return "met" if f["value"] >= f["goal"] else "below"


def table(result: dict) -> str:
    d = result["device"]
    mode = "quick" if result["quick"] else "full"
    lines = [f"ppt GPU kit: {d['name']} [{d['device']}], {mode}, {result['wall_s']:.1f} s wall"]
    lines.append(f"{'figure':<58} {'value':>32}  {'goal':<32} status")
    for f in result["figures"]:
        extra = f" ({f['shape']})" if f.get("shape") else ""
        lines.append(
            f"{f['label'] + extra:<58} {fmt(f['value'], f['unit']):>32}  {f['goal_text'] or '':<32} {status(f, d['device'])}"
        )
    bad = [
        f"{k}: {s['status']} ({s.get('detail', '')})"
        for k, s in result["steps"].items()
        if s["status"] not in ("ok", "skipped")
    ]
    if bad:
        lines.append("steps not ok: " + "; ".join(bad))
    if result["missing_dependencies"]:
        lines.append("missing dependencies: " + ", ".join(result["missing_dependencies"]))
    return "\n".join(lines)


def run(args) -> int:
    import torch

    t0 = time.monotonic()
    kit = Path(args.kit).resolve()
    out = Path(args.out or kit).resolve()
    out.mkdir(parents=True, exist_ok=True)
    device = args.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: torch sees no CUDA device")
    log = out / "run.log"
    log.write_text("")
    budget = args.budget or (240.0 if args.quick else 480.0)
    runner = Runner(budget, log)
    workers = [int(w) for w in args.workers.split(",")] if args.workers else sizes(device, args.quick)["workers"]
    if 1 not in workers:
        workers = [1, *workers]
    manifest_path = kit / "MANIFEST.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
    figs = measure(runner, device, args.quick, workers)
    result = {
        "quick": args.quick,
        "device": device_info(device),
        "kit": {k: manifest.get(k) for k in ("created", "commit", "from_env", "total_bytes", "wheels")},
        "missing_dependencies": missing_dependencies(),
        "budget_s": budget,
        "figures": figs,
        "steps": {k: {kk: vv for kk, vv in v.items() if kk != "output"} for k, v in runner.steps.items()},
    }
    result["wall_s"] = round(time.monotonic() - t0, 1)
    result = clean(result)
    (out / "results.json").write_text(json.dumps(result, indent=1) + "\n")
    print(table(result))
    print(f"wrote {out / 'results.json'} and {log}")
    failed = [k for k, s in result["steps"].items() if s["status"] not in ("ok", "skipped")]
    return 1 if failed or any(f["value"] is None for f in figs) else 0
