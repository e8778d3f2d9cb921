"""The GPU kit's two halves (started by scripts/gpu_kit.sh, which documents the commands; docs/gpu.md).

pack (here, with the network): a directory of at most 60 MiB holding the wheels of ppt's dependencies that a
Python 3.12 with torch, transformers and tiktoken lacks, the small cached artifacts the benches read
(spaces, the tiktoken rank file, RANTEXT calibrations, CusText groups; never tables, which are rebuilt
there), the config and tokenizer of each LM alias (never weights) and MANIFEST.json.

run (there, from the source tree, after gpu_kit.sh installed the wheels and set PPT_CACHE, PPT_LM_CONFIGS
and PYTHONPATH): each measurement as its own bounded process, then one table on stdout and one JSON.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
LIMIT_MIB = 60
MIB = 1 << 20
# ppt's dependencies that the GPU machine brings (with their own dependencies): never packed
PRESENT = ("torch", "transformers", "tiktoken", "numpy")
# compiled dependencies too big for the kit (30-40 MB each); the GPU image has them (the device tool's
# KINDS.md lists both), and `run` reports any dependency it cannot find
TOO_BIG = ("pyarrow", "scipy")
PLATFORMS = ("manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_28_x86_64")
SPACES_FULL = ("cl100k-minilm", "glove-6b-50d")
SPACES_QUICK = ("cl100k-minilm:2000", "glove-6b-50d")
LMS = ("smollm2",)

# ------------------------------------------------------------------------------------------------ pack


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def closure(names: list[str]) -> dict[str, str]:
    """{canonical name: installed version} of ``names`` and everything they require here (Linux, 3.12)."""
    import importlib.metadata as md

    from packaging.requirements import Requirement

    env = {"extra": "", "python_version": "3.12", "sys_platform": "linux", "platform_system": "Linux"}
    env["platform_machine"] = "x86_64"
    seen: dict[str, str] = {}
    stack = list(names)
    while stack:
        name = stack.pop()
        if canonical(name) in seen:
            continue
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            seen[canonical(name)] = ""
            continue
        seen[canonical(name)] = dist.version
        for text in dist.requires or []:
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate(env):
                stack.append(req.name)
    return seen


def project_dependencies() -> list[str]:
    """The names in pyproject.toml's [project] dependencies."""
    text = (ROOT / "pyproject.toml").read_text()
    block = re.search(r"^dependencies = \[(.*?)^\]", text, re.S | re.M).group(1)
    return [re.match(r"[A-Za-z0-9_.-]+", s).group(0) for s in re.findall(r'"([^"]+)"', block)]


def wheel_list() -> tuple[dict[str, str], list[str]]:
    """({name: version to pack}, [names left out as too big]): ppt's dependencies (and theirs) that
    torch, transformers, tiktoken and numpy do not already bring, at the versions installed here."""
    deps = closure(project_dependencies())
    there = closure(list(PRESENT))
    want = {n: v for n, v in sorted(deps.items()) if n not in there}
    return {n: v for n, v in want.items() if n not in TOO_BIG}, sorted(n for n in want if n in TOO_BIG)


def download_wheels(wanted: dict[str, str], dest: Path, python_version: str = "3.12") -> None:
    dest.mkdir(parents=True)
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps"]
    cmd += ["--only-binary=:all:", "--python-version", python_version, "--implementation", "cp", "-d", str(dest)]
    for p in PLATFORMS:
        cmd += ["--platform", p]
    specs = [f"{n}=={v}" if v else n for n, v in wanted.items()]
    r = subprocess.run(cmd + specs, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"pip download failed (the network to PyPI is needed; or use --from-env):\n{r.stderr[-3000:]}")


def wheel_name(path: Path) -> str:
    return canonical(path.name.split("-")[0])


def warm_cache(spaces: tuple[str, ...]) -> list[Path]:
    """Build (where missing) and return the directories of the artifacts the benches read: the spaces,
    RANTEXT's calibrated Z at eps 6 on each cl100k space, CusText's groups on each GloVe space."""
    from ppt.mechanisms import get_mechanism
    from ppt.spaces import load_space

    arts: list[Path] = []
    for name in spaces:
        sp = load_space(name, device="cpu", quiet=True)
        arts.append(sp.artifact.path)
        if name.startswith("cl100k"):
            mech = get_mechanism("rantext", 6.0, space=sp, device="cpu", quiet=True)
            mech.z  # noqa: B018 - fits or loads the calibration
            arts.append(mech.calibration.artifact.path)
        else:
            mech = get_mechanism("custext+", 6.0, space=sp, device="cpu", quiet=True)
            mech.load_groups()
            arts.append(mech.groups_artifact.path)
    return arts


def pack(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    sys.path.insert(0, str(BENCH))
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from random_lm import save

    from ppt.cache import Cache
    from ppt.models.tiktoken_offline import ensure_rank_file

    out = Path(args.out).resolve()
    if out.exists():
        if not (out / "MANIFEST.json").is_file() and any(out.iterdir()):
            raise SystemExit(f"{out} exists and is not a kit (no MANIFEST.json): not overwritten")
        shutil.rmtree(out)
    out.mkdir(parents=True)
    wheels, too_big = ({}, []) if args.from_env else wheel_list()
    if wheels:
        print(f"downloading {len(wheels)} wheels: {', '.join(wheels)}", file=sys.stderr)
        download_wheels(wheels, out / "wheels", args.python_version)
    spaces = SPACES_QUICK if args.quick else tuple(dict.fromkeys(SPACES_FULL + SPACES_QUICK))
    print(f"caching spaces {', '.join(spaces)} (built where missing)", file=sys.stderr)
    cache = Cache()
    for src in warm_cache(spaces):
        rel = src.relative_to(cache.root)
        shutil.copytree(src, out / "cache" / rel)
    rank = ensure_rank_file("cl100k_base")
    (out / "cache" / "tiktoken").mkdir(parents=True)
    shutil.copy2(rank, out / "cache" / "tiktoken" / rank.name)
    for alias in args.lm or LMS:
        print(f"saving {alias}'s config and tokenizer (no weights)", file=sys.stderr)
        save(alias, out / "lm" / alias)
    files = sorted(p for p in out.rglob("*") if p.is_file())
    total = sum(p.stat().st_size for p in files)
    sections: dict[str, int] = {}
    for p in files:
        top = p.relative_to(out).parts[0]
        sections[top] = sections.get(top, 0) + p.stat().st_size
    manifest = {
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "commit": git_commit(),
        "from_env": args.from_env,
        "python_version": None if args.from_env else args.python_version,
        "quick_only": args.quick,
        "wheels": {wheel_name(p): p.name for p in sorted((out / "wheels").glob("*.whl"))},
        "not_packed": {n: "compiled and 30-40 MB: expected on the GPU machine" for n in too_big},
        "spaces": list(spaces),
        "lm": list(args.lm or LMS),
        "sections_bytes": sections,
        "total_bytes": total,
        "limit_bytes": LIMIT_MIB * MIB,
        "files": [
            {"path": p.relative_to(out).as_posix(), "bytes": p.stat().st_size, "sha256": sha256(p)} for p in files
        ],
    }
    (out / "MANIFEST.json").write_text(json.dumps(manifest, indent=1) + "\n")
    total += (out / "MANIFEST.json").stat().st_size
    for name, size in sections.items():
        print(f"  {name:<8} {size / MIB:7.2f} MiB")
    print(f"packed {out}: {total / MIB:.2f} MiB in {len(files) + 1} files ({time.perf_counter() - t0:.0f} s)")
    if total > LIMIT_MIB * MIB:
        print(f"error: the kit is over {LIMIT_MIB} MiB", file=sys.stderr)
        return 1
    return 0


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def git_commit() -> str | None:
    r = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    return r.stdout.strip() or None


def missing_wheels(kit: Path) -> int:
    """Print the names of the kit's wheels whose distribution this Python lacks (what run installs)."""
    import importlib.metadata as md

    manifest = json.loads((kit / "MANIFEST.json").read_text())
    for name in manifest.get("wheels", {}):
        try:
            md.distribution(name)
        except md.PackageNotFoundError:
            print(name)
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pack")
    p.add_argument("--out", default=str(ROOT / "gpu_kit"))
    p.add_argument("--from-env", action="store_true", help="no wheels: rely on the packages installed where it runs")
    p.add_argument("--quick", action="store_true", help="only what `run --quick` reads (the small spaces)")
    p.add_argument("--python-version", default="3.12", help="the CPython whose wheels to fetch (default 3.12)")
    p.add_argument("--lm", action="append", help=f"an LM alias whose config and tokenizer to pack (default {LMS})")
    r = sub.add_parser("run")
    r.add_argument("--kit", default=str(ROOT / "gpu_kit"))
    r.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    r.add_argument("--quick", action="store_true")
    r.add_argument("--out", default=None, help="directory for results.json and run.log (default: the kit)")
    r.add_argument("--budget", type=float, default=None, help="seconds for all steps (default 480; quick 240)")
    r.add_argument("--workers", default=None, help="RANTEXT worker counts, e.g. 1,2,4,8 (default: 1,2)")
    m = sub.add_parser("missing-wheels")
    m.add_argument("kit")
    a = ap.parse_args()
    if a.cmd == "pack":
        raise SystemExit(pack(a))
    if a.cmd == "missing-wheels":
        raise SystemExit(missing_wheels(Path(a.kit)))
    from gpu_kit_run import run  # noqa: E402

    raise SystemExit(run(a))
