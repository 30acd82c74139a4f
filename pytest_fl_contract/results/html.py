"""``fl-contract html``: the lanes' reports as pages a person opens, not tables they grep.

One page per lane (provenance, outcome counts, the failing contracts per op, the known
defects, the compiler probes, a bar chart of each op's outcomes, and a benchmark's ratio
histogram when one is given) and, for two lanes or more, the parity matrix with its pass
rates.  Each page is one HTML5 file that needs nothing else, the convention of pytest-html's
``--self-contained-html``: inline CSS and inline SVG, no JavaScript, no URL, so it can be
mailed, attached to a CI run or opened from a tarball years later.  A Content-Security-Policy
forbids scripts and fetches outright, so a page stays inert even were escaping ever missed.

Every text that came from a report (lane, case, op and contract names, messages, reasons,
properties) is written through ``html.escape(..., quote=True)``; every element a test or a
script reads carries an id or ``data-`` attributes, so the page is checked as a DOM, not by
its looks.
"""

from __future__ import annotations

import html
import json
import math
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union

from .. import files
from ..config import safeyaml
from ..util import FlContractError, one_line, safe_text
from .cases import FAILING, LaneReport, Row, read
from .parity import RATE, Cell, Matrix, Rate, matrix
from .scoreboard import STATUSES, Board, board_of, has_overloads, view

Bench = Union[Sequence[Mapping[str, Any]], Mapping[str, Any]]

PROBES_STEP = "compiler_probes"
# the provenance a reader asks for first ("which torch? which device?"), in this order
PROVENANCE = (
    ("version_torch", "torch"),
    ("version_triton", "triton"),
    ("version_flag_gems", "flag_gems"),
    ("version_pytest_fl_contract", "pytest-fl-contract"),
    ("fl_platform", "platform"),
    ("fl_device", "device"),
    ("fl_emulated", "emulated"),
    ("fl_workaround", "workaround"),
    ("fl_layout", "layout"),
)
OUTCOMES = ("passed", "failed", "error", "xpassed", "xfailed", "skipped")
# the stacked bar's parts: a failing case is failed, an error or a strict xfail that passed
PARTS = (("passed", ("passed",)), ("failing", FAILING), ("xfailed", ("xfailed",)), ("skipped", ("skipped",)))
COLOURS = {
    "passed": "#43a047",
    "failing": "#e53935",
    "failed": "#e53935",
    "xfailed": "#ffb300",
    "defect": "#ffb300",
    "skipped": "#9e9e9e",
}
NO_OP = "(no op)"

CSS = """
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:1.5em;color:#212121}
h1{font-size:1.5em;margin:0 0 .3em}h2{font-size:1.15em;margin:1.4em 0 .4em}
table{border-collapse:collapse;margin:.3em 0}th,td{border:1px solid #ddd;padding:3px 7px;text-align:left;
vertical-align:top}th{background:#f5f5f5}td.num{text-align:right;font-variant-numeric:tabular-nums}
thead th{position:sticky;top:0}
dl{display:grid;grid-template-columns:max-content auto;gap:2px 14px;margin:.3em 0}dt{font-weight:600}dd{margin:0}
code,.key{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px}
.message{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px;max-width:60em;overflow-wrap:anywhere}
.state-failed{background:#ffcdd2;color:#b71c1c}.state-defect{background:#ffe082;color:#6d4c00}
.state-passed{background:#c8e6c9;color:#1b5e20}.state-skipped{background:#eeeeee;color:#616161}
.state-absent{color:#bdbdbd}.outcome-failed,.outcome-error,.outcome-xpassed{color:#b71c1c;font-weight:600}
.outcome-passed{color:#1b5e20}.outcome-skipped{color:#616161}.outcome-xfailed{color:#6d4c00}
.note{color:#616161}.legend span{display:inline-block;padding:1px 8px;margin-right:6px;border-radius:3px}
svg text{font:12px system-ui,sans-serif;fill:#212121}
"""
# no script, no fetch of anything: only the inline style runs
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


def esc(value: object) -> str:
    """Report text as HTML text or attribute value: nothing from a report is ever markup."""
    return html.escape(str(value), quote=True)


def _attrs(**values: object) -> str:
    """``data_op="x"`` style keywords as `` data-op="x"``; the ``class_`` keyword as ``class``."""
    return "".join(
        f' {name.rstrip("_").replace("_", "-")}="{esc(value)}"' for name, value in values.items() if value is not None
    )


def document(title: str, body: Iterable[str]) -> str:
    """One UTF-8 HTML5 document that loads nothing: its style and its pictures are inline."""
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{esc(CSP)}">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{esc(title)}</title>",
            f"<style>{CSS}</style>",
            "</head>",
            "<body>",
            *body,
            "</body>",
            "</html>",
            "",
        ]
    )


def _table(table_id: str, head: Sequence[str], rows: Sequence[str], empty: str) -> str:
    if not rows:
        return f'<p class="note" id="{esc(table_id)}-none">{esc(empty)}</p>'
    cells = "".join(f"<th>{esc(h)}</th>" for h in head)
    return (
        f'<table id="{esc(table_id)}"><thead><tr>{cells}</tr></thead><tbody>\n' + "\n".join(rows) + "\n</tbody></table>"
    )


def _op(row: Row) -> str:
    return row.op or NO_OP


def _contract(row: Row) -> str:
    return row.contract or row.step


def _fmt(value: float) -> str:
    return f"{value:.3g}"


# -- charts ---------------------------------------------------------------------------


def bar_chart(chart_id: str, bars: Sequence[tuple[str, Mapping[str, int]]], parts: Sequence[str]) -> str:
    """A horizontal stacked bar per label (an op's outcomes): the shape of a lane at a glance,
    which op is red, which is mostly skipped.  Each segment carries its label, part and count."""
    if not bars:
        return ""
    row_h, label_w, bar_w, top = 20, 190, 560, 24
    widest = max(sum(counts.get(p, 0) for p in parts) for _, counts in bars) or 1
    height = top + row_h * len(bars) + 8
    out = [
        f'<svg id="{esc(chart_id)}" role="img" width="{label_w + bar_w + 70}" height="{height}" '
        f'viewBox="0 0 {label_w + bar_w + 70} {height}">'
    ]
    x = label_w
    for part in parts:  # the legend, in the order the segments are drawn
        out.append(
            f'<rect x="{x}" y="4" width="12" height="12" fill="{COLOURS[part]}"></rect>'
            f'<text x="{x + 16}" y="14">{esc(part)}</text>'
        )
        x += 16 + 8 * len(part) + 14
    for i, (label, counts) in enumerate(bars):
        y = top + i * row_h
        out.append(f'<text x="{label_w - 6}" y="{y + 14}" text-anchor="end">{esc(label)}</text>')
        x0 = float(label_w)
        total = 0
        for part in parts:
            count = counts.get(part, 0)
            if not count:
                continue
            width = bar_w * count / widest
            out.append(
                f'<rect class="bar"{_attrs(data_label=label, data_part=part, data_count=count)} '
                f'x="{x0:.1f}" y="{y + 2}" width="{width:.1f}" height="{row_h - 5}" fill="{COLOURS[part]}">'
                f"<title>{esc(label)}: {count} {esc(part)}</title></rect>"
            )
            x0 += width
            total += count
        out.append(f'<text x="{x0 + 4:.1f}" y="{y + 14}">{total}</text>')
    out.append("</svg>")
    return "".join(out)


def ratios(bench: Bench) -> list[float]:
    """The ratios of a benchmark JSON: a list of rows (or ``{"rows": [...]}``, as
    ``benchmarks/bench_reductions.py --json`` nests them), each with a number ``ratio`` or the
    two timings ``fast`` and ``native`` it is the quotient of.  FlContractError, one line, for
    anything else: a histogram of guesses would be worse than none."""
    rows = bench.get("rows") if isinstance(bench, Mapping) else bench
    if not isinstance(rows, Sequence) or isinstance(rows, (str, bytes)) or not rows:
        raise FlContractError('benchmark: expected a non-empty JSON list of rows each with a number "ratio"')
    out = []
    for i, row in enumerate(rows):
        value: float | None = None
        if isinstance(row, Mapping) and row.get("ratio") is not None:
            value = _float(row["ratio"])
        elif isinstance(row, Mapping):
            fast, native = _float(row.get("fast")), _float(row.get("native"))
            try:
                value = fast / native if fast is not None and native else None
            except OverflowError:
                value = None
        if value is None or not math.isfinite(value) or value < 0:
            raise FlContractError(f'benchmark: row {i} has no finite, non-negative number "ratio"')
        out.append(value)
    return out


def _float(value: object) -> float | None:
    """A JSON number as a float; None for anything else, and for an integer no float holds
    (``1e400`` written out)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    try:
        return float(value)
    except OverflowError:
        return None


def histogram(chart_id: str, values: Sequence[float], bins: int = 24) -> str:
    """The distribution of fast-path / native ratios with a line at 1.0: left of it the fast
    path wins.  A median hides a slow tail; the picture does not."""
    lo, hi = min(min(values), 1.0), max(max(values), 1.0)
    if hi - lo < 1e-9:
        lo, hi = lo - 0.5, hi + 0.5
    step = (hi - lo) / bins
    counts = [0] * bins
    for value in values:
        counts[min(int((value - lo) / step), bins - 1)] += 1
    left, width, top, plot_h = 40, 640, 14, 180
    tallest = max(counts)
    scale = plot_h / tallest
    bin_w = width / bins
    base = top + plot_h
    out = [
        f'<svg id="{esc(chart_id)}" role="img" width="{left + width + 20}" height="{base + 40}" '
        f'viewBox="0 0 {left + width + 20} {base + 40}">',
        f'<line x1="{left}" y1="{base}" x2="{left + width}" y2="{base}" stroke="#757575"></line>',
        f'<text x="{left - 4}" y="{top + 10}" text-anchor="end">{tallest}</text>',
        f'<text x="{left - 4}" y="{base}" text-anchor="end">0</text>',
    ]
    for i, count in enumerate(counts):
        b_lo, b_hi = lo + i * step, lo + (i + 1) * step
        h = count * scale
        colour = "#43a047" if b_hi <= 1.0 else "#e53935" if b_lo >= 1.0 else "#ffb300"
        out.append(
            f'<rect class="bin"{_attrs(data_lo=_fmt(b_lo), data_hi=_fmt(b_hi), data_count=count)} '
            f'x="{left + i * bin_w + 1:.1f}" y="{base - h:.1f}" width="{bin_w - 2:.1f}" height="{h:.1f}" '
            f'fill="{colour}"><title>{_fmt(b_lo)} - {_fmt(b_hi)}: {count}</title></rect>'
        )
    one = left + (1.0 - lo) / (hi - lo) * width
    out.append(
        f'<line id="{esc(chart_id)}-one" x1="{one:.1f}" y1="{top - 6}" x2="{one:.1f}" y2="{base + 4}" '
        f'stroke="#212121" stroke-dasharray="4 3"></line>'
        f'<text x="{one:.1f}" y="{base + 18}" text-anchor="middle">1.0</text>'
        f'<text x="{left}" y="{base + 18}">{_fmt(lo)}</text>'
        f'<text x="{left + width}" y="{base + 18}" text-anchor="end">{_fmt(hi)}</text>'
        f'<text x="{left + width / 2}" y="{base + 34}" text-anchor="middle">fast path / native time</text>'
    )
    out.append("</svg>")
    return "".join(out)


def rate_chart(chart_id: str, rates: Sequence[Rate]) -> str:
    """Pass rate per lane as bars on one 0 - 100 % scale: two lanes that disagree show it."""
    label_w, bar_w, row_h, top = 260, 500, 24, 6
    height = top + row_h * len(rates) + 6
    out = [
        f'<svg id="{esc(chart_id)}" role="img" width="{label_w + bar_w + 70}" height="{height}" '
        f'viewBox="0 0 {label_w + bar_w + 70} {height}">'
    ]
    for i, rate in enumerate(rates):
        y = top + i * row_h
        out.append(
            f'<text x="{label_w - 6}" y="{y + 15}" text-anchor="end">{esc(rate.lane)}</text>'
            f'<rect x="{label_w}" y="{y + 2}" width="{bar_w}" height="{row_h - 6}" fill="#eeeeee"></rect>'
        )
        value = rate.value
        if value is not None:
            out.append(
                f'<rect class="rate-bar"{_attrs(data_lane=rate.lane, data_rate=f"{value:.6f}")} '
                f'x="{label_w}" y="{y + 2}" width="{bar_w * value:.1f}" height="{row_h - 6}" '
                f'fill="{COLOURS["passed"] if rate.failing == 0 else COLOURS["failing"]}">'
                f"<title>{esc(rate.lane)}: {esc(rate.shown)}</title></rect>"
            )
        out.append(f'<text x="{label_w + bar_w + 6}" y="{y + 15}">{esc(rate.shown)}</text>')
    out.append("</svg>")
    return "".join(out)


# -- the overload scoreboard ----------------------------------------------------------

# a status as the page colours it: STRICT green, FAILED / PARTIAL red (amber where every failure
# is a known defect's strict xfail), nothing ran grey
STATUS_STATE = {
    "STRICT": "passed",
    "PARTIAL": "failed",
    "FAILED": "failed",
    "UNSUPPORTED": "skipped",
    "UNTESTED": "skipped",
}


def _status_state(status: str, known_only: bool) -> str:
    return "defect" if known_only else STATUS_STATE.get(status, "absent")


def scoreboard_section(board: Board) -> list[str]:
    """A lane's overload scoreboard (``scoreboard.board_of``): its summary line, where it came
    from, and one row per registered overload, the ones that need a look first."""
    from .scoreboard import ordered, provenance_line

    counts = board.counts()
    out = [
        '<h2 id="scoreboard-title">Overload scoreboard</h2>',
        f'<p id="scoreboard-summary"{_attrs(data_registered=board.registered, data_known_only=board.known_only)}'
        + "".join(_attrs(**{f"data_{s.lower()}": counts[s]}) for s in STATUSES)
        + f"><strong>{esc(board.summary())}</strong></p>",
        f'<p class="note" id="scoreboard-provenance">{esc(provenance_line(board))}; denominator: '
        f"{esc(board.registered_from)}</p>",
    ]
    out += [f'<p class="note scoreboard-note">{esc(note)}</p>' for note in board.notes]
    rows = [
        f"<tr{_attrs(data_overload=v.overload, data_status=v.status, data_passed=v.passed, data_ran=v.ran, data_known_only='yes' if v.known_only else 'no')}>"
        f"<td><code>{esc(v.overload)}</code></td>"
        f'<td class="state-{_status_state(v.status, v.known_only)}">{esc(v.label if v.ran else v.status)}</td>'
        f'<td class="num">{v.passed}</td><td class="num">{v.ran}</td><td class="num">{v.unsupported}</td>'
        f'<td class="num">{v.untested}</td><td class="message">{esc(v.reason or "-")}</td></tr>'
        for v in ordered(board)
    ]
    out.append(
        _table(
            "scoreboard",
            ("overload", "status", "passed", "ran", "unsupported", "untested", "why / first failing"),
            rows,
            "no overload",
        )
    )
    return out


def across_section(boards: Sequence[Board], lane_head: Callable[[str], str]) -> list[str]:
    """The lanes' overload summaries side by side and one row per overload whose status is not
    the same on every lane that has it (STRICT on one, FAILED on another)."""
    from .scoreboard import across

    lanes = [b.lane for b in boards]
    summaries = [
        f'<tr class="scoreboard-lane"{_attrs(data_lane=b.lane)}>{lane_head(b.lane)}<td>{esc(b.summary())}</td></tr>'
        for b in boards
    ]
    differ = across(boards)
    rows = []
    for d in differ:
        held = dict(d.verdicts)
        cells = "".join(
            f'<td class="cell state-{_status_state(held[lane].status, held[lane].known_only) if lane in held else "absent"}"'
            f"{_attrs(data_lane=lane, data_overload=d.overload, data_status=held[lane].status if lane in held else '-')}>"
            f"{esc(held[lane].label if lane in held else '-')}</td>"
            for lane in lanes
        )
        rows.append(
            f"<tr{_attrs(data_overload=d.overload)}><td><code>{esc(d.overload)}</code></td>{cells}"
            f'<td class="message">{esc(d.line())}</td></tr>'
        )
    return [
        '<h2 id="overloads-title">Overloads across lanes</h2>',
        _table("overload-summaries", ("lane", "overload scoreboard"), summaries, "no lane holds overload cases"),
        f'<p class="note" id="overload-parity-count"{_attrs(data_differ=len(differ))}>{len(differ)} overload(s) '
        "differ between lanes</p>",
        _table(
            "overload-parity",
            ("overload", *lanes, "the line"),
            rows,
            "every overload has the same status on every lane that has it",
        ),
    ]


# -- a lane ---------------------------------------------------------------------------


def rate_of(report: LaneReport) -> Rate:
    """The lane's pass rate by parity's formula (RATE), so both pages print the same number."""
    seen = Counter(row.outcome for row in report.rows)
    return Rate(report.lane, seen["passed"], sum(seen[o] for o in FAILING), seen["skipped"], seen["xfailed"])


def _provenance(properties: Mapping[str, str]) -> str:
    items = [
        f"<dt>{esc(label)}</dt><dd{_attrs(data_property=name)}>{esc(properties[name])}</dd>"
        for name, label in PROVENANCE
        if properties.get(name)
    ]
    if not items:
        return '<p class="note" id="provenance-none">the report records no versions or platform</p>'
    return '<dl id="provenance">' + "".join(items) + "</dl>"


def _failing(rows: Sequence[Row]) -> list[str]:
    cases: dict[tuple[str, str], list[Row]] = {}
    for row in rows:
        cases.setdefault((_op(row), _contract(row)), []).append(row)
    out = []
    for (op, contract), group in sorted(cases.items()):
        failing = [row for row in group if row.failing]
        if not failing:
            continue
        first = failing[0]
        out.append(
            f"<tr{_attrs(data_op=op, data_contract=contract, data_failing=len(failing))}>"
            f"<td><code>{esc(op)}</code></td><td>{esc(contract)}</td>"
            f'<td class="num">{len(failing)} / {len(group)}</td>'
            f'<td class="key">{esc(first.key)} <span class="outcome-{esc(first.outcome)}">'
            f"{esc(first.outcome)}</span></td>"
            f'<td class="message">{esc(first.message)}</td></tr>'
        )
    return out


def _defects(report: LaneReport) -> tuple[list[str], str]:
    """Known defects by id from each case's tag; a report written before ``fl_cases`` tagged
    its cases falls back to the first step's ``fl_summary`` (the plugin's own counts)."""
    seen: dict[str, Counter[str]] = {}
    for row in report.rows:
        if row.outcome in ("xfailed", "xpassed") and row.defect:
            seen.setdefault(row.defect, Counter())[row.outcome] += 1
    source = "from each case's fl_cases tag"
    if not seen:
        try:
            summary = safe_text(json.loads(report.properties.get("fl_summary", "{}")))
        except (ValueError, RecursionError):
            summary = {}
        defects = summary.get("defects") if isinstance(summary, dict) else None
        if isinstance(defects, dict):
            for name, counts in defects.items():
                if isinstance(counts, dict):
                    seen[str(name)] = Counter({k: v for k, v in counts.items() if type(v) is int})
            source = "from the first step's fl_summary (its cases carry no fl_cases tags)"
    untagged = Counter(row.outcome for row in report.rows if row.outcome in ("xfailed", "xpassed") and not row.defect)
    rows = [
        f"<tr{_attrs(data_defect=name, data_xfailed=c['xfailed'], data_xpassed=c['xpassed'])}>"
        f'<td><code>{esc(name)}</code></td><td class="num">{c["xfailed"]}</td>'
        f'<td class="num{" outcome-xpassed" if c["xpassed"] else ""}">{c["xpassed"]}</td></tr>'
        for name, c in sorted(seen.items())
    ]
    if untagged and source.startswith("from each"):
        rows.append(
            f"<tr{_attrs(data_defect='', data_xfailed=untagged['xfailed'], data_xpassed=untagged['xpassed'])}>"
            f'<td class="note">(no defect id)</td><td class="num">{untagged["xfailed"]}</td>'
            f'<td class="num">{untagged["xpassed"]}</td></tr>'
        )
    return rows, source


# -- failures by cause (fl-contract triage's groups.json) ------------------------------


@dataclass(frozen=True)
class Causes:
    """A triage of one lane's report (``fl-contract triage``'s ``groups.json``), for its page:
    each group with its reproduction script and issue draft, as paths from the page."""

    lane: str
    report: str  # the report the triage read
    groups: tuple[dict[str, Any], ...]
    base: str  # the triage directory, relative to the page


def read_causes(directory: str | Path, out_dir: str | Path) -> Causes:
    """``directory``'s ``groups.json``; FlContractError (one line) where it is missing or not one."""
    path = Path(directory) / "groups.json"
    try:
        data = json.loads(files.read_bytes(path, 16 << 20).decode("utf-8", "replace"))
    except OSError as exc:
        raise FlContractError(
            f"--triage {directory}: {exc.strerror or exc} (run fl-contract triage LANE.xml --out DIR)"
        ) from None
    except ValueError as exc:
        raise FlContractError(f"--triage {directory}: groups.json is not JSON ({one_line(str(exc), 120)})") from None
    groups = data.get("groups") if isinstance(data, dict) else None
    if not isinstance(groups, list) or not isinstance(data.get("lane"), str):
        raise FlContractError(f"--triage {directory}: groups.json has no lane and groups: not fl-contract triage's")
    found = tuple(g for g in groups if isinstance(g, dict))
    return Causes(data["lane"], str(data.get("report", "")), found, os.path.relpath(Path(directory), Path(out_dir)))


def causes_section(causes: Causes, report: LaneReport) -> list[str]:
    """The lane's failures by cause, each group linked to its reproduction and draft.  A
    triage of another run of the lane (its report is not this one) is shown as stale, unlinked."""

    def link(name: object, text: str) -> str:
        return f'<a href="{esc(causes.base + "/" + name)}">{text}</a>' if isinstance(name, str) and name else "-"

    same = Path(causes.report).resolve() == Path(report.path).resolve() if causes.report else False
    out = ['<h2 id="causes-title">Failures by cause</h2>']
    if not same:
        return out + [
            f'<p class="note outcome-failed" id="causes-stale">the triage read {esc(causes.report or "no report")}, '
            f"not this page's {esc(report.path)}: re-run fl-contract triage on it</p>"
        ]
    rows = [
        f"<tr{_attrs(data_group=g.get('ident', ''), data_size=g.get('size', ''))}>"
        f"<td>{esc(g.get('title', ''))}</td><td>{esc(g.get('whose', ''))}</td>"
        f'<td class="num">{esc(g.get("size", ""))}</td>'
        f"<td>{'yes' if g.get('reproduces') else 'no'}</td>"
        f"<td>{link(g.get('script'), 'script')}</td><td>{link(g.get('draft'), 'draft')}</td></tr>"
        for g in causes.groups
    ]
    return out + [
        _table(
            "causes",
            ("group", "for", "cases", "fails standalone", "reproduction", "issue draft"),
            rows,
            "the triage found no failure",
        )
    ]


def lane_page(
    report: LaneReport, probes: list[Row] | None = None, bench: Bench | None = None, causes: Causes | None = None
) -> str:
    """One lane as a page: where it ran, what it did, what failed and what is a known defect.
    ``probes`` defaults to the lane's ``compiler_probes`` step; ``bench`` (see ``ratios``)
    adds the ratio histogram.  Raises FlContractError for a bench of the wrong shape."""
    bench_ratios = ratios(bench) if bench is not None else None
    rows = report.rows
    seen = Counter(row.outcome for row in rows)
    rate = rate_of(report)
    lane = report.lane
    body = [
        f'<h1 id="lane"{_attrs(data_lane=lane)}>fl-contract lane <code>{esc(lane)}</code></h1>',
        f'<p class="note">{len(rows)} cases from <code>{esc(report.path)}</code></p>',
        _provenance(report.properties),
        "<h2>Outcomes</h2>",
    ]
    head = "".join(f"<th>{o}</th>" for o in OUTCOMES)
    counts = "".join(f'<td class="num outcome-{o}"{_attrs(data_outcome=o)}>{seen[o]}</td>' for o in OUTCOMES)
    body.append(
        f'<table id="outcomes"><thead><tr>{head}<th>total</th><th>pass rate</th></tr></thead>'
        f'<tbody><tr>{counts}<td class="num" data-outcome="total">{len(rows)}</td>'
        f'<td class="num rate"{_attrs(data_lane=lane, data_rate=rate.value)}>{esc(rate.shown)}</td>'
        f"</tr></tbody></table>"
    )
    body.append(f'<p class="note" id="rate-formula">{esc(RATE)}.</p>')

    body.append("<h2>Outcomes per op</h2>")
    per_op: dict[str, Counter[str]] = {}
    for row in rows:
        per_op.setdefault(_op(row), Counter())[row.outcome] += 1
    bars = [(op, {part: sum(c[o] for o in outs) for part, outs in PARTS}) for op, c in sorted(per_op.items())]
    body.append(bar_chart("op-outcomes", bars, [part for part, _ in PARTS]))

    body.append("<h2>Failing contracts per op</h2>")
    body.append(
        _table(
            "failing",
            ("op", "contract", "failing / cases", "first failing case", "its message"),
            _failing(rows),
            "no case failed",
        )
    )

    defects, source = _defects(report)
    body.append("<h2>Known defects</h2>")
    if defects:
        body.append(
            f'<p class="note">strict xfails by defect id, {esc(source)}; an xpassed one is a defect that '
            "no longer shows (a fix, or a workaround that now covers it): its entry is due</p>"
        )
    body.append(_table("defects", ("defect", "xfailed", "xpassed"), defects, "no known defect was hit"))

    if causes is not None:
        body += causes_section(causes, report)

    if has_overloads(report):
        try:
            body += scoreboard_section(board_of(report))
        except FlContractError as exc:  # a view: the rest of the page stands, the reason is on it
            body += [
                '<h2 id="scoreboard-title">Overload scoreboard</h2>',
                f'<p class="note outcome-failed" id="scoreboard-error">{esc(exc)}</p>',
            ]

    chosen = [row for row in rows if row.step == PROBES_STEP] if probes is None else probes
    body.append("<h2>Compiler probes</h2>")
    body.append(
        _table(
            "probes",
            ("probe", "outcome", "message"),
            [
                f"<tr{_attrs(data_key=row.key, data_outcome=row.outcome)}>"
                f'<td class="key">{esc(row.key)}</td><td class="outcome-{esc(row.outcome)}">{esc(row.outcome)}</td>'
                f'<td class="message">{esc(row.message)}</td></tr>'
                for row in chosen
            ],
            "no compiler probes in this lane",
        )
    )

    if bench_ratios is not None:
        ordered = sorted(bench_ratios)
        median = ordered[len(ordered) // 2]
        body.append("<h2>Benchmark: fast path / native</h2>")
        body.append(
            f'<p class="note" id="bench-summary"{_attrs(data_cases=len(ordered))}>{len(ordered)} cases, '
            f"median {_fmt(median)}x, worst {_fmt(ordered[-1])}x, "
            f"{sum(r > 1.0 for r in ordered)} slower than native</p>"
        )
        body.append(histogram("bench-ratios", bench_ratios))
    return document(f"fl-contract lane {lane}", body)


# -- the parity matrix ----------------------------------------------------------------


def _cell(op: str, contract: str, lane: str, cell: Cell) -> str:
    counts = ", ".join(f"{name} {n}" for name, n in cell.counts)
    return (
        f'<td class="cell state-{esc(cell.state)}"'
        f"{_attrs(data_lane=lane, data_op=op, data_contract=contract, data_state=cell.state, title=counts or None)}"
        f">{esc(cell.label)}</td>"
    )


def _op_rates(m: Matrix, lane_head: Callable[[str], str]) -> str:
    """op x lane, each cell the op's pass rate on the lane as a bar (a heat map a person reads
    at a glance: which ops a lane breaks)."""
    rows = []
    for op in m.ops:
        cells = []
        for lane in m.lanes:
            rate = m.op_rate(op, lane)
            width = 0 if rate.value is None else round(100 * rate.value)
            colour = "#bbb" if rate.value is None else f"hsl({round(120 * (rate.value or 0))}, 60%, 45%)"
            cells.append(
                f'<td class="op-rate"{_attrs(data_op=op, data_lane=lane, data_rate=rate.value)}>'
                f'<span class="bar" style="display:inline-block;width:{width}px;height:10px;'
                f'background:{colour}"></span> {esc(rate.shown)}</td>'
            )
        rows.append(f"<tr{_attrs(data_op=op)}><td><code>{esc(op)}</code></td>{''.join(cells)}</tr>")
    head = "<th>op</th>" + "".join(lane_head(lane) for lane in m.lanes)
    return f'<table id="op-rates"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def matrix_page(m: Matrix, links: Mapping[str, str] | None = None, boards: Sequence[Board] = ()) -> str:
    """The parity matrix as a page: a pass rate per lane (formula stated), its chart, then op
    x contract x lane coloured by state, and the lanes' overload scoreboards where they differ
    (``boards``).  ``links`` maps a lane to its page (a relative file name) for the column heads."""

    def lane_head(lane: str) -> str:
        href = (links or {}).get(lane)
        name = f'<a href="{esc(href)}">{esc(lane)}</a>' if href else esc(lane)
        return f"<th{_attrs(data_lane=lane)}>{name}</th>"

    body = [
        f'<h1 id="title">fl-contract parity: {len(m.lanes)} lanes, {len(m.rows)} op x contract rows</h1>',
        "<h2>Pass rate per lane</h2>",
        f'<p class="note" id="rate-formula">{esc(RATE)}.</p>',
    ]
    rate_rows = [
        f'<tr class="rate-row"{_attrs(data_lane=r.lane)}>{lane_head(r.lane)}'
        f'<td class="num rate"{_attrs(data_lane=r.lane, data_rate=r.value)}>{esc(r.shown)}</td>'
        + "".join(
            f'<td class="num"{_attrs(data_field=name)}>{n}</td>'
            for name, n in (
                ("passed", r.passed),
                ("failing", r.failing),
                ("xfailed", r.xfailed),
                ("skipped", r.skipped),
            )
        )
        + "</tr>"
        for r in m.rates
    ]
    body.append(
        _table(
            "rates",
            ("lane", "pass rate", "passed", "failing", "known defects (xfailed)", "skipped"),
            rate_rows,
            "no lanes",
        )
    )
    body.append(rate_chart("rate-chart", m.rates))
    body.append("<h2>Pass rate per op and lane</h2>")
    body.append(_op_rates(m, lane_head))
    states = Counter(m.cell(op, contract, lane).state for op, contract in m.rows for lane in m.lanes)
    body.append("<h2>op x contract x lane</h2>")
    body.append(
        '<p class="legend" id="legend">'
        + "".join(
            f'<span class="state-{s}"{_attrs(data_state=s, data_cells=states[s])}>{s} {states[s]}</span>'
            for s in ("failed", "defect", "passed", "skipped", "absent")
        )
        + "</p>"
    )
    head = "<th>op</th><th>contract</th>" + "".join(lane_head(lane) for lane in m.lanes) + "<th>also failing in</th>"
    out = [f'<table id="matrix"><thead><tr>{head}</tr></thead><tbody>']
    for op, contract in m.rows:
        failing = m.also_failing(op, contract)
        out.append(
            f"<tr{_attrs(data_op=op, data_contract=contract)}><td><code>{esc(op)}</code></td>"
            f"<td>{esc(contract)}</td>"
            + "".join(_cell(op, contract, lane, m.cell(op, contract, lane)) for lane in m.lanes)
            + f'<td class="also"{_attrs(data_op=op, data_contract=contract, data_lanes=" ".join(failing))}>'
            f"{esc(', '.join(failing) or '-')}</td></tr>"
        )
    out.append("</tbody></table>")
    body.append("\n".join(out))
    if boards:
        body += across_section(boards, lane_head)
    return document(f"fl-contract parity: {', '.join(m.lanes)}", body)


# -- files ----------------------------------------------------------------------------


def write(path: str | Path, text: str) -> None:
    """The page whole or the old one: a half-written page would be served as a truncated report."""
    files.write_atomic(Path(path), text.encode("utf-8"))


MAX_BENCH_BYTES = 16 * 1024 * 1024  # bench_reductions.py --json of every case is a few hundred KB


def read_bench(path: str) -> list[float]:
    """A benchmark JSON file's ratios; FlContractError, one line, when it is not one.  Read
    as every input is (``files.read_bytes``): a FIFO or a device is refused unread, a file
    past MAX_BENCH_BYTES refused for its size."""
    shown_path = safeyaml.shown(path)
    try:
        raw = files.read_bytes(path, MAX_BENCH_BYTES)
    except OSError as exc:
        raise FlContractError(f"{shown_path}: cannot read the benchmark: {exc.strerror}") from None
    if len(raw) > MAX_BENCH_BYTES:
        raise FlContractError(f"{shown_path}: larger than {MAX_BENCH_BYTES} bytes: not a benchmark JSON (refused)")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise FlContractError(f"{shown_path}: not a benchmark JSON ({one_line(exc, 200)})") from None
    try:
        return ratios(data)
    except FlContractError as exc:
        raise FlContractError(f"{shown_path}: {exc}") from None


def page_name(lane: str, taken: set[str]) -> str:
    """A lane's page file: its name with anything but ``[A-Za-z0-9._-]`` as ``_`` (a lane
    named ``../x`` writes no file outside the folder), made unique among ``taken``."""
    stem = re.sub(r"[^A-Za-z0-9._-]", "_", lane).lstrip(".") or "lane"
    name, n = f"{stem}.html", 1
    while name in taken or name == "matrix.html":
        n += 1
        name = f"{stem}-{n}.html"
    taken.add(name)
    return name


def render(reports_paths: list[str], out_dir: str, bench: str | None = None, triage: Sequence[str] = ()) -> list[str]:
    """Read the reports, write ``LANE.html`` per lane and, for two lanes or more,
    ``matrix.html`` into ``out_dir``; the paths written.  ``triage``: ``fl-contract triage``
    directories, each linked from its lane's page.  Everything is read and checked before
    anything is written, so bad input (FlContractError, one line) leaves no half set."""
    if not reports_paths:
        raise FlContractError("html: no reports given")
    reports = [report for name in reports_paths for report in read(Path(name))]
    by_lane: dict[str, Causes] = {}
    for directory in triage:
        causes = read_causes(directory, out_dir)
        if causes.lane not in {r.lane for r in reports}:
            raise FlContractError(f"--triage {directory}: lane {causes.lane!r} is not among the reports' lanes")
        by_lane[causes.lane] = causes
    ratios_ = [{"ratio": r} for r in read_bench(bench)] if bench is not None else None
    the_matrix = matrix(reports) if len(reports) >= 2 else None
    taken: set[str] = set()
    names = {id(report): page_name(report.lane, taken) for report in reports}
    pages = [
        (names[id(report)], lane_page(report, bench=ratios_, causes=by_lane.get(report.lane))) for report in reports
    ]
    if the_matrix is not None:
        pages.append(
            ("matrix.html", matrix_page(the_matrix, {r.lane: names[id(r)] for r in reports}, view(reports)[0]))
        )
    folder = Path(out_dir)
    written = []
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in pages:
            write(folder / name, text)
            written.append(str(folder / name))
    except OSError as exc:
        raise FlContractError(f"{out_dir}: cannot write the HTML report: {exc.strerror or exc}") from None
    return written
