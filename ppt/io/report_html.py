"""A run report (:mod:`ppt.io.run_report`) as one self-contained HTML page: ``ppt report run.json -o report.html``.

No external assets, no script: inline CSS and inline SVG only, so the page opens offline, from a mail
attachment or a CI artifact, and shows the same everywhere. What it shows: the counts as cards and an
outcome bar, the eps and token distributions as SVG histograms with their min / median / mean / max,
errors by type, the --diagnostics sums (kept/dropped by reason), the run's parameters and versions, and,
when the report holds a sample (``ppt sanitize --report-sample N``), original and sanitized text side by
side with the perturbed tokens highlighted from the alignment. Every string from the report is escaped.
Element ids a reader (or a test) can rely on: ``n-read``, ``n-ok``, ``n-failed``, ``exit-code``,
``elapsed``, ``rate``, ``command``; sections ``eps``, ``tokens``, ``errors``, ``diagnostics``, ``sample``,
``details``; the histograms (``svg.histogram``, one ``rect.col`` per bin with ``data-count``)
``hist-eps-proven``, ``hist-eps-conditional-N``, ``hist-eps-all-releases``, ``hist-tokens``.
"""

from __future__ import annotations

import html
import json
from typing import Any

CSS = """
:root { --ink:#1f2430; --muted:#667085; --line:#e4e7ec; --bg:#f5f6fa; --card:#fff; --ok:#12805c;
  --bad:#c4320a; --warn:#b54708; --eps:#4f46e5; --tok:#0e7490; --chg:#fde68a; --same:#e0e7ff; }
* { box-sizing: border-box; }
body { margin:0; background:var(--bg); color:var(--ink);
  font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif; }
main { max-width:1100px; margin:0 auto; padding:28px 24px 48px; }
header h1 { margin:0 0 4px; font-size:26px; letter-spacing:-.01em; }
header .sub { color:var(--muted); margin:0; }
code, .mono { font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace; font-size:13px; }
.badge { display:inline-block; padding:1px 9px; border-radius:999px; font-weight:600; color:#fff; }
.badge.ok { background:var(--ok); } .badge.warn { background:var(--warn); } .badge.bad { background:var(--bad); }
.cards { display:grid; grid-template-columns:repeat(auto-fit,minmax(150px,1fr)); gap:14px; margin:22px 0; }
.card { background:var(--card); border:1px solid var(--line); border-radius:12px; padding:14px 16px;
  box-shadow:0 1px 2px rgba(16,24,40,.05); }
.card .label { color:var(--muted); font-size:13px; text-transform:uppercase; letter-spacing:.04em; }
.card .value { font-size:30px; font-weight:700; line-height:1.2; }
.card .note { color:var(--muted); font-size:12.5px; }
.card.ok .value { color:var(--ok); } .card.bad .value { color:var(--bad); }
section { background:var(--card); border:1px solid var(--line); border-radius:12px; padding:18px 20px;
  margin:18px 0; box-shadow:0 1px 2px rgba(16,24,40,.05); }
section h2 { margin:0 0 10px; font-size:18px; }
section h3 { margin:14px 0 6px; font-size:15px; }
.muted { color:var(--muted); }
.figs { display:grid; grid-template-columns:repeat(auto-fit,minmax(420px,1fr)); gap:18px; }
figure { margin:0; } figcaption { font-weight:600; margin-bottom:4px; }
table { border-collapse:collapse; width:100%; }
th, td { text-align:left; padding:5px 8px; border-bottom:1px solid var(--line); vertical-align:top; }
th { color:var(--muted); font-weight:600; font-size:13px; }
td.num, th.num { text-align:right; font-variant-numeric:tabular-nums; }
.stats td { font-variant-numeric:tabular-nums; }
.bar { height:10px; border-radius:5px; background:var(--bad); }
.bar.kept { background:var(--ok); } .bar.dropped { background:var(--warn); }
.none-finite { background:#f2f4f7; border-radius:8px; padding:12px 14px; color:#344054; }
.local { border:2px solid var(--warn); background:#fffaeb; border-radius:10px; padding:10px 14px; margin:0 0 12px; }
.pair { display:grid; grid-template-columns:1fr 1fr; gap:14px; margin:12px 0 18px; }
.pair .text { background:#fcfcfd; border:1px solid var(--line); border-radius:8px; padding:10px 12px;
  white-space:pre-wrap; word-wrap:break-word; }
.pair .head { font-size:12.5px; color:var(--muted); margin-bottom:4px; }
mark { border-radius:3px; padding:0 2px; }
mark.chg { background:var(--chg); } mark.same { background:var(--same); }
.legend mark { margin-right:4px; }
footer { color:var(--muted); font-size:13px; margin-top:26px; }
"""


def esc(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def fmt(x: Any) -> str:
    """A number for people: thousands separators, at most 4 significant decimals."""
    if isinstance(x, bool) or x is None:
        return "–" if x is None else str(x)
    if isinstance(x, int):
        return f"{x:,}"
    if isinstance(x, float):
        if x.is_integer() and abs(x) < 1e15:
            return f"{int(x):,}"
        return f"{x:,.4g}" if abs(x) < 1e6 else f"{x:.3e}"
    return esc(x)


# --------------------------------------------------------------------------------------- pieces


def svg_histogram(hist: dict, *, color: str, unit: str, element_id: str, label: str) -> str:
    """An inline SVG bar chart of ``{"edges", "counts"}`` with its axes; each bar has a <title> tooltip."""
    edges, counts = list(hist.get("edges") or []), list(hist.get("counts") or [])
    if not counts or len(edges) != len(counts) + 1:
        return '<p class="muted">no histogram</p>'
    w, h, left, right, top, bottom = 520, 210, 46, 12, 12, 40
    pw, ph = w - left - right, h - top - bottom
    peak = max(counts) or 1
    bw = pw / len(counts)
    parts = [
        f'<svg id="{esc(element_id)}" class="histogram" role="img" aria-label="{esc(label)}" '
        f'xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" width="100%" style="max-width:{w}px">',
        f"<title>{esc(label)}</title>",
    ]
    for frac in (0.5, 1.0):  # grid lines and y labels
        y = top + ph - ph * frac
        parts.append(f'<line x1="{left}" x2="{w - right}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e4e7ec"/>')
        parts.append(
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11" fill="#667085">'
            f"{fmt(round(peak * frac, 1) if peak * frac % 1 else int(peak * frac))}</text>"
        )
    for i, c in enumerate(counts):
        bh = ph * c / peak
        x, y = left + i * bw, top + ph - bh
        lo, hi = edges[i], edges[i + 1]
        closing = "]" if i == len(counts) - 1 else ")"
        tip = f"[{fmt(lo)}, {fmt(hi)}{closing} {unit}: {c:,} record{'s' if c != 1 else ''}"
        parts.append(
            f'<rect class="col" x="{x + 1:.1f}" y="{y:.1f}" width="{max(bw - 2, 1):.1f}" height="{bh:.1f}" '
            f'rx="2" fill="{color}" data-count="{c}"><title>{esc(tip)}</title></rect>'
        )
    base = top + ph
    parts.append(f'<line x1="{left}" x2="{w - right}" y1="{base}" y2="{base}" stroke="#98a2b3"/>')
    step = max(1, round(len(edges) / 6))
    shown = list(range(0, len(edges), step))
    if shown[-1] != len(edges) - 1:
        shown[-1] = len(edges) - 1
    for i in shown:
        x = left + i * bw
        anchor = "end" if i == len(edges) - 1 else ("start" if i == 0 else "middle")
        parts.append(
            f'<text x="{x:.1f}" y="{base + 15}" text-anchor="{anchor}" font-size="11" fill="#667085">'
            f"{fmt(edges[i])}</text>"
        )
    parts.append(
        f'<text x="{left + pw / 2:.1f}" y="{h - 6}" text-anchor="middle" font-size="11.5" fill="#344054">'
        f"{esc(unit)} per record</text>"
    )
    parts.append("</svg>")
    return "".join(parts)


def svg_outcome(counts: dict) -> str:
    """One stacked bar: ok / failed (recorded or skipped) / stopped."""
    ok, failed = int(counts.get("ok") or 0), int(counts.get("failed") or 0)
    total = ok + failed
    if not total:
        return ""
    w, h = 1000, 18
    okw = w * ok / total
    return (
        f'<svg id="outcome-bar" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" width="100%" height="18" '
        f'preserveAspectRatio="none" role="img" aria-label="ok {ok}, failed {failed}">'
        f'<rect x="0" y="0" width="{okw:.1f}" height="{h}" fill="#12805c"><title>ok: {ok:,}</title></rect>'
        f'<rect x="{okw:.1f}" y="0" width="{w - okw:.1f}" height="{h}" fill="#c4320a"><title>failed: {failed:,}'
        "</title></rect></svg>"
    )


def stats_table(dist: dict, unit: str) -> str:
    keys = ("min", "median", "mean", "max")
    cells = "".join(f"<td class='num' data-stat='{k}'>{fmt(dist.get(k))}</td>" for k in keys)
    extra = []
    if dist.get("none"):
        extra.append(f"{fmt(dist['none'])} with no bound (null)")
    if dist.get("inf"):
        extra.append(f"{fmt(dist['inf'])} with ε = ∞ (nothing proven)")
    note = f'<p class="muted">{esc("; ".join(extra))}</p>' if extra else ""
    return (
        f'<table class="stats"><tr><th>{esc(unit)}</th><th class="num">min</th><th class="num">median</th>'
        f'<th class="num">mean</th><th class="num">max</th><th class="num">records</th></tr>'
        f"<tr><td class='muted'>per record</td>{cells}<td class='num'>{fmt(dist.get('n'))}</td></tr></table>{note}"
    )


def distribution_figure(dist: dict, *, title: str, unit: str, color: str, element_id: str) -> str:
    if not dist.get("histogram"):  # no finite value: say what there is (null: no bound; inf: nothing proven)
        what = []
        if dist.get("inf"):
            what.append(f"{fmt(dist['inf'])} record(s) with {unit} = ∞: nothing proven")
        if dist.get("none"):
            what.append(f"{fmt(dist['none'])} record(s) with no bound stated (null)")
        return (
            f"<figure><figcaption>{esc(title)}</figcaption>"
            f'<p class="none-finite">{esc("; ".join(what) or "no values")}</p></figure>'
        )
    body = svg_histogram(dist["histogram"], color=color, unit=unit, element_id=element_id, label=title)
    return f"<figure><figcaption>{esc(title)}</figcaption>{body}{stats_table(dist, unit)}</figure>"


def bars_table(counter: dict, kind: str, first: str) -> str:
    if not counter:
        return '<p class="muted">none</p>'
    peak = max(counter.values()) or 1
    rows = "".join(
        f"<tr><td><code>{esc(k)}</code></td><td class='num'>{fmt(v)}</td>"
        f"<td style='width:55%'><div class='bar {kind}' style='width:{100 * v / peak:.1f}%'></div></td></tr>"
        for k, v in counter.items()
    )
    return f"<table><tr><th>{esc(first)}</th><th class='num'>count</th><th></th></tr>{rows}</table>"


def highlight(text: str, spans: list[tuple[int, int, bool, int]]) -> str:
    """``text`` escaped, with each (start, end, changed, k) span in a <mark> (overlaps skipped)."""
    out, pos = [], 0
    for start, end, changed, k in sorted(spans):
        if start < pos or end > len(text) or end <= start:
            continue
        out.append(esc(text[pos:start]))
        cls, what = ("chg", "replaced") if changed else ("same", "perturbed, same word drawn")
        out.append(f'<mark class="{cls}" data-k="{k}" title="token {k}: {what}">{esc(text[start:end])}</mark>')
        pos = end
    out.append(esc(text[pos:]))
    return "".join(out)


def sample_section(sample: dict) -> str:
    records = sample.get("records") or []
    parts = [
        '<section id="sample"><h2>Sample: original and sanitized</h2>',
        '<div class="local"><b>Local only.</b> This page holds the raw text of '
        f"{len(records)} record(s) (asked with --report-sample {fmt(sample.get('requested'))} under "
        "--keep-original). Do not share it; the file was written readable by you only (0600).</div>",
        '<p class="legend muted"><mark class="chg">word</mark> replaced by the mechanism '
        '<mark class="same">word</mark> perturbed, the same word drawn again '
        "(spans from --emit-alignment). Unmarked words may differ too: the alignment pairs the tokens the "
        "mechanism perturbed, not the policy's replacements (out-of-vocabulary words, digits).</p>",
    ]
    if not records:
        parts.append('<p class="muted">no record carried the --keep-original field</p>')
    for i, rec in enumerate(records, 1):
        spans = rec.get("spans")
        orig_sp, san_sp = [], []
        for k, s in enumerate(spans or [], 1):
            if s.get("original"):
                orig_sp.append((s["original"][0], s["original"][1], bool(s.get("changed")), k))
            if s.get("sanitized"):
                san_sp.append((s["sanitized"][0], s["sanitized"][1], bool(s.get("changed")), k))
        n_changed = sum(1 for s in spans or [] if s.get("changed"))
        info = (
            f"{len(spans)} perturbed token(s), {n_changed} replaced"
            if spans is not None
            else "no alignment in this run: add --emit-alignment FIELD to highlight the perturbed tokens"
        )
        cut = " · cut at 4,000 characters" if rec.get("truncated") else ""
        parts.append(
            f'<h3>#{i} <span class="muted mono">id {esc(json.dumps(rec.get("id"), ensure_ascii=False))}</span></h3>'
            f'<p class="muted">{esc(info)}{cut}</p><div class="pair">'
            f'<div><div class="head">original</div><div class="text original">'
            f"{highlight(rec.get('original') or '', orig_sp)}</div></div>"
            f'<div><div class="head">sanitized</div><div class="text sanitized">'
            f"{highlight(rec.get('sanitized') or '', san_sp)}</div></div></div>"
        )
    parts.append("</section>")
    return "".join(parts)


# --------------------------------------------------------------------------------------- page


def render_html(report: dict) -> str:
    """The page for one report (a dict as :func:`ppt.io.run_report.load_report` returns it)."""
    counts = report.get("counts") or {}
    command = report.get("command") or "run"
    code = report.get("exit_code")
    badge = "ok" if code == 0 else ("warn" if code == 1 else "bad")
    versions = report.get("versions") or {}
    failed = int(counts.get("failed") or 0)
    on_error = (report.get("run") or {}).get("on_error")
    failed_note = {"skip": "skipped (not in the output)", "record": "error records in the output"}.get(
        on_error or "", "stopped the run" if counts.get("stopped_at") else ""
    )
    rate = report.get("records_per_s")
    cards = [
        ("n-read", "Records read", fmt(counts.get("read")), "", ""),
        ("n-ok", "OK", fmt(counts.get("ok")), "ok", "written to the output"),
        ("n-failed", "Failed", fmt(failed), "bad" if failed else "", failed_note if failed else ""),
        ("elapsed", "Elapsed", f"{fmt(report.get('elapsed_s'))} s", "", f"{fmt(report.get('total_s'))} s in all"),
        ("rate", "Throughput", fmt(rate) if rate is not None else "–", "", "records/s"),
    ]
    head = (
        f'<header><h1>ppt <span id="command">{esc(command)}</span> · run report</h1>'
        f'<p class="sub">exit code <span id="exit-code" class="badge {badge}">{esc(code)}</span> · started '
        f"{esc(report.get('started'))} · ppt {esc(versions.get('ppt'))} · Python {esc(versions.get('python'))}"
        f" · torch {esc(versions.get('torch') or 'not installed')}</p></header>"
    )
    body = [head, '<div class="cards">']
    for element_id, label, value, cls, note in cards:
        body.append(
            f'<div class="card {cls}"><div class="label">{esc(label)}</div>'
            f'<div class="value" id="{element_id}">{value}</div><div class="note">{esc(note)}</div></div>'
        )
    body.append("</div>")
    body.append(svg_outcome(counts))
    if report.get("local_only"):
        reasons = ", ".join(report.get("local_only_reasons") or [])
        body.append(
            f'<div class="local" id="local-only"><b>Local only</b> ({esc(reasons)}): this report depends on the '
            "raw text. Keep it where the raw data is.</div>"
        )

    san = report.get("sanitize")
    if san:
        body.append(sanitize_section(san))
    body.append(errors_section(counts, on_error))
    diag = report.get("diagnostics")
    if diag:
        body.append(
            '<section id="diagnostics"><h2>Kept and dropped tokens, by reason</h2>'
            f'<p class="muted">Sums of the --diagnostics field <code>{esc(diag.get("field"))}</code> over '
            f"{fmt(diag.get('records'))} records (they depend on the raw text: local only).</p>"
            '<div class="figs"><div><h3>kept verbatim</h3>'
            f"{bars_table(diag.get('kept') or {}, 'kept', 'reason')}</div><div><h3>dropped</h3>"
            f"{bars_table(diag.get('dropped') or {}, 'dropped', 'reason')}</div></div>"
            f"{kv_table(diag.get('totals') or {})}</section>"
        )
    if report.get("sample") is not None:
        body.append(sample_section(report["sample"]))
    body.append(details_section(report))
    body.append(
        "<footer>Written by <code>ppt report</code> from a <code>--report</code> file (format "
        f"{esc(report.get('ppt_report'))}). Figures come from the public stamps unless marked local.</footer>"
    )
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>ppt {esc(command)} · run report</title><style>{CSS}</style></head>"
        f"<body><main>{''.join(body)}</main></body></html>\n"
    )


def sanitize_section(san: dict) -> str:
    eps = san.get("eps") or {}
    figs = []

    def add(dist: dict | None, title: str, element_id: str) -> None:
        if dist and (dist.get("n") or dist.get("none") or dist.get("inf")):
            figs.append(distribution_figure(dist, title=title, unit="ε", color="#4f46e5", element_id=element_id))

    add(eps.get("proven"), "proven ε per record", "hist-eps-proven")
    for i, (given, dist) in enumerate((eps.get("conditional") or {}).items(), 1):
        add(dist, f"conditional ε per record, given {given}", f"hist-eps-conditional-{i}")
    add(eps.get("all_releases"), "ε of all releases of a record (re-sanitized records)", "hist-eps-all-releases")
    sigs = "".join(
        f"<tr><td><code>{esc(sig)}</code></td><td class='num'>{fmt(c)}</td></tr>"
        for sig, c in (san.get("signatures") or {}).items()
    )
    tokens = san.get("tokens") or {}
    unprotected = san.get("unprotected_by_policy") or {}
    extra = []
    if san.get("empty_output"):
        extra.append(f"{fmt(san['empty_output'])} record(s) came out empty")
    if unprotected:
        extra.append("let through by the policy (records): " + ", ".join(f"{k} {v:,}" for k, v in unprotected.items()))
    return (
        '<section id="eps"><h2>Privacy per record (ε)</h2>'
        '<p class="muted">From the <code>ppt.sanitize</code> stamps: proven figures and conditional bounds '
        "are shown apart, as the stamps state them.</p>"
        f"<table><tr><th>signature</th><th class='num'>records</th></tr>{sigs}</table>"
        f'<div class="figs">{"".join(figs) or "<p class=muted>no eps in the stamps</p>"}</div>'
        + (f'<p class="muted">{esc("; ".join(extra))}</p>' if extra else "")
        + "</section>"
        + '<section id="tokens"><h2>Perturbed tokens per record</h2><div class="figs">'
        + (
            distribution_figure(
                tokens, title="tokens perturbed", unit="tokens", color="#0e7490", element_id="hist-tokens"
            )
            if tokens.get("n")
            else '<p class="muted">none</p>'
        )
        + "</div></section>"
    )


def errors_section(counts: dict, on_error: str | None) -> str:
    by_error = counts.get("by_error") or {}
    lines = counts.get("first_failed_lines") or []
    stopped = counts.get("stopped_at")
    parts = ['<section id="errors"><h2>Errors by type</h2>']
    if not by_error:
        parts.append('<p class="muted">No record failed.</p>')
    else:
        parts.append(bars_table(by_error, "", "error type"))
        mode = {"skip": "dropped (--on-error skip)", "record": "written as error records (--on-error record)"}
        parts.append(
            f'<p class="muted">{esc(mode.get(on_error or "", "--on-error " + str(on_error)))}; first failed lines: '
            f"{esc(', '.join(str(n) for n in lines))}</p>"
        )
    if stopped:
        parts.append(
            f"<p><b>Stopped</b> at line {esc(stopped.get('line'))} ({esc(stopped.get('type'))}) under "
            "--on-error fail.</p>"
        )
    parts.append("</section>")
    return "".join(parts)


def kv_table(data: dict) -> str:
    if not data:
        return ""
    rows = "".join(
        f"<tr><th>{esc(k)}</th><td class='mono'>{esc(v if isinstance(v, str) else json.dumps(v, ensure_ascii=False))}</td></tr>"
        for k, v in data.items()
    )
    return f"<table>{rows}</table>"


def details_section(report: dict) -> str:
    run = dict(report.get("run") or {})
    timing = {k: report.get(k) for k in ("started", "elapsed_s", "prepare_s", "total_s", "records_per_s")}
    return (
        '<section id="details"><h2>Run</h2><div class="figs">'
        f"<div><h3>options</h3>{kv_table(run)}<h3>timing</h3>{kv_table(timing)}</div>"
        f"<div><h3>stage signature</h3>{kv_table(report.get('signature') or {})}"
        f"<h3>versions</h3>{kv_table(report.get('versions') or {})}"
        f"<h3>stamps</h3>{kv_table(report.get('stamps') or {})}</div>"
        "</div></section>"
    )


__all__ = ["render_html"]
