"""`ppt extract` (InferDPT's extraction module): library on a tiny random Llama, the CLI as a process,
and the real smollm2 pipeline under the integration mark."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from ppt.io import Record, RecordError  # noqa: E402
from ppt.lm.generate import LocalGenerator, SamplingParams  # noqa: E402
from ppt.lm.templates import EXTRACT_TEMPLATE  # noqa: E402
from ppt.stages.extract import Extractor  # noqa: E402
from tests.helpers import PPT, shell_env  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def rec(i: int, **data) -> Record:
    data = {
        "id": f"d{i}",
        "text": f"perturbed {i}",
        "raw": f"The clinic is open on day {i}.",
        "generation": f"A patient reports pain after running {i} times.",
        **data,
    }
    return Record(line_no=i + 1, id=data["id"], data=data, text=data["text"])


@pytest.fixture(scope="module")
def gen(tiny_lm):
    return LocalGenerator.load(str(tiny_lm), device="cpu", batch_size=4)


def test_paper_prompt_filled_from_raw_and_generation(gen):
    ex = Extractor(gen, raw_field="raw", generation_field="generation")
    (msg,) = ex.prompt(rec(1).data)
    assert msg["role"] == "user"
    assert msg["content"] == EXTRACT_TEMPLATE.format(
        raw="The clinic is open on day 1.", generation="A patient reports pain after running 1 times."
    )
    assert 'Use the "Perturbed Generation" as your primary writing material' in msg["content"]
    assert msg["content"].endswith('- "Extended Text":')
    plain = Extractor(
        gen, raw_field="doc", generation_field="out", chat=False, template="Doc: {doc} | Gen: {out} | Next:"
    )
    assert plain.prompt({"doc": "a", "out": "b"}) == "Doc: a | Gen: b | Next:"


def test_outputs_stamp_and_errors(gen):
    params = SamplingParams(max_new_tokens=5)
    ex = Extractor(gen, params=params)
    recs = [rec(0), rec(1, raw=None), rec(2, extracted="already"), rec(3)]
    del recs[1].data["raw"]
    out = ex.process(recs)
    assert isinstance(out[1], RecordError) and out[1].type == "missing_field"
    assert "--keep-original raw" in out[1].message
    assert isinstance(out[2], RecordError) and out[2].type == "field_conflict"
    for o, r in ((out[0], recs[0]), (out[3], recs[3])):
        assert isinstance(o["extracted"], str)
        assert o["raw"] == r.data["raw"] and o["generation"] == r.data["generation"]
        block = o["ppt"]["extract"]
        assert block["model"] == str(gen.name) and block["device"] == "cpu" and block["chat"] is True
        assert block["template"]["name"] == "paper-extraction" and block["template"]["fields"] == ["raw", "generation"]
        assert block["params"] == {"max_new_tokens": 5, "temperature": 0.0, "top_p": 1.0, "stop": []}
        assert block["seeded"] is False and "seed" not in block and block["finish_reason"] in ("stop", "length")
        assert 1 <= block["usage"]["completion_tokens"] <= 5 and block["usage"]["prompt_tokens"] > 50


@pytest.mark.slow(reason="extraction generated twice with the tiny LM (batched and one by one)")
def test_batched_equals_sequential_and_seeds_follow_ids(gen):
    recs = [rec(i, raw="word " * (3 * i + 1)) for i in range(5)]  # very different prompt lengths
    greedy = SamplingParams(max_new_tokens=6)
    seq = LocalGenerator(gen.model, gen.tokenizer, batch_size=1)
    a = [o["extracted"] for o in Extractor(gen, params=greedy).process(recs)]
    b = [o["extracted"] for o in Extractor(seq, params=greedy).process(recs)]
    assert a == b
    sampled = SamplingParams(max_new_tokens=6, temperature=1.0)
    c = Extractor(gen, params=sampled, seed=5).process(recs)
    d = Extractor(seq, params=sampled, seed=5).process(list(reversed(recs)))
    assert [o["extracted"] for o in c] == [o["extracted"] for o in reversed(d)]
    assert c[0]["ppt"]["extract"]["seeded"] is True and "seed" not in c[0]["ppt"]["extract"]


@pytest.mark.slow(reason="a real ppt extract process loading the tiny LM")
def test_cli_process(tiny_lm, tmp_path):
    lines = [json.dumps(rec(i).data) for i in range(3)]
    lines.insert(1, json.dumps({"id": "no-raw", "generation": "x"}))
    r = subprocess.run(
        [
            *PPT,
            "extract",
            "--model",
            str(tiny_lm),
            "--device",
            "cpu",
            "--max-new-tokens",
            "4",
            "--on-error",
            "record",
            "--batch-size",
            "2",
        ],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert r.returncode == 1, r.stderr
    out = [json.loads(x) for x in r.stdout.splitlines()]
    assert [o["id"] for o in out] == ["d0", "no-raw", "d1", "d2"]
    assert out[1]["error"]["type"] == "missing_field" and "extracted" not in out[1]
    assert all("extracted" in o and o["ppt"]["extract"]["usage"]["completion_tokens"] <= 4 for o in out[::2])
    assert "clinic" not in r.stderr and "patient" not in r.stderr  # no record text in logs
    assert "ppt: extract: 3 ok, 1 failed" in r.stderr


def test_help_shows_examples():
    r = subprocess.run(
        [*PPT, "extract", "--help"], capture_output=True, text=True, timeout=60, env={**os.environ, "COLUMNS": "200"}
    )
    assert r.returncode == 0 and "ppt extract --model smollm2 --raw-field raw" in r.stdout


# ---------------------------------------------------------------------------------------- integration


@pytest.mark.integration
def test_smollm2_extracts_text(tmp_path):
    recs = [
        rec(
            0,
            raw="The patient, a 54 year old teacher, reports chest pain after running.",
            generation="Chest pain after exercise can point to a heart problem; a doctor should order an ECG.",
        ).data
    ]
    r = subprocess.run(
        [*PPT, "extract", "--model", "smollm2", "--max-new-tokens", "24"],
        input=json.dumps(recs[0]) + "\n",
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    (o,) = [json.loads(x) for x in r.stdout.splitlines()]
    assert o["extracted"].strip() and o["ppt"]["extract"]["chat"] is True
    assert o["ppt"]["extract"]["model"] == "smollm2"


@pytest.mark.slow(reason="examples/inferdpt.sh end to end with the real smollm2")
def test_example_pipeline_script(tmp_path):
    """The issue's "done means": examples/inferdpt.sh runs in CI (real smollm2; ~1-2 minutes)."""
    r = subprocess.run(
        ["bash", str(ROOT / "examples" / "inferdpt.sh"), str(tmp_path / "final.jsonl")],
        capture_output=True,
        text=True,
        timeout=1800,
        cwd=ROOT,
        env=shell_env(),
    )
    assert r.returncode == 0, r.stderr[-3000:]
    out = [json.loads(x) for x in (tmp_path / "final.jsonl").read_text().splitlines()]
    ids = [json.loads(x)["id"] for x in (ROOT / "examples" / "prompts.jsonl").read_text().splitlines()]
    assert [o["id"] for o in out] == ids
    for o in out:
        assert set(o["ppt"]) >= {"sanitize", "query", "extract"}
        assert o["extracted"].strip() and o["generation"].strip() and o["raw"] != o["text"]


def test_resume_skips_what_was_extracted_from_the_same_prompt(gen, tmp_path):
    """issue 26: `ppt extract --resume FILE`: a rerun emits the journaled extractions (no generation) for the
    records whose prompt and settings are unchanged, and generates again for a record whose input changed."""
    from ppt.remote.journal import Journal
    from ppt.stages.extract import Extractor

    path = str(tmp_path / "j.jsonl")
    recs = [rec(i) for i in range(3)]
    j = Journal(path, "id", "extracted")
    first = Extractor(gen, params=SamplingParams(max_new_tokens=4), journal=j)(recs)
    j.close()
    calls = []
    real = gen.generate
    gen.generate = lambda prompts, *a, **k: calls.append(len(prompts)) or real(prompts, *a, **k)
    try:
        changed = [recs[0], recs[1], Record(line_no=3, id="d2", data={**recs[2].data, "raw": "another doc"}, text="x")]
        j = Journal(path, "id", "extracted")
        ex = Extractor(gen, params=SamplingParams(max_new_tokens=4), journal=j)
        again = ex(changed)
        j.close()
    finally:
        gen.generate = real
    assert again[:2] == first[:2] and ex.resumed == 2 and calls == [1]  # only the changed record is generated
    assert again[2]["raw"] == "another doc"


def test_cli_resume_refuses_the_output_file_as_journal(tiny_lm, tmp_path):
    from tests.helpers import ppt

    j = tmp_path / "j.jsonl"
    r = ppt("extract", "--model", str(tiny_lm), "--resume", str(j), "-o", str(j), stdin="")
    assert r.returncode == 2 and "same file" in r.stderr
