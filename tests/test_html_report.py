"""The HTML report (results/html.py) as a browser sees it: hand-written JUnit reports of
three lanes, every matrix state among them, rendered and loaded in headless Chromium; the
dumped DOM must say what the XML says (counted here straight from the XML, not through
parity.py) and what parity.matrix computed, and text from a report must stay text."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from xml.sax.saxutils import quoteattr

import pytest

from pytest_fl_contract.results import cases, html, parity
from pytest_fl_contract.util import FlContractError

LANES = ("lane-a", "lane-b", "lane-c")
PROVENANCE = {
    "version_torch": "2.13.0+cpu",
    "version_triton": "3.7.1",
    "version_flag_gems": "5.0.2",
    "version_pytest_fl_contract": "0.1.0",
    "fl_platform": "cpu",
    "fl_device": "cpu",
}
XPASS = "[XPASS(strict)] known defect nan_dropped_by_max"
HOSTILE = "<script>alert(1)</script> \"quoted\" & 'single' </td></table><img src=x onerror=alert(2)>"

# (module, name, op, contract, defect) -> the outcome per lane (None: the lane has no such case)
REDUCTIONS: list[tuple[tuple[str, str, str, str, str | None], tuple[str | None, ...]]] = [
    (("reductions.test_dims", "test_every_dim[sum-2x3-d0]", "sum", "dims", None), ("passed", "failed", "passed")),
    (("reductions.test_dims", "test_every_dim[sum-2x3-d1]", "sum", "dims", None), ("passed", "passed", "passed")),
    (("reductions.test_nan", "test_nan[max-4]", "max", "nan", "nan_dropped_by_max"), ("xfailed", "xfailed", "xpassed")),
    (("reductions.test_out", "test_out[argmax]", "argmax", "out", None), ("skipped", "skipped", None)),
    (("reductions.test_empty", "test_empty[mean]", "mean", "empty", None), ("error", "passed", "skipped")),
]
PROBE = ("probes.test_compiler", "test_probe[seed_masked_load]")
PROBE_OUTCOMES = ("passed", "failed", "passed")
# what each cell must read: the parity rules applied by hand to the table above
EXPECTED = {
    ("sum", "dims"): (("passed", "passed 2/2"), ("failed", "failed 1/2"), ("passed", "passed 2/2")),
    ("max", "nan"): (
        ("defect", "known defect nan_dropped_by_max (1/1)"),
        ("defect", "known defect nan_dropped_by_max (1/1)"),
        ("failed", "failed 1/1"),
    ),
    ("argmax", "out"): (
        ("skipped", "skipped: argmax has no out= binding"),
        ("skipped", "skipped: argmax has no out= binding"),
        ("absent", "-"),
    ),
    ("mean", "empty"): (
        ("failed", "failed 1/1"),
        ("passed", "passed 1/1"),
        ("skipped", "skipped: mean: no empty input"),
    ),
    ("-", "compiler"): (("passed", "passed 1/1"), ("failed", "failed 1/1"), ("passed", "passed 1/1")),
}
ALSO = {
    ("sum", "dims"): "lane-b",
    ("max", "nan"): "lane-c",
    ("argmax", "out"): "-",
    ("mean", "empty"): "lane-a",
    ("-", "compiler"): "lane-b",
}
MESSAGES = {
    "failed": "AssertionError: Tensor-likes are not close!",
    "error": "RuntimeError: setup broke",
    "xfailed": "known defect nan_dropped_by_max on cpu: max drops NaN",
}
SKIPS = {"argmax": "argmax has no out= binding", "mean": "mean: no empty input"}


# -- reports written by hand, in the shape the lanes write them ------------------------


def _result(outcome: str, op: str, message: str | None = None) -> str:
    if outcome == "passed":
        return ""
    if outcome == "failed":
        return f"<failure message={quoteattr(message or MESSAGES['failed'])}>trace</failure>"
    if outcome == "xpassed":
        return f"<failure message={quoteattr(XPASS)} />"
    if outcome == "error":
        return f"<error message={quoteattr(MESSAGES['error'])}>trace</error>"
    if outcome == "xfailed":
        return f'<skipped type="pytest.xfail" message={quoteattr(MESSAGES["xfailed"])} />'
    return f'<skipped type="pytest.skip" message={quoteattr(SKIPS[op])} />'


def _case(lane: str, module: str, name: str, body: str) -> str:
    return f'<testcase classname={quoteattr(f"{lane}.{module}")} name={quoteattr(name)} time="0.010">{body}</testcase>'


def lane_xml(index: int, lane: str | None = None) -> str:
    """LANE.xml of lane ``index``: a reduction_contract step (with provenance and fl_cases)
    and a compiler_probes step with no fl_cases, as the real reports' probe step has."""
    lane = lane or LANES[index]
    tags, reductions = {}, []
    for (module, name, op, contract, defect), outcomes in REDUCTIONS:
        outcome = outcomes[index]
        if outcome is None:
            continue
        tags[f"{module}::{name}"] = {"op": op, "contract": contract, "defect": defect}
        reductions.append(_case(lane, module, name, _result(outcome, op)))
    props = dict(PROVENANCE, fl_cases=json.dumps(tags))
    properties = "".join(f"<property name={quoteattr(k)} value={quoteattr(v)} />" for k, v in props.items())
    probe = _case(lane, *PROBE, _result(PROBE_OUTCOMES[index], "-", "AssertionError: result 28, expected 6"))
    return (
        "<?xml version='1.0' encoding='utf-8'?>\n"
        f"<testsuites name={quoteattr(lane)}>"
        f'<testsuite name={quoteattr(f"{lane}/reduction_contract")} tests="{len(reductions)}">'
        f"<properties>{properties}</properties>{''.join(reductions)}</testsuite>"
        f'<testsuite name={quoteattr(f"{lane}/compiler_probes")} tests="1">{probe}</testsuite></testsuites>\n'
    )


@pytest.fixture
def reports(tmp_path: Path) -> Path:
    folder = tmp_path / "reports"
    folder.mkdir()
    for i, lane in enumerate(LANES):
        (folder / f"{lane}.xml").write_text(lane_xml(i), encoding="utf-8")
    return folder


def outcomes_from_xml(path: Path) -> Counter[str]:
    """The expected side, read straight from the XML: the first result element decides."""
    seen: Counter[str] = Counter()
    for case in ET.parse(path).getroot().iter("testcase"):
        result = next((c for c in case if c.tag in ("failure", "error", "skipped")), None)
        if result is None:
            seen["passed"] += 1
        elif result.tag == "failure":
            seen["xpassed" if result.get("message", "").startswith("[XPASS(strict)]") else "failed"] += 1
        elif result.tag == "error":
            seen["error"] += 1
        else:
            seen["xfailed" if result.get("type", "").endswith("xfail") else "skipped"] += 1
    return seen


def ops_from_xml(path: Path) -> dict[str, Counter[str]]:
    """Per op (from fl_cases; an untagged case has none) the stacked bar's four parts."""
    root = ET.parse(path).getroot()
    out: dict[str, Counter[str]] = {}
    for suite in root.iter("testsuite"):
        tags = {}
        for prop in suite.iter("property"):
            if prop.get("name") == "fl_cases":
                tags = json.loads(prop.get("value", "{}"))
        for case in suite.iter("testcase"):
            ident = case.get("classname", "").split(".", 1)[1] + "::" + case.get("name", "")
            op = (tags.get(ident) or {}).get("op") or "(no op)"
            result = next((c for c in case if c.tag in ("failure", "error", "skipped")), None)
            if result is None:
                part = "passed"
            elif result.tag in ("failure", "error"):
                part = "failing"
            else:
                part = "xfailed" if result.get("type", "").endswith("xfail") else "skipped"
            out.setdefault(op, Counter())[part] += 1
    return out


def shown(passed: int, failing: int) -> str:
    return f"{100 * passed / (passed + failing):.1f}%" if passed + failing else "-"


# -- a tiny DOM of what Chromium dumped -------------------------------------------------

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class Node:
    def __init__(self, tag: str, attrs: dict[str, str], parent: Node | None) -> None:
        self.tag, self.attrs, self.parent = tag, attrs, parent
        self.children: list[Node | str] = []

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def walk(self) -> Iterator[Node]:
        for child in self.children:
            if isinstance(child, Node):
                yield child
                yield from child.walk()

    def find(self, tag: str | None = None, cls: str | None = None, **attrs: str) -> list[Node]:
        want = {k.replace("_", "-"): v for k, v in attrs.items()}
        return [
            n
            for n in self.walk()
            if (tag is None or n.tag == tag)
            and (cls is None or cls in n.attrs.get("class", "").split())
            and all(n.attrs.get(k) == v for k, v in want.items())
        ]

    def one(self, tag: str | None = None, cls: str | None = None, **attrs: str) -> Node:
        found = self.find(tag, cls, **attrs)
        assert len(found) == 1, (tag, cls, attrs, len(found))
        return found[0]


class DomBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {}, None)
        self.current = self.root

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs}, self.current)
        self.current.children.append(node)
        if tag not in VOID:
            self.current = node

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.current.children.append(Node(tag, {k: v or "" for k, v in attrs}, self.current))

    def handle_endtag(self, tag: str) -> None:
        node: Node | None = self.current
        while node is not None and node.tag != tag:
            node = node.parent
        if node is not None and node.parent is not None:
            self.current = node.parent

    def handle_data(self, data: str) -> None:
        self.current.children.append(data)


def dom(text: str) -> Node:
    builder = DomBuilder()
    builder.feed(text)
    builder.close()
    return builder.root


# -- Chromium ------------------------------------------------------------------------


def _browser() -> str | None:
    return next(
        (
            found
            for name in ("chromium", "chromium-browser")
            if (found := shutil.which(name) or (f"/usr/bin/{name}" if os.path.exists(f"/usr/bin/{name}") else None))
        ),
        None,
    )


@pytest.fixture(scope="session")
def chromium() -> str:
    """The browser, or a skip - a failure where CI asks for it (FL_REQUIRE_CHROMIUM=1), which
    also waits (FL_CHROMIUM_WAIT_S, 300 s there) for an install still running."""
    required = os.environ.get("FL_REQUIRE_CHROMIUM") == "1"
    deadline = time.monotonic() + float(os.environ.get("FL_CHROMIUM_WAIT_S", "300" if required else "0"))
    found = _browser()
    while found is None and time.monotonic() < deadline:
        time.sleep(5)
        found = _browser()
    if found is None:
        if required:
            pytest.fail("chromium not installed, and FL_REQUIRE_CHROMIUM=1 asks for the browser checks")
        pytest.skip("chromium not installed (apt-get install chromium); FL_REQUIRE_CHROMIUM=1 makes this a failure")
    return found


def browse(browser: str, page: Path, tmp_path: Path, *args: str) -> str:
    profile = tmp_path / f"chromium-profile-{len(list(tmp_path.glob('chromium-profile-*')))}"
    done = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
            f"--user-data-dir={profile}",
            *args,
            page.resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def dump_dom(browser: str, page: Path, tmp_path: Path) -> Node:
    text = browse(browser, page, tmp_path, "--dump-dom")
    assert "</html>" in text, text[-2000:]
    return dom(text)


# -- the browser checks ----------------------------------------------------------------


@pytest.mark.xdist_group("chromium")
def test_the_matrix_in_a_browser_is_what_the_junit_says(reports: Path, tmp_path: Path, chromium: str) -> None:
    out = tmp_path / "html"
    written = html.render([str(reports)], str(out), None)
    assert sorted(Path(p).name for p in written) == ["lane-a.html", "lane-b.html", "lane-c.html", "matrix.html"]
    m = parity.matrix(cases.read(reports))
    page = dump_dom(chromium, out / "matrix.html", tmp_path)

    cells = {
        (n.attrs["data-op"], n.attrs["data-contract"], n.attrs["data-lane"]): (n.attrs["data-state"], n.text())
        for n in page.one("table", id="matrix").find("td", cls="cell")
    }
    from_parity = {
        (op, contract, lane): (m.cell(op, contract, lane).state, m.cell(op, contract, lane).label)
        for op, contract in m.rows
        for lane in m.lanes
    }
    by_hand = {
        (op, contract, lane): EXPECTED[(op, contract)][i] for op, contract in EXPECTED for i, lane in enumerate(LANES)
    }
    assert cells == from_parity == by_hand
    assert {state for state, _ in cells.values()} == {"failed", "defect", "passed", "skipped", "absent"}
    for (op, contract, lane), (state, _label) in cells.items():
        assert f"state-{state}" in page.one("td", data_op=op, data_contract=contract, data_lane=lane).attrs["class"]
    also = {(n.attrs["data-op"], n.attrs["data-contract"]): n.text() for n in page.find("td", cls="also")}
    assert also == ALSO
    assert [n.attrs["data-lane"] for n in page.one("table", id="matrix").find("th") if "data-lane" in n.attrs] == list(
        LANES
    )

    assert page.one(id="rate-formula").text() == parity.RATE + "."
    for lane, rate in zip(LANES, m.rates):
        seen = outcomes_from_xml(reports / f"{lane}.xml")
        failing = seen["failed"] + seen["error"] + seen["xpassed"]
        row = page.one("tr", cls="rate-row", data_lane=lane)
        fields = {n.attrs["data-field"]: int(n.text()) for n in row.find("td") if "data-field" in n.attrs}
        assert fields == {
            "passed": seen["passed"],
            "failing": failing,
            "xfailed": seen["xfailed"],
            "skipped": seen["skipped"],
        }
        assert fields == {
            "passed": rate.passed,
            "failing": rate.failing,
            "xfailed": rate.xfailed,
            "skipped": rate.skipped,
        }
        assert row.one("td", cls="rate").text() == shown(seen["passed"], failing) == rate.shown
        bar = page.one("rect", cls="rate-bar", data_lane=lane)
        assert float(bar.attrs["data-rate"]) == pytest.approx(seen["passed"] / (seen["passed"] + failing))
    assert page.find("a", href="lane-a.html")  # the column heads open the lane pages
    # per op and lane, the pass rate over every contract, from the XML by hand
    for lane in LANES:
        for op, seen in ops_from_xml(reports / f"{lane}.xml").items():
            op = "-" if op == "(no op)" else op
            cell = page.one("td", cls="op-rate", data_op=op, data_lane=lane)
            assert cell.text().strip() == shown(seen["passed"], seen["failing"]) == m.op_rate(op, lane).shown

    shot = tmp_path / "matrix.png"
    browse(chromium, out / "matrix.html", tmp_path, f"--screenshot={shot}", "--window-size=1280,900")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 5 * 1024


@pytest.mark.xdist_group("chromium")
def test_a_lane_page_in_a_browser_counts_what_the_junit_holds(reports: Path, tmp_path: Path, chromium: str) -> None:
    bench = tmp_path / "bench.json"
    values = [0.5, 0.8, 0.9, 0.95, 1.0, 1.2, 2.5]
    bench.write_text(
        json.dumps({"rows": [{"fast": v, "native": 1.0} for v in values[:3]] + [{"ratio": v} for v in values[3:]]}),
        encoding="utf-8",
    )
    out = tmp_path / "html"
    html.render([str(reports / "lane-c.xml")], str(out), str(bench))
    assert sorted(p.name for p in out.iterdir()) == ["lane-c.html"]  # one lane: no matrix
    page = dump_dom(chromium, out / "lane-c.html", tmp_path)
    xml = reports / "lane-c.xml"
    seen = outcomes_from_xml(xml)

    assert page.one("h1", id="lane").attrs["data-lane"] == "lane-c"
    assert {n.attrs["data-property"]: n.text() for n in page.one("dl", id="provenance").find("dd")} == PROVENANCE
    counts = {
        n.attrs["data-outcome"]: int(n.text())
        for n in page.one("table", id="outcomes").find("td")
        if "data-outcome" in n.attrs
    }
    assert counts == {**{o: seen[o] for o in html.OUTCOMES}, "total": sum(seen.values())}
    assert page.one("td", cls="rate").text() == shown(seen["passed"], seen["failed"] + seen["error"] + seen["xpassed"])

    bars: dict[str, Counter[str]] = {}
    for rect in page.one("svg", id="op-outcomes").find("rect", cls="bar"):
        bars.setdefault(rect.attrs["data-label"], Counter())[rect.attrs["data-part"]] = int(rect.attrs["data-count"])
    assert bars == ops_from_xml(xml)

    failing = {
        (n.attrs["data-op"], n.attrs["data-contract"]): int(n.attrs["data-failing"])
        for n in page.one("table", id="failing").find("tr")
        if "data-op" in n.attrs
    }
    assert failing == {("max", "nan"): 1}
    assert XPASS in page.one("table", id="failing").text()
    defects = page.one("table", id="defects").one("tr", data_defect="nan_dropped_by_max")
    assert (defects.attrs["data-xfailed"], defects.attrs["data-xpassed"]) == ("0", "1")
    probe = page.one("table", id="probes").one("tbody").one("tr")
    assert (probe.attrs["data-key"], probe.attrs["data-outcome"]) == ("compiler_probes/" + "::".join(PROBE), "passed")

    bins = page.one("svg", id="bench-ratios").find("rect", cls="bin")
    assert sum(int(b.attrs["data-count"]) for b in bins) == len(values)
    assert page.one("line", id="bench-ratios-one") is not None
    assert page.one(id="bench-summary").attrs["data-cases"] == str(len(values))


@pytest.mark.xdist_group("chromium")
def test_the_overload_scoreboard_in_a_browser_is_what_the_cases_say(tmp_path: Path, chromium: str) -> None:
    """The lane page's scoreboard section and the matrix page's overloads across lanes, read as a
    DOM: each overload's status is the one its synthetic cases give (test_scoreboard's table)."""
    from pytest_fl_contract.results import scoreboard

    from .test_scoreboard import EXPECTED, REGISTERED, SPEC
    from .test_scoreboard import lane_xml as overload_xml

    folder = tmp_path / "reports"
    folder.mkdir()
    (folder / "ov-a.xml").write_text(overload_xml("ov-a", SPEC, registered=REGISTERED), encoding="utf-8")
    (folder / "ov-b.xml").write_text(
        overload_xml("ov-b", [("mm", "PASS", "passed"), ("abs", "PASS", "passed")], inline=False), encoding="utf-8"
    )
    out = tmp_path / "html"
    html.render([str(folder)], str(out))
    board = scoreboard.board_of(cases.read_one(folder / "ov-a.xml"))
    page = dump_dom(chromium, out / "ov-a.html", tmp_path)
    summary = page.one("p", id="scoreboard-summary")
    assert summary.text() == board.summary() and summary.attrs["data-registered"] == str(len(REGISTERED))
    assert {s: int(summary.attrs[f"data-{s.lower()}"]) for s in scoreboard.STATUSES} == board.counts()
    rows = page.one("table", id="scoreboard").find("tr")
    got = {
        r.attrs["data-overload"]: (r.attrs["data-status"], int(r.attrs["data-passed"]), int(r.attrs["data-ran"]))
        for r in rows
        if "data-overload" in r.attrs
    }
    assert got == EXPECTED
    assert page.one("tr", data_overload="softmax.int").attrs["data-known-only"] == "yes"
    assert "flag_gems 5.0.2" in page.one("p", id="scoreboard-provenance").text()

    matrix = dump_dom(chromium, out / "matrix.html", tmp_path)
    lanes = {
        n.attrs["data-lane"]: n.text()
        for n in matrix.one("table", id="overload-summaries").find("tr")
        if "data-lane" in n.attrs
    }
    assert lanes["ov-a"].endswith(board.summary())
    differ = matrix.one("table", id="overload-parity")
    assert {r.attrs["data-overload"] for r in differ.find("tr") if "data-overload" in r.attrs} == {"mm"}
    cells = {c.attrs["data-lane"]: c.attrs["data-status"] for c in differ.find("td", cls="cell")}
    assert cells == {"ov-a": "FAILED", "ov-b": "STRICT"}
    assert matrix.one("p", id="overload-parity-count").attrs["data-differ"] == "1"


@pytest.mark.xdist_group("chromium")
def test_hostile_report_text_renders_as_text(tmp_path: Path, chromium: str) -> None:
    lane = 'evil"<b>&lane'
    name = 'test_x[<script>alert(3)</script>-"q"-&amp]'
    xml = (
        "<?xml version='1.0' encoding='utf-8'?>\n"
        f"<testsuites><testsuite name={quoteattr(lane + '/reduction_contract')}><properties>"
        f'<property name="version_torch" value={quoteattr(HOSTILE)} />'
        f'<property name="fl_cases" value={quoteattr(json.dumps({"reductions.test_x::" + name: {"op": HOSTILE, "contract": "c&<i>"}}))} />'
        f"</properties>{_case(lane, 'reductions.test_x', name, _result('failed', '-', HOSTILE))}"
        f"{_case(lane, 'reductions.test_y', 'test_y', _result('passed', '-'))}</testsuite></testsuites>\n"
    )
    (tmp_path / "evil.xml").write_text(xml, encoding="utf-8")
    (tmp_path / "good.xml").write_text(lane_xml(0), encoding="utf-8")
    out = tmp_path / "html"
    written = html.render([str(tmp_path / "evil.xml"), str(tmp_path / "good.xml")], str(out), None)
    assert all(Path(p).parent == out for p in written)  # the lane's name makes no path
    evil_page = next(Path(p) for p in written if Path(p).name.startswith("evil"))
    for path in (evil_page, out / "matrix.html"):
        raw = path.read_text(encoding="utf-8")
        assert "<script" not in raw.lower() and "<img" not in raw.lower() and "<b>" not in raw
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in raw
        page = dump_dom(chromium, path, tmp_path)
        assert not page.find("script") and not page.find("img") and not page.find("b") and not page.find("i")
    page = dump_dom(chromium, evil_page, tmp_path)
    assert page.one("h1", id="lane").attrs["data-lane"] == lane
    assert page.one("dd", data_property="version_torch").text() == HOSTILE
    row = page.one("table", id="failing").one("tr", data_op=HOSTILE, data_contract="c&<i>")
    assert row.one("td", cls="message").text() == HOSTILE
    assert f"reduction_contract/reductions.test_x::{name}" in row.one("td", cls="key").text()
    matrix = dump_dom(chromium, out / "matrix.html", tmp_path)
    assert matrix.one("td", cls="cell", data_lane=lane, data_op=HOSTILE, data_contract="c&<i>").text() == "failed 1/1"


# -- without a browser -----------------------------------------------------------------


def test_pages_are_one_self_contained_document(reports: Path, tmp_path: Path) -> None:
    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps([{"ratio": 0.7}, {"ratio": 1.3}]), encoding="utf-8")
    for path in html.render([str(reports)], str(tmp_path / "html"), str(bench)):
        raw = Path(path).read_bytes().decode("utf-8")
        assert (
            raw.startswith("<!DOCTYPE html>") and '<meta charset="utf-8">' in raw and raw.rstrip().endswith("</html>")
        )
        assert "http://" not in raw and "https://" not in raw
        assert 'src="' not in raw and "url(" not in raw and '="//' not in raw and "<script" not in raw
        assert "Content-Security-Policy" in raw and "<svg" in raw


def test_bad_input_is_one_line_and_writes_nothing(reports: Path, tmp_path: Path) -> None:
    out = tmp_path / "html"
    not_json = tmp_path / "bench.txt"
    not_json.write_text("not json {", encoding="utf-8")
    shapeless = tmp_path / "bench.json"
    for bench, data in (
        (not_json, None),
        (shapeless, {"rows": []}),
        (shapeless, [{"ratio": "fast"}]),
        (shapeless, [{"ratio": float("nan")}]),
        (shapeless, [1.0, 2.0]),
        (shapeless, "1.0"),
    ):
        if data is not None:
            bench.write_text(json.dumps(data), encoding="utf-8")
        with pytest.raises(FlContractError) as caught:
            html.render([str(reports)], str(out), str(bench))
        assert "\n" not in str(caught.value) and str(bench) in str(caught.value)
    with pytest.raises(FlContractError, match="no such report"):
        html.render([str(tmp_path / "missing.xml")], str(out), None)
    with pytest.raises(FlContractError, match="given twice"):
        html.render([str(reports / "lane-a.xml"), str(reports / "lane-a.xml")], str(out), None)
    assert not out.exists()


def test_page_names_stay_in_the_folder() -> None:
    taken: set[str] = set()
    assert [html.page_name(lane, taken) for lane in ("../x", "a/b", "a_b", "matrix", ".", "cpu")] == [
        "_x.html",
        "a_b.html",
        "a_b-2.html",
        "matrix-2.html",
        "lane.html",
        "cpu.html",
    ]


def test_write_replaces_the_page_whole(tmp_path: Path) -> None:
    target = tmp_path / "page.html"
    target.write_text("old", encoding="utf-8")
    html.write(target, "<!DOCTYPE html>é")
    assert target.read_bytes() == "<!DOCTYPE html>é".encode() and [p.name for p in tmp_path.iterdir()] == ["page.html"]
