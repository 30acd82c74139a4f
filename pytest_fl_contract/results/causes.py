"""A lane's failures grouped by cause: a short list, not one line per case.

A failing case's signature is the first of these that holds:

1. the FlagGems defect the registry decided for the case (its ``fl_cases`` tag: a strict
   xfail that failed otherwise, an xpass, or, with ``registered``, a strict xfail itself);
2. a compiler defect of the lane's platform (listed by the registry, or injected on an
   emulated lane) whose feature the case's op relies on (``ROWS.reach``), when the case
   failed as that defect makes a case fail (its contract's assertion, a device fault or an
   exception the registry lists for it); it says whether the lane's compiler probes failed
   for that defect ("probe-implicated") or only the registry lists it;
   one group per op family (a reduction's tile, a norm's and a matmul's are three reports);
3. else the failure itself: its exception type and its message with numbers, quoted text
   and addresses taken out, within the op's family - so "out of shared memory, Required:
   426008" and "... 327696" are one group across every contract that met it.

The probe cases that failed for a compiler defect join that defect's group: they are its
standalone evidence.  Groups come largest first; a group lists its ops and contracts with
counts and every case key.  Pure functions of a report's rows and the registries.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .cases import FAILING, Row

PROBE_EVIDENCE = re.compile(r"evidence for compiler: ([A-Za-z0-9_.-]+)")
_EXCEPTION = re.compile(r"^\s*(?:[\w.]+\.)?([A-Z]\w*(?:Error|Exception|Fault|Lost|Resources|Interrupt|Exit))\b")


@dataclass(frozen=True)
class Signature:
    cause: str  # "compiler:ID", "flag_gems:ID" or "failure"
    error: str  # the exception type the cases failed with
    text: str = ""  # for a "failure" cause: the normalised message
    family: str = ""  # for a "failure" cause: the op family (ops of two families are two groups)

    @property
    def whose(self) -> str:
        return self.cause.split(":", 1)[0] if ":" in self.cause else "unknown"

    @property
    def defect(self) -> str | None:
        return self.cause.split(":", 1)[1] if ":" in self.cause else None

    def title(self) -> str:
        if self.whose == "compiler":
            kernels = f" in {self.family} kernels" if self.family else ""
            return f"compiler defect {self.defect}{kernels} ({self.error})"
        if self.whose == "flag_gems":
            return f"FlagGems defect {self.defect} ({self.error})"
        return f"{self.error}: {self.text}" + (f" ({self.family})" if self.family else "")


@dataclass(frozen=True)
class Group:
    signature: Signature
    keys: tuple[str, ...]  # every case, in the report's order
    ops: tuple[tuple[str, int], ...]  # op -> cases, most first
    contracts: tuple[tuple[str, int], ...]
    probes: tuple[str, ...] = ()  # probe cases that failed for this group's compiler defect
    evidence: str = ""  # how the cause was decided, one line
    messages: tuple[str, ...] = field(default_factory=tuple)  # a few distinct failure messages

    @property
    def size(self) -> int:
        return len(self.keys)

    @property
    def ident(self) -> str:
        """A short stable name for files: the cause, or the error and a digest of the text."""
        import hashlib

        s = self.signature
        base = (
            (f"{s.defect}-{s.family}" if s.family else s.defect)
            if s.defect
            else f"{s.error}-{hashlib.sha256((s.text + s.family).encode()).hexdigest()[:8]}"
        )
        return re.sub(r"[^A-Za-z0-9_.-]+", "-", base)


_MISMATCH = re.compile(r"^known defect \S+ (?:fails with .*?, not|fails contracts in their call, not in \w+:) ")


def unwrapped(message: str) -> str:
    """A failure message less the plugin's "known defect X fails with Y, not" preamble: what
    the case really failed with (a strict xfail whose defect did not show)."""
    return _MISMATCH.sub("", message, count=1)


def op_of(row: Row) -> str | None:
    """The case's op: its tag, else the first field of its parameter id where that is a
    registry row (a report written before the cases were tagged)."""
    if row.op:
        return row.op
    from ..registry import ROWS

    first = row.key.partition("[")[2].rstrip("]").split("-", 1)[0]
    return first if first in ROWS.names() else None


def error_of(message: str) -> str:
    """The exception type a failure message names (``AssertionError`` for an assertion
    pytest wrote without one: "assert ...", "Tensor-likes are not close")."""
    found = _EXCEPTION.match(message)
    if found:
        return found.group(1)
    return "AssertionError" if message.strip() else "no message"


def normalised(message: str, limit: int = 100) -> str:
    """A message with what varies from case to case taken out: numbers, hex addresses,
    quoted text, shapes and index tuples."""
    text = message.split("\n", 1)[0]
    text = re.sub(r"^\s*(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception|Fault|Lost|Resources)\s*:?\s*", "", text)
    text = re.sub(r"0x[0-9a-fA-F]+", "#", text)
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "'#'", text)
    text = re.sub(r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?", "#", text)
    text = re.sub(r"\(#(?:, #)*\)|\[#(?:, #)*\]", "#", text)
    return " ".join(text.split())[:limit]


def probe_defects(rows: Iterable[Row]) -> dict[str, list[str]]:
    """Compiler defect id -> the probe cases that failed as evidence for it."""
    found: dict[str, list[str]] = {}
    for row in rows:
        if row.failing:
            match = PROBE_EVIDENCE.search(row.message)
            if match:
                found.setdefault(match.group(1), []).append(row.key)
    return found


@dataclass(frozen=True)
class Lane:
    """What grouping needs to know of the lane: its compiler defects (listed or injected),
    the ops each reaches, the exceptions each may fail with, and each op's family."""

    compiler: Mapping[str, frozenset[str]]  # defect id -> ops reached
    fails_with: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    families: Mapping[str, str] = field(default_factory=dict)  # op -> family name
    injected: tuple[str, ...] = ()


def lane_of(properties: Mapping[str, str], registry: Any) -> Lane:
    """The lane's compiler defects from its report's properties (``fl_platform``,
    ``fl_emulated``) and the platform registry; the op rows say which ops each reaches."""
    from ..registry import ROWS

    platform = None
    name = properties.get("fl_platform")
    if name:
        try:
            platform = registry.get(name)
        except Exception:  # a platform this registry does not know: no compiler defects known
            platform = None
    emulated = properties.get("fl_emulated", "no")
    injected = (
        tuple(d.strip() for d in emulated.partition("defects:")[2].split(",") if d.strip() and d.strip() != "none")
        if emulated != "no"
        else ()
    )
    entries = {d.id: d for d in (platform.defects if platform is not None else ()) if not d.flag_gems}
    for defect_id in injected:
        entry = (platform.defect(defect_id) if platform is not None else None) or registry.defects.get(defect_id)
        if entry is not None:
            entries.setdefault(defect_id, entry)
    compiler = {d: frozenset(ROWS.reach(e)) for d, e in entries.items()}
    families = {row.name: getattr(row, "family", "") or row.suite for row in ROWS.rows()}
    return Lane(
        compiler,
        {
            d: tuple(e.fails_with) + (("EmulatedDeviceFault", "DeviceLost") if e.faults else ())
            for d, e in entries.items()
        },
        families,
        injected,
    )


def signature(
    row: Row, lane: Lane, probed: Mapping[str, Sequence[str]], registered: bool = False, twin_failed: bool = False
) -> Signature:
    """``twin_failed``: the case failed on the twin lane too (the same suite where the compiler
    defect is not: the plain CPU lane for an emulated one), so it is not the compiler's."""
    message = unwrapped(row.message)
    error = error_of(message)
    op = op_of(row)
    if row.defect and (row.outcome in FAILING or registered):
        return Signature(f"flag_gems:{row.defect}", error if row.outcome != "xfailed" else "registered")
    match = PROBE_EVIDENCE.search(row.message)
    if match:
        return Signature(f"compiler:{match.group(1)}", error)
    for defect, ops in ({} if twin_failed else lane.compiler).items():
        if op in ops and (error == "AssertionError" or error in lane.fails_with.get(defect, ())):
            # one group per op family: each family's kernels are their own report (a reduction's
            # (TILE_N, TILE_K) tile, a norm's row tile, a matmul's K tail)
            return Signature(f"compiler:{defect}", error, family=lane.families.get(op or "", ""))
    return Signature("failure", error, normalised(message), lane.families.get(op or "", ""))


def group(rows: Iterable[Row], lane: Lane, registered: bool = False, twin: Iterable[Row] = ()) -> list[Group]:
    """The failing rows (with ``registered``, also strict xfails of a registered FlagGems
    defect) grouped by ``signature``, largest first."""
    rows = list(rows)
    probed = probe_defects(rows)
    chosen = [r for r in rows if r.failing or (registered and r.outcome == "xfailed" and r.defect)]
    twin_failing = {_ident(r.key) for r in twin if r.failing}
    by: dict[Signature, list[Row]] = {}
    for row in chosen:
        by.setdefault(signature(row, lane, probed, registered, _ident(row.key) in twin_failing), []).append(row)
    out = []
    for sig, members in by.items():
        defect = sig.defect
        probes = tuple(probed.get(defect, ())) if sig.whose == "compiler" and defect else ()
        if sig.whose == "compiler":
            how = (
                f"the lane's compiler probes failed for {defect} ({len(probes)} probe cases)"
                if probes
                else f"the platform lists {defect} and these ops rely on its feature; no probe of it failed here"
            )
            if defect in lane.injected:
                how += "; the emulator injected it"
        elif sig.whose == "flag_gems":
            how = f"the registry decided {defect} for these cases (their fl_cases tag)"
        else:
            how = "the same exception and message (numbers and names taken out)"
        messages = tuple(dict.fromkeys(r.message for r in members))[:3]
        out.append(
            Group(
                sig,
                tuple(r.key for r in members),
                _counts(op_of(r) for r in members),
                _counts(r.contract for r in members),
                probes,
                how,
                messages,
            )
        )
    return sorted(out, key=lambda g: (-g.size, g.signature.cause, g.signature.text))


def _ident(key: str) -> str:
    return key.split("/", 1)[1] if "/" in key.split("::", 1)[0] else key


def _counts(values: Iterable[str | None]) -> tuple[tuple[str, int], ...]:
    return tuple(Counter(v or "-" for v in values).most_common())


def shown_counts(counts: Sequence[tuple[str, int]], limit: int = 8) -> str:
    head = ", ".join(f"{name} {n}" for name, n in counts[:limit])
    return head + (f", and {len(counts) - limit} more" if len(counts) > limit else "")


def markdown(groups: Sequence[Group], links: Mapping[str, tuple[str, str]] | None = None) -> list[str]:
    """The group list as the lane summary shows it (``links``: group ident -> (script, draft))."""
    if not groups:
        return ["No failing cases: nothing to group."]
    from ..util import md_text

    lines = [
        f"**{sum(g.size for g in groups)} failing cases in {len(groups)} groups**",
        "",
        "| # | cases | cause | whose | ops | contracts | reproduction |",
        "|---|---|---|---|---|---|---|",
    ]
    for n, g in enumerate(groups, 1):
        link = (links or {}).get(g.ident)
        shown = f"[script]({link[0]}), [draft]({link[1]})" if link else "-"
        lines.append(
            f"| {n} | {g.size} | {md_text(g.signature.title(), 300)} | {g.signature.whose} | "
            f"{md_text(shown_counts(g.ops), 400)} | {md_text(shown_counts(g.contracts), 400)} | {shown} |"
        )
    return lines


def lane_summary(report_path: str, lane: str, registry: Any = None) -> str:
    """The lane summary's "failures by cause" section for a written LANE.xml: the groups,
    not the cases ("" when nothing failed).  A view, never a verdict: a report it cannot read
    is one line here and decides nothing."""
    from pathlib import Path

    from ..util import FlContractError, md_code, md_text
    from .cases import read_one

    try:
        report = read_one(Path(report_path))
        if registry is None:
            from ..config.platforms import load_registry

            registry = load_registry(entry_points=False)
        props = next(
            (p for p in [report.properties, *report.step_properties.values()] if p.get("fl_platform")),
            report.properties,
        )
        found = group(report.rows, lane_of(props, registry))
    except (FlContractError, OSError, ValueError) as exc:
        return f"\n**failures by cause: {md_text(str(exc), 400)}**\n"
    if not found:
        return ""
    return (
        "\n#### Failures by cause\n\n"
        + "\n".join(markdown(found))
        + f"\n\nReproductions and issue drafts: {md_code(f'fl-contract triage {report_path}')}\n"
    )


def page(lane: str, report: str, groups: Sequence[Group], links: Mapping[str, tuple[str, str]]) -> str:
    """The groups as one self-contained HTML page (``groups.html`` beside the drafts): each
    group linked to its reproduction script and its draft (``links``: relative paths)."""
    from urllib.parse import quote

    from .html import document, esc

    def link(path: str, text: str) -> str:
        return f'<a href="{esc(quote(path))}">{esc(text)}</a>' if path else "-"

    rows = [
        f'<tr data-group="{esc(g.ident)}" data-cases="{g.size}"><td class="num">{g.size}</td>'
        f"<td>{esc(g.signature.title())}</td><td>{esc(g.signature.whose)}</td><td>{esc(shown_counts(g.ops))}</td>"
        f"<td>{esc(shown_counts(g.contracts))}</td><td>{link(links.get(g.ident, ('', ''))[0], 'script')}</td>"
        f"<td>{link(links.get(g.ident, ('', ''))[1], 'draft')}</td></tr>"
        for g in groups
    ]
    table = (
        '<table id="groups"><thead><tr><th>cases</th><th>cause</th><th>whose</th><th>ops</th><th>contracts</th>'
        "<th>reproduction</th><th>issue draft</th></tr></thead><tbody>\n" + "\n".join(rows) + "\n</tbody></table>"
        if rows
        else '<p class="note" id="groups-none">no case failed</p>'
    )
    return document(
        f"fl-contract triage {lane}",
        [
            f"<h1>fl-contract triage: lane <code>{esc(lane)}</code></h1>",
            f'<p class="note">{sum(g.size for g in groups)} failing cases of <code>{esc(report)}</code> in '
            f"{len(groups)} groups; drafts are files, nothing was sent.</p>",
            table,
        ],
    )
