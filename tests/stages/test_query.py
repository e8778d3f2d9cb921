"""`ppt query` as a real process against a real loopback HTTP server (127.0.0.1, ephemeral ports):
privacy rules, order under concurrency, retries on injected 429/500/drops/slowness, exit codes, keys,
dry runs, and a kill-and-resume run that ends with every record answered exactly once."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

pytest.importorskip("httpx")

from ppt.lm.templates import QUERY_TEMPLATE  # noqa: E402
from ppt.testing import EchoService, Fault, FaultPlan, loopback  # noqa: E402
from tests.helpers import PPT, ppt  # noqa: E402

SECRET_RAW = "RAW-SECRET-Emma-Springfield"
SECRET_OTHER = "OTHER-SECRET-account-4417"
STAMP = {"sanitize": {"mechanism": "rantext", "eps": 6.0, "keep_original": "raw", "alignment_field": "ppt_alignment"}}


def records(n: int, stamped: bool = True, **extra) -> list[dict]:
    out = []
    for i in range(n):
        r = {
            "id": f"r{i}",
            "text": f"perturbed words number {i} here",
            "raw": f"{SECRET_RAW} {i}",
            "note": SECRET_OTHER,
            **extra,
        }
        if stamped:
            r["ppt"] = json.loads(json.dumps(STAMP))
        out.append(r)
    return out


def jsonl(recs: list[dict]) -> str:
    return "".join(json.dumps(r) + "\n" for r in recs)


def ppt_query(
    url: str | None, args: list[str], recs: list[dict] | str, *, env: dict | None = None, timeout: float = 60
) -> subprocess.CompletedProcess:
    data = recs if isinstance(recs, str) else jsonl(recs)
    model = [] if "--model" in args else ["--model", "m"]  # an option given twice is a usage error
    return ppt(
        "query",
        *model,
        *(["--base-url", url] if url else []),
        *args,
        stdin=data,
        timeout=timeout,
        env=env or {},
    )


def lines(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines()]  # every stdout line must parse


def assert_private_text_stays_local(result: subprocess.CompletedProcess, bodies: list[dict] = ()) -> None:
    for secret in (SECRET_RAW, SECRET_OTHER, "perturbed words"):
        assert secret not in result.stderr
    sent = json.dumps(list(bodies))
    assert SECRET_RAW not in sent and SECRET_OTHER not in sent


# ---------------------------------------------------------------------------------------- basics


def test_answers_in_order_under_concurrency_and_only_template_fields_are_sent():
    svc = EchoService(delay_s=0.01, jitter_s=0.1)  # later records often finish first
    recs = records(24)
    with loopback(svc) as (_, url):
        r = ppt_query(url, ["--concurrency", "8", "--batch-size", "10"], recs)
    assert r.returncode == 0, r.stderr
    out = lines(r.stdout)
    assert [o["id"] for o in out] == [x["id"] for x in recs]
    for o, rec in zip(out, recs):
        prompt = QUERY_TEMPLATE.format(text=rec["text"])
        assert o["generation"].startswith(f"echo {hashlib.sha256(prompt.encode()).hexdigest()[:8]}: ")
        assert o["raw"] == rec["raw"] and o["note"] == rec["note"]  # kept locally, passed through
        q = o["ppt"]["query"]
        assert o["ppt"]["sanitize"] == STAMP["sanitize"]
        assert q["backend"] == "http" and q["endpoint"] == "chat" and q["model"] == "m"
        assert q["template"]["name"] == "paper-continuation" and q["template"]["fields"] == ["text"]
        assert q["usage"]["total_tokens"] == q["usage"]["prompt_tokens"] + q["usage"]["completion_tokens"] > 0
        assert q["attempts"] == 1 and q["finish_reason"] == "stop"
    assert len(svc.bodies) == 24
    for body in svc.bodies:
        assert set(body) == {"model", "messages", "temperature", "max_tokens"}
        assert body["temperature"] == 0.5 and body["max_tokens"] == 100
        (msg,) = body["messages"]
        assert msg["content"].startswith("Your task is to extend Prefix Text.\n- Prefix Text: perturbed words")
    assert_private_text_stays_local(r, svc.bodies)
    assert "ppt: query: 24 answered" in r.stderr


def test_refuses_unsanitized_records_unless_allow_raw():
    svc = EchoService()
    recs = records(2) + records(1, stamped=False)
    recs[2]["id"] = "plain"
    with loopback(svc) as (_, url):
        r = ppt_query(url, ["--on-error", "record"], recs)
        assert r.returncode == 1
        out = lines(r.stdout)
        assert [o["id"] for o in out] == ["r0", "r1", "plain"]
        assert out[2]["error"]["type"] == "not_sanitized" and "generation" not in out[2]
        assert len(svc.bodies) == 2
        r = ppt_query(url, ["--allow-raw"], records(1, stamped=False))
        assert r.returncode == 0 and "--allow-raw" in r.stderr
        assert len(svc.bodies) == 3
    assert_private_text_stays_local(r, svc.bodies)


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--template", "Continue: {raw}"], "raw_field_in_template"),
        (["--template", "Continue: {text} {ppt_alignment}"], "raw_field_in_template"),
        (["--template", "{text} / {note}"], "unsanitized_field"),
        (["--template", "{text} {missing}", "--allow-raw"], "missing_field"),
    ],
)
def test_templates_may_only_name_sanitized_fields(args, error):
    svc = EchoService()
    with loopback(svc) as (_, url):
        r = ppt_query(url, [*args, "--on-error", "skip"], records(2))
    assert r.returncode == 1 and r.stdout == ""
    assert error in r.stderr and not svc.bodies
    assert_private_text_stays_local(r)


def test_custom_template_system_message_completions_and_extra_body(tmp_path):
    svc = EchoService()
    tpl = tmp_path / "t.txt"
    tpl.write_text("Q: {{literal}} {text}\n")
    with loopback(svc) as (_, url):
        r = ppt_query(
            url,
            [
                "--template",
                f"@{tpl}",
                "--endpoint",
                "completions",
                "--system",
                "Be brief.",
                "--stop",
                "\n\n",
                "--top-p",
                "0.9",
                "--extra-body",
                '{"presence_penalty": 0.5}',
                "--output-field",
                "answer",
                "--max-tokens",
                "7",
                "--temperature",
                "0",
            ],
            records(1),
        )
    assert r.returncode == 0, r.stderr
    (o,) = lines(r.stdout)
    (body,) = svc.bodies
    assert body["prompt"] == "Be brief.\n\nQ: {literal} perturbed words number 0 here"
    assert body["stop"] == ["\n\n"] and body["top_p"] == 0.9 and body["presence_penalty"] == 0.5
    assert body["max_tokens"] == 7 and body["temperature"] == 0
    assert o["answer"].startswith("echo ")
    assert o["ppt"]["query"]["params"]["extra_body"] == {"presence_penalty": 0.5}
    assert o["ppt"]["query"]["template"]["name"] == "custom"


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--extra-body", '{"messages": []}'], 2, "may not set messages"),
        (["--extra-body", "[1]"], 2, "JSON object"),
        (["--template", "{text"], 2, "bad placeholder"),
        (["--template", "no fields"], 2, "names no record field"),
        (["--seed", "1"], 2, "--backend local only"),
        (["--api-key-env", "sk-abc123-not-a-name"], 2, "NAME of an environment variable"),
        (["--api-key-env", "PPT_TEST_UNSET_KEY"], 78, "named by --api-key-env is not set"),
    ],
)
def test_bad_options_fail_before_reading_input(args, code, message):
    r = ppt_query("http://127.0.0.1:9/v1", args, "this is not json\n")
    assert r.returncode == code, r.stderr
    assert message in r.stderr and r.stdout == ""
    assert "sk-abc123" not in r.stderr


# ---------------------------------------------------------------------------------------- faults


def test_retries_429_500_dropped_and_slow_responses():
    svc = EchoService()
    plan = FaultPlan(
        [Fault(status=429, retry_after=0.3), Fault(status=500), Fault(drop=True), Fault(delay_s=1.5), Fault(status=503)]
    )
    t0 = time.monotonic()
    with loopback(svc, plan) as (_, url):
        r = ppt_query(url, ["--concurrency", "1", "--timeout", "0.5", "--retry-backoff", "0.01"], records(3))
    assert r.returncode == 0, r.stderr
    out = lines(r.stdout)
    assert [o["id"] for o in out] == ["r0", "r1", "r2"] and all("generation" in o for o in out)
    assert plan.injected == {"429": 1, "500": 1, "drop": 1, "delay": 1, "503": 1}
    assert out[0]["ppt"]["query"]["attempts"] == 6  # 429, 500, drop, timeout, 503, then answered
    assert time.monotonic() - t0 >= 0.3  # Retry-After was honoured
    assert "retried:" in r.stderr and "http_429 x1" in r.stderr and "dropped x1" in r.stderr
    assert_private_text_stays_local(r, svc.bodies)


def test_retries_exhausted_exit_75_keeps_earlier_output():
    svc = EchoService()
    plan = FaultPlan([None] * 2 + [Fault(status=503)] * 10)
    with loopback(svc, plan) as (_, url):
        r = ppt_query(
            url,
            ["--concurrency", "1", "--batch-size", "2", "--max-retries", "2", "--retry-backoff", "0.01"],
            records(4),
        )
    assert r.returncode == 75, r.stderr
    assert "retries exhausted" in r.stderr and "http_503" in r.stderr
    assert [o["id"] for o in lines(r.stdout)] == ["r0", "r1"]  # the first batch was written before the failure
    assert_private_text_stays_local(r)


def test_endpoint_down_exit_69():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again below: nothing listens there
    r = ppt_query(f"http://127.0.0.1:{port}/v1", ["--max-retries", "1", "--retry-backoff", "0.01"], records(2))
    assert r.returncode == 69 and "endpoint unavailable" in r.stderr and r.stdout == ""
    assert_private_text_stays_local(r)


def test_client_errors_are_per_record_and_auth_errors_are_fatal():
    svc = EchoService()
    with loopback(svc, FaultPlan([None, Fault(status=400)])) as (_, url):
        r = ppt_query(url, ["--concurrency", "1", "--on-error", "record"], records(3))
    assert r.returncode == 1
    out = lines(r.stdout)
    assert [("error" in o) for o in out] == [False, True, False]
    assert out[1]["error"]["type"] == "http_400" and "injected" in out[1]["error"]["message"]
    with loopback(svc, FaultPlan([Fault(status=401)])) as (_, url):
        r = ppt_query(url, ["--concurrency", "1"], records(2))
    assert r.returncode == 78 and "refused the credentials" in r.stderr
    assert_private_text_stays_local(r)


# ---------------------------------------------------------------------------------------- keys


def test_api_key_only_from_named_env_var_and_never_shown():
    key = "sk-test-DO-NOT-PRINT-0123456789"
    svc, plan = EchoService(), FaultPlan()
    with loopback(svc, plan) as (_, url):
        # a custom base URL never gets OPENAI_API_KEY by default
        r1 = ppt_query(url, [], records(1), env={"OPENAI_API_KEY": key})
        r2 = ppt_query(url, ["--api-key-env", "MY_PPT_KEY"], records(1), env={"MY_PPT_KEY": key})
    assert r1.returncode == 0 and r2.returncode == 0, r2.stderr
    assert "authorization" not in plan.headers[0]
    assert plan.headers[1]["authorization"] == f"Bearer {key}"
    for r in (r1, r2):
        assert key not in r.stdout and key not in r.stderr


def test_default_openai_url_requires_a_key_and_dry_run_does_not():
    env = {"OPENAI_API_KEY": "", "OPENAI_BASE_URL": ""}
    r = ppt_query(None, [], records(1), env=env)
    assert r.returncode == 78 and "OPENAI_API_KEY" in r.stderr
    r = ppt_query(None, ["--dry-run"], records(2), env=env)
    assert r.returncode == 0, r.stderr
    out = lines(r.stdout)
    assert [o["id"] for o in out] == ["r0", "r1"]
    assert out[0]["request"]["url"] == "https://api.openai.com/v1/chat/completions"
    assert out[0]["request"]["body"]["messages"][0]["content"].endswith(
        "number 0 here\n\n Provide only your Continuation.\n- Continuation:"
    )
    assert SECRET_RAW not in r.stdout and SECRET_OTHER not in r.stdout  # the request shows only what is sent


def test_dry_run_sends_nothing():
    svc = EchoService()
    with loopback(svc) as (_, url):
        r = ppt_query(url, ["--dry-run", "--api-key-env", "K"], records(3), env={"K": "sk-secret-zzz"})
    assert r.returncode == 0 and not svc.bodies
    assert len(lines(r.stdout)) == 3 and "sk-secret-zzz" not in r.stdout + r.stderr


# ---------------------------------------------------------------------------------------- resume


@pytest.mark.slow(reason="kills and resumes a real ppt query process")
def test_kill_and_resume_answers_every_record_exactly_once(tmp_path):
    n = 30
    recs = records(n)
    journal, out_file = tmp_path / "journal.jsonl", tmp_path / "out.jsonl"
    (tmp_path / "in.jsonl").write_text(jsonl(recs))
    args = [
        "--concurrency",
        "2",
        "--batch-size",
        "4",
        "--resume",
        str(journal),
        "-i",
        str(tmp_path / "in.jsonl"),
        "-o",
        str(out_file),
    ]
    svc = EchoService(delay_s=0.1)
    with loopback(svc) as (_, url):
        proc = subprocess.Popen(
            [*PPT, "query", "--model", "m", "--base-url", url, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            deadline = time.monotonic() + 60
            while not journal.exists() or journal.read_text().count("\n") < 8:
                assert proc.poll() is None, proc.communicate()
                assert time.monotonic() < deadline
                time.sleep(0.05)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.communicate(timeout=30)
        first = journal.read_text().count("\n")
        assert 8 <= first < n, "the kill should land mid-run"
        sent_before = len(svc.bodies)
        r = ppt_query(url, args, "")  # the same command again (input comes from -i)
    assert r.returncode == 0, r.stderr
    assert f"resuming: {first} answered" in r.stderr
    out = [json.loads(x) for x in out_file.read_text().splitlines()]
    assert [o["id"] for o in out] == [x["id"] for x in recs]  # complete and in input order
    assert all(o["generation"].startswith("echo ") for o in out)
    saved = [json.loads(x)["id"] for x in journal.read_text().splitlines()]
    assert sorted(saved) == sorted(x["id"] for x in recs)  # each id journaled exactly once
    # paid for nothing twice: only requests in flight at the kill can have been sent again
    assert len(svc.bodies) - sent_before == n - first and len(svc.bodies) <= n + 2


def test_resume_refuses_to_share_the_output_file(tmp_path):
    j = tmp_path / "j.jsonl"
    r = ppt_query("http://127.0.0.1:9/v1", ["--resume", str(j), "-o", str(j)], records(1))
    assert r.returncode == 2 and "same file" in r.stderr
    j.write_text("")
    with open(j, "a") as fh:
        r = subprocess.run(
            [*PPT, "query", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--resume", str(j)],
            input=jsonl(records(1)),
            stdout=fh,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    assert r.returncode == 2 and "redirected to the --resume journal" in r.stderr


# ---------------------------------------------------------------------------------------- local backend


@pytest.mark.slow(reason="generates with the tiny LM as the local backend")
def test_local_backend_batched_and_seeded(tiny_lm):
    recs = records(3)
    r = ppt_query(
        None,
        [
            "--backend",
            "local",
            "--model",
            str(tiny_lm),
            "--device",
            "cpu",
            "--max-tokens",
            "5",
            "--seed",
            "3",
            "--temperature",
            "1",
        ],
        recs,
        timeout=180,
    )
    assert r.returncode == 0, r.stderr
    out = lines(r.stdout)
    assert [o["id"] for o in out] == ["r0", "r1", "r2"]
    q = out[0]["ppt"]["query"]
    assert q["backend"] == "local" and q["seeded"] is True and "seed" not in q and q["device"] == "cpu"
    assert 1 <= q["usage"]["completion_tokens"] <= 5 and q["usage"]["prompt_tokens"] > 10
    assert_private_text_stays_local(r)


def test_help_shows_examples():
    r = subprocess.run(
        [*PPT, "query", "--help"], capture_output=True, text=True, timeout=60, env={**os.environ, "COLUMNS": "200"}
    )
    assert r.returncode == 0 and "ppt query --backend local --model smollm2" in r.stdout
    assert Path(__file__).parents[2].joinpath("examples", "prompts.jsonl").exists()
