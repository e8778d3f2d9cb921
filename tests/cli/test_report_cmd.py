"""Runs that report themselves (issue 26): `--report run.json` on the stream commands, `ppt report run.json -o
report.html`, and the page as headless Chromium renders it (its DOM read back, a screenshot's pixels).

The Chromium tests skip where no `chromium` is on PATH; CI installs Debian's (.ci/run)."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess

import pytest

from tests.helpers import ppt

SECRET = "Zanzibar Quux-Secretname"
SPACE = ["-m", "custext+", "-e", "6", "--space", "glove-6b-50d:2000"]


def lines(n=6):
    good = [
        json.dumps({"id": f"r{i}", "text": f"My friend {SECRET} works as a nurse near the river, day {i}."})
        for i in range(n)
    ]
    return "\n".join([*good, '{"id": "no-text"}', "not json"]) + "\n"


def sanitize_with_report(tmp_path, *extra, report="run.json"):
    path = tmp_path / report
    out = tmp_path / "out.jsonl"
    r = ppt("sanitize", *SPACE, "--on-error", "record", "-o", str(out), "--report", str(path), *extra, stdin=lines())
    assert r.returncode == 1, r.stderr  # two bad lines, recorded
    return path, json.loads(path.read_text())


def test_sanitize_report_counts_eps_and_no_text(tmp_path):
    path, rep = sanitize_with_report(tmp_path)
    assert rep["command"] == "sanitize" and rep["exit_code"] == 1 and rep["ppt_report"] == 1
    c = rep["counts"]
    assert (c["read"], c["ok"], c["failed"], c["recorded"]) == (8, 6, 2, 2)
    assert c["by_error"] == {"missing_text_field": 1, "malformed_json": 1} and c["first_failed_lines"] == [7, 8]
    assert set(rep["versions"]) == {"ppt", "python", "torch"}
    assert rep["signature"]["stage"] == "sanitize" and rep["signature"]["signature"].startswith("custext+|eps:6|")
    assert rep["elapsed_s"] >= 0 and rep["total_s"] >= rep["elapsed_s"] and rep["run"]["on_error"] == "record"
    san = rep["sanitize"]
    [sig] = san["signatures"]
    assert sig.startswith("custext+|eps:6|space:glove-6b-50d:2000#") and san["signatures"][sig] == 6
    assert san["eps"]["proven"]["inf"] == 6  # CusText+ proves nothing beyond its groups: stated, not plotted
    [cond] = san["eps"]["conditional"].values()
    assert cond["n"] == 6 and sum(cond["histogram"]["counts"]) == 6 and cond["min"] <= cond["median"] <= cond["max"]
    assert san["tokens"]["n"] == 6 and san["tokens"]["min"] > 0
    # public figures only: no text, no id, not local, the file's mode is the umask's
    text = path.read_text()
    assert SECRET.split()[0] not in text and "nurse" not in text and '"r1"' not in text
    assert rep["local_only"] is False and "sample" not in rep and "diagnostics" not in rep
    mask = os.umask(0o022)
    os.umask(mask)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o666 & ~mask


def test_report_sample_needs_report_and_keep_original_and_local_engine(tmp_path):
    r = ppt("sanitize", *SPACE, "--report-sample", "2", "--keep-original", "raw", stdin=lines(1))
    assert r.returncode == 2 and "--report-sample needs --report" in r.stderr
    r = ppt("sanitize", *SPACE, "--report", str(tmp_path / "r.json"), "--report-sample", "2", stdin=lines(1))
    assert r.returncode == 2 and "needs --keep-original" in r.stderr and not (tmp_path / "r.json").exists()
    r = ppt("sanitize", *SPACE, "--report", "-", stdin=lines(1))
    assert r.returncode == 2 and "--report takes a file name" in r.stderr
    r = ppt("sanitize", *SPACE, "--report", str(tmp_path / "r.json"), "--engine", "ray", stdin=lines(1))
    assert r.returncode == 2 and "--report is for --engine local" in r.stderr


def test_report_on_another_stream_command(tmp_path):
    """--report comes from the kit: every stream command that runs run_stream reports the same way."""
    path = tmp_path / "restore.json"
    recs = [
        {"id": 1, "generation": "Hello PERSON_1", "map": [{"surrogate": "PERSON_1", "original": SECRET}]},
        {"id": 2, "generation": "no mapping here"},
    ]
    stdin = "".join(json.dumps(r) + "\n" for r in recs)
    r = ppt("restore", "--mapping-field", "map", "--on-error", "skip", "--report", str(path), stdin=stdin)
    assert r.returncode == 1, r.stderr
    rep = json.loads(path.read_text())
    assert rep["command"] == "restore" and rep["counts"]["ok"] == 1 and rep["counts"]["skipped"] == 1
    assert rep["counts"]["by_error"] == {"no_mapping": 1} and rep["stamps"] == {"restore": 1}
    assert "sanitize" not in rep and SECRET not in path.read_text()


def test_ppt_report_writes_a_self_contained_page(tmp_path):
    path, rep = sanitize_with_report(tmp_path)
    html_path = tmp_path / "report.html"
    r = ppt("report", str(path), "-o", str(html_path))
    assert r.returncode == 0, r.stderr
    page = html_path.read_text()
    assert page.startswith("<!doctype html>") and "<svg" in page and 'id="n-ok">6<' in page
    # self-contained: nothing fetched from elsewhere, no script
    assert not re.search(r"""(src|href)\s*=|url\(|@import|<script|<link""", page, re.I)
    assert SECRET.split()[0] not in page
    r = ppt("report", str(tmp_path / "out.jsonl"))
    assert r.returncode == 65 and "not" in r.stderr


# ---------------------------------------------------------------------------------- headless Chromium


def chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("no chromium on PATH (CI installs Debian's chromium in .ci/run): the page is not rendered here")


def render(tmp_path, page, *flags: str) -> subprocess.CompletedProcess:
    """Chromium, headless, on a file: URL, with a throwaway profile and HOME (nothing of the user's)."""
    profile = tmp_path / "chromium-profile"
    profile.mkdir(exist_ok=True)
    cmd = [
        chromium(),
        "--headless",
        "--no-sandbox",  # root in CI containers; the page is our own local file
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        "--window-size=1200,3200",
        *flags,
        page.as_uri(),
    ]
    env = {**os.environ, "HOME": str(profile)}
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    return r


@pytest.fixture
def sampled_page(tmp_path):
    """A report with a sample of 2 records (raw and sanitized text, spans from the alignment), rendered."""
    chromium()  # skip before any work where there is none
    extra = ["--keep-original", "raw", "--emit-alignment", "al", "--diagnostics", "diag", "--report-sample", "2"]
    path, rep = sanitize_with_report(tmp_path, *extra)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600 and rep["local_only"] is True
    page = tmp_path / "report.html"
    r = ppt("report", str(path), "-o", str(page))
    assert r.returncode == 0 and "0600" in r.stderr
    assert stat.S_IMODE(os.stat(page).st_mode) == 0o600
    return page, rep


def by_id(dom: str, element_id: str) -> str:
    m = re.search(rf'<[^>]*\bid="{element_id}"[^>]*>(.*?)</', dom, re.S)
    assert m, f"no #{element_id} in the rendered DOM"
    return m.group(1).strip()


def test_chromium_renders_the_numbers_histograms_and_sample(tmp_path, sampled_page):
    page, rep = sampled_page
    dom = render(tmp_path, page, "--dump-dom").stdout
    c = rep["counts"]
    assert by_id(dom, "n-read") == str(c["read"]) == "8"
    assert by_id(dom, "n-ok") == str(c["ok"]) == "6"
    assert by_id(dom, "n-failed") == str(c["failed"]) == "2"
    assert by_id(dom, "exit-code") == "1" and by_id(dom, "command") == "sanitize"
    # the eps histogram: an inline SVG whose bars count every record
    svg = re.search(r'<svg id="hist-eps-conditional-1" class="histogram".*?</svg>', dom, re.S)
    assert svg, "no eps histogram in the rendered DOM"
    bars = [int(n) for n in re.findall(r'<rect class="col"[^>]*data-count="(\d+)"', svg.group(0))]
    [cond] = rep["sanitize"]["eps"]["conditional"].values()
    assert bars == cond["histogram"]["counts"] and sum(bars) == 6
    assert re.search(r'<svg id="hist-tokens" class="histogram"', dom) and 'id="hist-eps-proven"' not in dom
    assert "6 record(s) with ε = ∞: nothing proven" in dom  # CusText+'s proven eps: stated, not plotted
    # errors by type, the diagnostics, and the sample with highlighted spans on both sides
    errors = dom[dom.index('id="errors"') : dom.index('id="diagnostics"')]
    assert "missing_text_field" in errors and "malformed_json" in errors
    assert 'id="diagnostics"' in dom and "stopword" in dom
    sample = dom[dom.index('id="sample"') :]
    assert sample.count('class="text original"') == 2 and SECRET in sample
    assert re.search(r'<div class="text original">.*?<mark class="chg"', sample, re.S)
    assert re.search(r'<div class="text sanitized">.*?<mark class="chg"', sample, re.S)


def test_chromium_screenshot_shows_the_histogram_and_highlights(tmp_path, sampled_page):
    image = pytest.importorskip("PIL.Image")
    page, _ = sampled_page
    shot = tmp_path / "report.png"
    render(tmp_path, page, f"--screenshot={shot}")
    import numpy as np

    with image.open(shot) as im:
        assert im.size == (1200, 3200)
        pixels = np.asarray(im.convert("RGB"), dtype=np.int16)

    def near(color, tol=12):
        return int((np.abs(pixels - np.array(color, dtype=np.int16)).max(axis=2) <= tol).sum())

    assert near((0x4F, 0x46, 0xE5)) > 2000  # the eps histogram's bars (indigo)
    assert near((0x0E, 0x74, 0x90)) > 2000  # the tokens histogram (teal)
    assert near((0x12, 0x80, 0x5C)) > 2000  # the ok share of the outcome bar, the ok count (green)
    assert near((0xFD, 0xE6, 0x8A)) > 300  # replaced tokens highlighted in the sample (amber)
