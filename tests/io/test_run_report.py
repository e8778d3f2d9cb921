"""Run reports (ppt.io.run_report, issue 26): what run_stream tells the collector, the figures, the file's
mode, and that no record text reaches the report unless a sample was asked for."""

from __future__ import annotations

import json
import os
import stat

import pytest

from ppt.io import PptError, RecordError
from ppt.io.report_html import render_html
from ppt.io.run_report import active, collecting, histogram, load_report
from ppt.io.run_stats import Distribution
from tests.io.helpers import jl, run

SECRET = "Quux-Secretname lives at 12 Zanzibar Road"


def stamped(batch):
    """A stand-in for sanitize: a ppt.sanitize stamp whose figures follow the record's number."""
    out = []
    for r in batch:
        if r.data.get("fail"):
            out.append(RecordError("sanitize_failed", "no"))
            continue
        n = r.data["n"]
        block = {
            "signature": "fake|eps:2",
            "privacy": {
                "proven": {"eps": 2.0 * n, "tokens": n, "delta": 0.0},
                "conditional": [{"given": "a list", "eps_given": 3.0 * n, "tokens": n}],
                "unprotected_by_policy": ["stopwords"],
            },
            "text_field": "text",
            "keep_original": "raw",
            "alignment_field": "al",
            "diagnostics_field": "diag",
        }
        out.append(
            {
                **r.data,
                "text": "x " * n,
                "raw": r.text,
                "al": [[5, 6, 0, 1], [7, 7, 2, 3]],
                "diag": {"accounting": {"n_tokens": n + 1, "kept": {"punct": 1}, "dropped": {"oov": 2}}},
                "ppt": {"sanitize": block, "other": {}},
            }
        )
    return out


def records(n=6):
    return [{"id": f"r{i}", "text": f"{SECRET} number {i}", "n": i + 1} for i in range(n)]


def test_histogram_and_distribution():
    assert histogram([3.0, 3.0]) == {"edges": [3, 3], "counts": [2]}
    h = histogram([float(v) for v in range(1, 101)])  # sqrt(n) bins of whole numbers: [1, 11), [11, 21), ...
    assert h["counts"] == [10] * 10 and h["edges"][0] == 1 and h["edges"][-1] == 101
    h = histogram([float(v) for v in range(1, 1001)])
    assert len(h["counts"]) == 20 and sum(h["counts"]) == 1000
    h = histogram([0.5, 0.7, 1.9, 2.0])
    assert sum(h["counts"]) == 4 and h["edges"][0] == 0.5 and h["edges"][-1] == 2
    d = Distribution()
    for v in [1, 2, 3, None, "inf", float("inf"), True]:
        d.add(v)
    out = d.to_dict()
    assert (out["n"], out["none"], out["inf"], out["min"], out["median"], out["max"]) == (3, 1, 2, 1, 2, 3)
    assert Distribution().to_dict() == {"n": 0, "none": 0, "inf": 0}


def test_run_stream_reports_counts_stamps_and_no_text(tmp_path):
    path = tmp_path / "run.json"
    data = [*records(), {"id": "bad", "text": "x", "n": 1, "fail": True}]
    with collecting(str(path)) as collector:
        assert active() is collector
        code, out, err = run(jl(*data) + b"not json\n", stamped, on_error="record")
    assert active() is None
    assert code == 1 and len(out) == 8
    rep = load_report(str(path))
    c = rep["counts"]
    assert (c["read"], c["ok"], c["failed"], c["recorded"], c["skipped"]) == (8, 6, 2, 2, 0)
    assert c["by_error"] == {"sanitize_failed": 1, "malformed_json": 1} and c["first_failed_lines"] == [7, 8]
    assert rep["command"] == "test" and rep["exit_code"] == 1 and rep["stamps"] == {"sanitize": 6, "other": 6}
    assert rep["versions"]["ppt"] and rep["versions"]["python"]
    assert rep["elapsed_s"] >= 0 and rep["total_s"] >= rep["elapsed_s"]
    san = rep["sanitize"]
    assert san["signatures"] == {"fake|eps:2": 6} and san["unprotected_by_policy"] == {"stopwords": 6}
    proven = san["eps"]["proven"]
    assert (proven["n"], proven["min"], proven["median"], proven["max"]) == (6, 2, 7, 12)
    assert sum(proven["histogram"]["counts"]) == 6
    assert san["eps"]["conditional"]["a list"]["max"] == 18 and san["tokens"]["median"] == 3.5
    # --diagnostics sums: local only, so the file is 0600
    assert rep["diagnostics"]["kept"] == {"punct": 6} and rep["diagnostics"]["dropped"] == {"oov": 12}
    assert rep["local_only"] is True and rep["local_only_reasons"] == ["diagnostics"]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    text = path.read_text()
    assert "Quux" not in text and "Zanzibar" not in text and '"r1"' not in text and "sample" not in rep


def test_sample_holds_text_and_spans_and_is_private(tmp_path):
    path = tmp_path / "run.json"
    path.write_text("{}")
    os.chmod(path, 0o644)  # an existing readable file is narrowed, not kept 0644
    with collecting(str(path)) as collector:
        collector.keep_sample(2, locate=lambda text, rows: [(0, 4), None])
        run(jl(*records()), stamped)
    rep = json.loads(path.read_text())
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert rep["local_only_reasons"] == ["diagnostics", "sample"]
    [a, b] = rep["sample"]["records"]
    assert a["id"] == "r0" and SECRET in a["original"] and a["sanitized"] == "x "
    assert a["spans"] == [
        {"sanitized": [0, 1], "original": [0, 4], "changed": True},
        {"sanitized": None, "original": None, "changed": False},  # beyond the text: dropped, not trusted
    ]
    page = render_html(rep)
    assert '<mark class="chg" data-k="1"' in page and "Local only" in page and "Quux" in page


def test_no_report_without_a_finished_run(tmp_path):
    path = tmp_path / "run.json"
    with pytest.raises(KeyboardInterrupt), collecting(str(path)):
        raise KeyboardInterrupt
    assert not path.exists()
    with pytest.raises(PptError) as e, collecting("-"):
        pass
    assert e.value.exit_code == 2
    out = tmp_path / "out.jsonl"
    with pytest.raises(PptError) as e, collecting(str(out)):
        run(jl(*records(1)), stamped, output=str(out))
    assert "same file as --output" in e.value.message and not out.exists()


def test_load_report_refuses_other_files(tmp_path):
    for content, code in [("not json", 65), ('{"a": 1}', 65), ('{"ppt_report": 99}', 65)]:
        p = tmp_path / "x.json"
        p.write_text(content)
        with pytest.raises(PptError) as e:
            load_report(str(p))
        assert e.value.exit_code == code
    with pytest.raises(PptError) as e:
        load_report(str(tmp_path / "missing.json"))
    assert e.value.exit_code == 66


def test_html_escapes_what_the_report_holds():
    rep = {
        "ppt_report": 1,
        "command": "<script>alert(1)</script>",
        "counts": {"read": 1, "ok": 1, "failed": 0, "by_error": {"<b>x</b>": 1}},
        "sanitize": {"signatures": {"<i>sig</i>": 1}, "eps": {}, "tokens": {}},
        "run": {"input": "<a>"},
    }
    page = render_html(rep)
    assert "<script>" not in page and "<b>x</b>" not in page and "<i>sig</i>" not in page and "<a>" not in page
    assert "&lt;script&gt;" in page
