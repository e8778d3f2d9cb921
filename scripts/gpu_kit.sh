#!/usr/bin/env bash
# The GPU kit: measure ppt's GPU figures on a machine with Python 3.12, torch, transformers and tiktoken but
# no network and none of ppt's other dependencies, from the source tree and one directory of <= 60 MiB.
#
#   scripts/gpu_kit.sh pack [--out DIR] [--quick] [--from-env] [--lm ALIAS]...        (here, with the network)
#       writes DIR (default gpu_kit/, git-ignored): wheels/ (ppt's dependencies that torch, transformers,
#       tiktoken and numpy do not bring, for CPython 3.12 manylinux x86_64; pyarrow and scipy are left out,
#       too big, and the GPU image has them), cache/ (the spaces, the cl100k tiktoken file, RANTEXT's
#       calibrated Z, CusText's groups; tables are rebuilt there), lm/ALIAS/ (config and tokenizer of each LM
#       alias, default smollm2; never weights) and MANIFEST.json (every file with its size and sha256).
#       Prints the total; fails over 60 MiB. Builds what is missing in your ppt cache first (the offline
#       models must be installed: ppt models install).
#       --quick     only what `run --quick` reads (the 2,000-token cl100k space instead of the 11,000 one)
#       --from-env  no wheels: `run` then relies on the packages installed where it runs (CI, tests; no network)
#   scripts/gpu_kit.sh run [--device auto|cpu|cuda] [--quick] [--kit DIR] [--out DIR] [--budget S] [--workers 1,2,4,8]
#       (there, in the source tree with the kit beside it) installs the kit's wheels that this Python lacks
#       into a temporary directory (pip --no-index --no-deps --target; PYTHONPATH), copies the kit's cache to
#       a temporary PPT_CACHE, then runs each measurement bounded in time (the whole run within --budget,
#       default 480 s, quick 240 s): pytest -m gpu tests/gpu and the CUDA-only tests (passed/failed/skipped;
#       on a CPU they skip, saying why), RANTEXT end to end at 1 and 2 workers (1, 2, 4 and 8 on CUDA) with the
#       table build and the mechanism alone, SanText+/CusText+/TEM tokens/s, Cape at 50-token prompts (fp32;
#       bf16 on CUDA), extraction with and without --compile, and `ppt serve` tokens/s and requests/s (plain,
#       compiled step, --runtime vllm when importable), all with a smollm2-shaped random-weights model.
#       Prints one table (each figure beside its issue-28 goal, the device's name) and writes results.json
#       and run.log to --out (default: the kit; $OUT when set). --quick: seconds-sized steps (CI on a CPU).
#   PYTHON=... picks the interpreter (default python3). Details: docs/gpu.md.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
py="${PYTHON:-python3}"
cmd="${1:-}"
[ $# -gt 0 ] && shift
case "$cmd" in
  pack)
    exec "$py" "$root/scripts/gpu_kit.py" pack "$@"
    ;;
  run)
    kit="$root/gpu_kit"
    out="${OUT:-}"
    args=()
    while [ $# -gt 0 ]; do
      case "$1" in
        --kit) kit="$2"; shift 2 ;;
        --kit=*) kit="${1#--kit=}"; shift ;;
        --out) out="$2"; shift 2 ;;
        --out=*) out="${1#--out=}"; shift ;;
        *) args+=("$1"); shift ;;
      esac
    done
    kit="$(cd "$kit" && pwd)"
    [ -f "$kit/MANIFEST.json" ] || { echo "gpu_kit.sh: $kit has no MANIFEST.json (run: scripts/gpu_kit.sh pack)" >&2; exit 2; }
    tmp="$(mktemp -d "${TMPDIR:-/tmp}/ppt-gpu-kit.XXXXXX")"
    trap 'rm -rf "$tmp"' EXIT
    mkdir -p "$tmp/site"
    mapfile -t need < <("$py" "$root/scripts/gpu_kit.py" missing-wheels "$kit")
    if [ "${#need[@]}" -gt 0 ]; then
      echo "installing ${need[*]} from $kit/wheels" >&2
      "$py" -m pip install -q --disable-pip-version-check --no-index --no-deps --no-compile \
        --find-links "$kit/wheels" --target "$tmp/site" "${need[@]}"
    fi
    cp -r "$kit/cache" "$tmp/cache"
    export PYTHONPATH="$tmp/site:$root${PYTHONPATH:+:$PYTHONPATH}" PPT_CACHE="$tmp/cache" PPT_LM_CONFIGS="$kit/lm"
    export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
    unset TIKTOKEN_CACHE_DIR
    "$py" "$root/scripts/gpu_kit.py" run --kit "$kit" ${out:+--out "$out"} "${args[@]}"
    ;;
  -h|--help|help)
    sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
    ;;
  *)
    echo "usage: scripts/gpu_kit.sh pack|run [options]   (scripts/gpu_kit.sh --help)" >&2
    exit 2
    ;;
esac
