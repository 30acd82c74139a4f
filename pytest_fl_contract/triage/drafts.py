"""Issue drafts, one per group: what the seed's report holds, as a Markdown file.

Title, summary (how many cases, which ops and contracts, how the cause was decided), the
standalone reproduction inline, its table (the script's own output on the lane, and on the
plain CPU lane for an emulated one), the compiler probe table where a compiler defect is
implicated, versions and device, the workaround where the registry has one, the registry
entry that registers it (or would), and the cases.  For the vendor's compiler when the cause
is a compiler defect, for FlagGems when it is a FlagGems one, "to triage" otherwise.

A draft is a file: nothing here sends, files or posts anything ("filing an issue mutes a
test" - the dry run is the only run).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..results.causes import Group, shown_counts

INLINE_SCRIPT = 16_000  # a script up to this many characters goes into the draft whole


@dataclass(frozen=True)
class Evidence:
    """What triage found for a group: its reproduction and what running it gave."""

    script: str = ""  # the script's path ("" when none reproduced)
    source: str = ""  # its text
    key: str = ""  # the case it reproduces
    tables: tuple[tuple[str, str, int], ...] = ()  # (how it was run, its output, exit code)
    probe_table: str = ""  # the compiler probe table (Markdown), where one applies
    findings: tuple[str, ...] = ()  # order / isolation lines of its cases
    tried: tuple[tuple[str, str], ...] = ()  # (case, why it is not the representative)


def _defect_entry(group: Group, registry: object) -> object | None:
    defect = group.signature.defect
    return getattr(registry, "defects", {}).get(defect) if defect else None


def title(group: Group, lane: str) -> str:
    s = group.signature
    ops = ", ".join(op for op, _ in group.ops[:4] if op != "-")
    if s.whose == "compiler":
        return f"[{lane}] compiler: {s.defect} breaks {ops or 'FlagGems kernels'} ({group.size} cases)"
    if s.whose == "flag_gems":
        return f"[FlagGems] {s.defect}: {ops or 'FlagGems'} ({group.size} cases on {lane})"
    return f"[{lane}] {s.error} in {ops or 'FlagGems'}: {s.text[:80]} ({group.size} cases)"


def audience(group: Group) -> str:
    return {"compiler": "the vendor's Triton compiler", "flag_gems": "FlagGems"}.get(
        group.signature.whose, "to triage: compiler or FlagGems (no registered cause matched)"
    )


def _registry_lines(group: Group, entry: object | None, platform: str) -> list[str]:
    s = group.signature
    if s.whose == "compiler" and entry is not None:
        return [
            f"Registered: `{s.defect}` in the defect catalogue (`config/platforms.yaml`), listed by platform "
            f"`{platform}`; the op rows' `features` say which ops it reaches."
        ]
    if s.whose == "flag_gems":
        return [
            f"Registered: `{s.defect}` (a FlagGems defect of the op rows: `registry/`), with the predicate "
            "that decided it for these cases."
        ]
    ops = [op for op, _ in group.ops if op != "-"]
    return [
        "Not registered.  Once confirmed, register it where its owner says:",
        "",
        "```yaml",
        "defects:",
        f"  {group.ident.lower()}:",
        "    whose: flag_gems  # or compiler, when a probe shows the feature wrong without FlagGems",
        f"    description: >-\n      {s.error}: {s.text}",
        *(["    fails_with: [" + s.error + "]"] if s.error not in ("AssertionError", "no message") else []),
        "```",
        "",
        f"and name it in the op rows it reaches ({', '.join(ops) or 'the ops above'}): "
        "`Defect(id, predicate)` in `registry/<family>.py`.",
    ]


def render(
    group: Group,
    evidence: Evidence,
    *,
    lane: str,
    report: str,
    properties: Mapping[str, str],
    registry: object,
    limit: int = 60,
) -> str:
    """The draft's Markdown."""
    s = group.signature
    entry = _defect_entry(group, registry)
    platform = properties.get("fl_platform", "?")
    lines = [
        f"# {title(group, lane)}",
        "",
        f"**Draft - not filed.** For {audience(group)}.  Written by `fl-contract triage` from lane "
        f"`{lane}` (`{report}`); nothing was sent anywhere.",
        "",
        "## Summary",
        "",
        f"{group.size} failing cases of lane `{lane}` share one cause: {s.title()}.  "
        f"How it was decided: {group.evidence}.",
        "",
        f"- ops: {shown_counts(group.ops, 20)}",
        f"- contracts: {shown_counts(group.contracts, 20)}",
    ]
    if entry is not None:
        lines += ["", " ".join(str(getattr(entry, "description", "")).split())]
    if group.messages:
        lines += ["", "Failure, as the lane reported it:", "", "```", *(m[:400] for m in group.messages[:2]), "```"]
    lines += ["", "## Reproduction", ""]
    if evidence.script:
        lines += [
            f"Case `{evidence.key}`.  Standalone: `python {evidence.script.rsplit('/', 1)[-1]}` needs torch and "
            "flag_gems (an emulated lane also the emulator module: see its docstring); it exits 1 while the "
            "defect is there and 0 once it is fixed.",
            "",
        ]
        lines += _essence(evidence.script)
        if len(evidence.source) <= INLINE_SCRIPT:
            lines += [
                "<details><summary>The whole script (its inputs inline)</summary>",
                "",
                "```python",
                evidence.source.rstrip(),
                "```",
                "",
                "</details>",
            ]
        else:
            calls = [ln for ln in evidence.source.splitlines() if ln.startswith("    rows.append(run(")]
            lines += [
                f"The script ({len(evidence.source)} characters, its inputs saved in it) is attached: "
                f"`{evidence.script}`.  Its calls:",
                "",
                "```python",
                *calls,
                "```",
            ]
    else:
        lines += [
            "No standalone reproduction: "
            + ("; ".join(f"`{k}`: {why}" for k, why in evidence.tried) or "no case of this group was re-run.")
        ]
    if evidence.tables:
        lines += ["", "## Table", ""]
        for how, output, code in evidence.tables:
            table = [ln for ln in output.splitlines() if ln.startswith("|")]
            lines += [
                f"{how} (exit {code}):",
                "",
                *(table or ["(no table: " + " ".join(output.split())[-300:] + ")"]),
                "",
            ]
    if evidence.probe_table:
        lines += [
            "",
            "## Compiler probes",
            "",
            "Standalone Triton kernels, no FlagGems: each variant against the exact value it must give.",
            "",
            evidence.probe_table.rstrip(),
        ]
    v = properties
    device = v.get("fl_device") or ("CPU, emulated: " + v["fl_emulated"] if v.get("fl_emulated", "no") != "no" else "?")
    lines += [
        "",
        "## Versions and device",
        "",
        "| | |",
        "|---|---|",
        *(
            f"| {name} | {v[key]} |"
            for name, key in (
                ("torch", "version_torch"),
                ("triton", "version_triton"),
                ("flag_gems", "version_flag_gems"),
                ("pytest-fl-contract", "version_pytest_fl_contract"),
            )
            if key in v
        ),
        f"| platform | {platform} |",
        f"| device | {device} |",
    ]
    workaround = getattr(entry, "workaround", None) if entry is not None else None
    lines += [
        "",
        "## Workaround",
        "",
        f"`pytest_fl_contract.workarounds.{workaround}` covers it: lanes with it installed run these ops on "
        "FlagGems' correct kernels."
        if workaround
        else "None registered.",
    ]
    lines += ["", "## Registry", "", *_registry_lines(group, entry, platform)]
    if evidence.findings:
        lines += ["", "## Order and isolation", "", *(f"- {f}" for f in evidence.findings)]
    lines += ["", f"## Cases ({group.size})", "", *(f"- `{k}`" for k in group.keys[:limit])]
    if group.size > limit:
        lines.append(f"- ... and {group.size - limit} more (the group's JSON lists every one)")
    return "\n".join(lines) + "\n"


def _essence(script_path: str) -> list[str]:
    """The calls a reproduction makes, as a reader takes them in at a glance: inputs (dtype,
    shape, strides), FlagGems' call, torch's reference (from the record beside the script)."""
    import json
    from pathlib import Path

    record = Path(script_path).with_suffix(".json")
    try:
        data = json.loads(record.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    from .script import Call, call_text

    out = ["```python"]
    for t in data.get("tensors", []):
        out.append(
            f"# {t['name']}: {t['dtype']}, shape {tuple(t['shape'])}, strides {tuple(t['stride'])}, "
            f"offset {t['offset']} (saved bit for bit in the script)"
        )
    for c in data.get("calls", []):
        call = Call(
            c["module"],
            c["function"],
            c["aten"],
            tuple(c["args"]),
            tuple(tuple(k) for k in c["kwargs"]),
            c["rtol"],
            c["atol"],
        )
        out.append(f"got = {c['module']}.{c['function']}({call_text(call)})")
        if c["aten"]:
            name, _, overload = c["aten"].partition(".")
            out.append(
                f"want = torch.ops.aten.{name}.{overload or 'default'}({call_text(call, reference=True)})"
                f"  # ref(t) = t.cpu().double()"
            )
        out.append(
            f"# every output of got within atol {c['atol']:.3g} + rtol {c['rtol']:.3g} * |want| (NaN where want "
            "has NaN), and bit-identical when repeated with the memory around the inputs filled"
        )
    return [*out, "```", ""]


def probe_ids(keys: Sequence[str]) -> list[str]:
    """The probe ids of probe case keys (``probes.test_compiler::test_probe[ID]``)."""
    return [k.rsplit("[", 1)[1].rstrip("]") for k in keys if "[" in k]
