"""``--fl-devices``: a lane's xdist workers spread over a host's devices, each worker's process
pinned to one by the platform's visible-devices variable; one device is today's run."""

from __future__ import annotations

import json
import types
import xml.etree.ElementTree as ET

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_fl_contract.config import devices
from pytest_fl_contract.config.devices import EMULATED_VAR, PINNED_ENV, Plan, pinned, plan, worker_device
from pytest_fl_contract.config.platforms import load_registry, parse_document
from pytest_fl_contract.config.settings import Options, resolve
from pytest_fl_contract.hardware.ledger import Claim, Ledger, admit
from pytest_fl_contract.hardware.spread import pin_workers
from pytest_fl_contract.util import FlContractError


def never_counted() -> int:
    raise AssertionError("counted the devices where the variable lists them")


# -- the value --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value,expected", [("2", 2), (" 8 ", 8), ("all", "all"), ("ALL", "all"), (None, None), ("", None), ("1", 1)]
)
def test_a_count_or_all(value, expected):
    assert devices.parse(value) == expected


@pytest.mark.parametrize("value", ["0", "-1", "x", "2.5", "1e3", "all2"])
def test_anything_else_is_one_line(value):
    with pytest.raises(
        FlContractError, match=r"--fl-devices .*expected a number of devices \(1 or more\) or 'all'"
    ) as exc:
        devices.parse(value)
    assert "\n" not in str(exc.value)


# -- the plan ---------------------------------------------------------------------------


@pytest.mark.parametrize("asked", [None, 1])
def test_one_device_is_no_plan_and_counts_nothing(asked):
    assert plan(asked, "CUDA_VISIBLE_DEVICES", {}, never_counted) is None


def test_the_variables_list_is_the_hosts_devices_in_its_order():
    env = {"CUDA_VISIBLE_DEVICES": "5, 7,GPU-1b2c"}
    got = plan("all", "CUDA_VISIBLE_DEVICES", env, never_counted)
    assert got is not None and got.ids == ("5", "7", "GPU-1b2c")
    got = plan(2, "CUDA_VISIBLE_DEVICES", env, never_counted)
    assert got is not None and got.ids == ("5", "7")


def test_unset_the_runtime_counts_them():
    got = plan("all", "CUDA_VISIBLE_DEVICES", {}, lambda: 4)
    assert got is not None and got.ids == ("0", "1", "2", "3")
    assert plan("all", "CUDA_VISIBLE_DEVICES", {}, lambda: 1) is None  # all of one device: today's run


@pytest.mark.parametrize(
    "env,count,shown",
    [({"CUDA_VISIBLE_DEVICES": "0,1"}, never_counted, "2 (CUDA_VISIBLE_DEVICES=0,1)"), ({}, lambda: 1, "1 (1 counted")],
)
def test_more_devices_than_the_host_has_is_one_line(env, count, shown):
    with pytest.raises(FlContractError, match="more devices than this host has") as exc:
        plan(3, "CUDA_VISIBLE_DEVICES", env, count)
    assert shown in str(exc.value) and "\n" not in str(exc.value)


def test_a_variable_set_to_nothing_lists_no_device():
    with pytest.raises(FlContractError, match="lists no device"):
        plan(2, "CUDA_VISIBLE_DEVICES", {"CUDA_VISIBLE_DEVICES": " , "}, never_counted)


def test_an_emulated_host_has_the_devices_asked_for_or_those_listed():
    got = plan(3, EMULATED_VAR, {}, never_counted, emulated=True)
    assert got is not None and got.ids == ("0", "1", "2")
    assert plan("all", EMULATED_VAR, {}, never_counted, emulated=True) is None  # one emulated device
    got = plan("all", EMULATED_VAR, {EMULATED_VAR: "0,1"}, never_counted, emulated=True)
    assert got is not None and got.ids == ("0", "1")


def test_an_id_that_cannot_travel_in_a_spec_is_refused():
    with pytest.raises(FlContractError, match="cannot be passed to a worker"):
        plan(2, "CUDA_VISIBLE_DEVICES", {"CUDA_VISIBLE_DEVICES": "0,MIG//1"}, never_counted)


@given(st.integers(2, 8), st.integers(0, 12))
def test_workers_take_the_devices_round_robin_every_device_one_when_each_has_a_worker(n, extra):
    chosen = Plan("CUDA_VISIBLE_DEVICES", tuple(str(10 + i) for i in range(n)), "test")
    specs = pinned([f"{n + extra}*popen"], chosen)
    seen = [dict(kv.split("=", 1) for kv in (p.removeprefix("env:") for p in s.split("//")[1:])) for s in specs]
    assert [s["CUDA_VISIBLE_DEVICES"] for s in seen] == [str(10 + w % n) for w in range(n + extra)]
    assert [s[PINNED_ENV] for s in seen] == [f"{w % n}/{n}" for w in range(n + extra)]
    assert all(s.startswith("popen//") for s in specs)


def test_each_device_needs_a_local_worker():
    chosen = Plan("CUDA_VISIBLE_DEVICES", ("0", "1", "2"), "test")
    with pytest.raises(FlContractError, match=r"3 devices but 2 xdist workers.*-n 3"):
        pinned(["popen", "popen"], chosen)
    with pytest.raises(FlContractError, match="not one"):
        pinned(["3*ssh=gpu-host"], chosen)


def test_a_pinned_worker_knows_its_device_and_an_unpinned_one_knows_none():
    env = {"CUDA_VISIBLE_DEVICES": "7", PINNED_ENV: "1/2"}
    got = worker_device(env, "CUDA_VISIBLE_DEVICES")
    assert got is not None and (got.id, got.index, got.count) == ("7", 1, 2)
    assert "CUDA_VISIBLE_DEVICES=7 (device 2 of 2)" == got.line()
    assert worker_device({"CUDA_VISIBLE_DEVICES": "7"}, "CUDA_VISIBLE_DEVICES") is None  # the user's own variable
    assert worker_device(env, None) is None


# -- the registry and the settings ------------------------------------------------------


def test_the_variable_follows_the_device_type_unless_the_registry_names_one(tmp_path):
    registry = load_registry(entry_points=False)
    assert registry.get("nvidia").visible_devices == "CUDA_VISIBLE_DEVICES"
    assert registry.get("iluvatar").visible_devices == "CUDA_VISIBLE_DEVICES"  # CUDA-compatible: CUDA's
    assert registry.get("ascend").visible_devices == "ASCEND_RT_VISIBLE_DEVICES"
    assert registry.get("amd").visible_devices == "HIP_VISIBLE_DEVICES"
    assert registry.get("aipu").visible_devices is None
    vendor = tmp_path / "vendor.yaml"
    vendor.write_text(
        "platforms:\n  nvidia: {visible_devices: null}\n  newchip: {device_type: npu}\n"
        "  other: {device_type: xyz, visible_devices: XYZ_VISIBLE_DEVICES}\n"
    )
    extended = load_registry([str(vendor)], entry_points=False)
    assert extended.get("nvidia").visible_devices is None
    assert extended.get("newchip").visible_devices == "ASCEND_RT_VISIBLE_DEVICES"
    assert extended.get("other").visible_devices == "XYZ_VISIBLE_DEVICES"


@pytest.mark.parametrize("value", ["", "CUDA VISIBLE", 3, ["A"]])
def test_a_bad_variable_name_in_the_registry_is_one_line(value):
    with pytest.raises(FlContractError, match=r"platforms.x.visible_devices: expected an environment variable"):
        parse_document({"platforms": {"x": {"device_type": "cuda", "visible_devices": value}}}, "vendor.yaml")


def test_a_platform_without_a_variable_cannot_spread_and_an_emulated_lane_uses_the_emulators():
    registry = load_registry(entry_points=False)
    with pytest.raises(FlContractError, match="platform aipu names no visible-devices variable"):
        resolve(Options(platform="aipu", devices="2"), registry, {})
    assert resolve(Options(platform="aipu", devices="1"), registry, {}).devices == 1  # one device: as always
    emulated = resolve(Options(platform="iluvatar", emulate=True, devices="2"), registry, {})
    assert (emulated.devices, emulated.devices_var) == (2, EMULATED_VAR)
    hardware = resolve(Options(platform="nvidia", devices="all"), registry, {})
    assert (hardware.devices, hardware.devices_var, hardware.pins_devices()) == ("all", "CUDA_VISIBLE_DEVICES", True)


def test_pinning_rewrites_the_specs_only_for_several_devices():
    settings = resolve(Options(platform="nvidia", devices="all"), load_registry(entry_points=False), {})
    option = types.SimpleNamespace(dist="load", tx=["popen", "popen"])
    assert pin_workers(option, settings, {"CUDA_VISIBLE_DEVICES": "3"}, never_counted) is None
    assert option.tx == ["popen", "popen"]
    got = pin_workers(option, settings, {"CUDA_VISIBLE_DEVICES": "3,4"}, never_counted)
    assert got is not None and option.tx == [
        f"popen//env:CUDA_VISIBLE_DEVICES={d}//env:{PINNED_ENV}={i}/2" for i, d in enumerate("34")
    ]
    for no_xdist in (types.SimpleNamespace(dist="no", tx=[]), types.SimpleNamespace()):
        with pytest.raises(FlContractError, match="this run has none: add -n N"):
            pin_workers(no_xdist, settings, {"CUDA_VISIBLE_DEVICES": "3,4"}, never_counted)


# -- the memory ledger, per device ------------------------------------------------------


def test_a_device_takes_claims_within_its_own_budget_and_the_host_within_its():
    live = lambda pid: True  # noqa: E731
    claims = [Claim(1, "a", 32.0, "0")]
    assert admit(claims, 32.0, 40.0, live, device="1", host_budget=100.0)  # another device: room there
    assert not admit(claims, 32.0, 40.0, live, device="0", host_budget=100.0)  # its own device is full
    assert not admit(claims + [Claim(2, "b", 40.0, "1")], 32.0, 40.0, live, device="2", host_budget=100.0)  # host
    assert admit(claims, 90.0, 40.0, live, device="1", host_budget=100.0) is False  # alone on its device, not the host
    assert admit([], 500.0, 40.0, live, device="1", host_budget=100.0)  # alone everywhere


@given(
    st.lists(st.tuples(st.floats(0.5, 64), st.sampled_from("0123")), max_size=8),
    st.floats(0.5, 64),
    st.sampled_from("0123"),
    st.floats(1, 100),
    st.floats(1, 400),
)
def test_admitted_claims_stay_within_each_budget_unless_alone_there(held, need, device, budget, host):
    claims = [Claim(i, str(i), g, d) for i, (g, d) in enumerate(held)]
    if admit(claims, need, budget, lambda pid: True, device=device, host_budget=host):
        here = sum(g for g, d in held if d == device)
        assert here == 0 or here + need <= budget
        assert not held or sum(g for g, _ in held) + need <= host


def test_unpinned_claims_are_todays_one_budget(tmp_path):
    path = tmp_path / "ledger.json"
    path.write_text(json.dumps([{"pid": __import__("os").getpid(), "nodeid": "old", "gib": 6.0}]))  # written before
    ledger = Ledger(path, budget=10.0, poll=0.01)
    assert not admit([Claim(1, "old", 6.0)], 6.0, 10.0, lambda pid: True)
    assert ledger.acquire("mine", 4.0) < 1.0
    assert [c["device"] for c in json.loads(path.read_text())] == ["", ""]


# -- whole runs -------------------------------------------------------------------------

RECORD = """
import json, os, pytest

@pytest.mark.parametrize("i", range(6))
def test_where(i):
    with open(f"seen-{os.environ['PYTEST_XDIST_WORKER']}-{i}.json", "w") as f:
        json.dump({k: os.environ.get(k) for k in (%r, %r)}, f)
"""
TX = """
import json

def pytest_sessionstart(session):
    if not hasattr(session.config, "workerinput"):
        with open("tx.json", "w") as f:
            json.dump(session.config.option.tx, f)
"""


def _seen(path) -> dict[str, set[tuple[str, str]]]:
    by_worker: dict[str, set[tuple[str, str]]] = {}
    for file in path.glob("seen-*.json"):
        by_worker.setdefault(file.name.split("-")[1], set()).add(tuple(json.loads(file.read_text()).values()))
    return by_worker


def _property(xml_path, name: str) -> str | None:
    found = [p.get("value") for p in ET.parse(xml_path).iter("property") if p.get("name") == name]
    return found[0] if found else None


@pytest.mark.slow
def test_each_emulated_worker_sees_only_its_own_device_and_the_report_names_it(pytester, run_subprocess):
    pytester.makepyfile(test_where=RECORD % (EMULATED_VAR, PINNED_ENV))
    pytester.makeconftest(TX)
    result = run_subprocess(
        "-p",
        "fl_contract",
        "-p",
        "xdist",
        "--platform",
        "cpu",
        "-n",
        "2",
        "--fl-devices",
        "2",
        "--junitxml=lane.xml",
        "-p",
        "no:cacheprovider",
    )
    result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines(
        [
            f"fl-contract devices: 2 devices (emulated), one per worker round robin: "
            f"gw0 {EMULATED_VAR}=0, gw1 {EMULATED_VAR}=1"
        ]
    )
    assert _seen(pytester.path) == {"gw0": {("0", "0/2")}, "gw1": {("1", "1/2")}}
    workers = json.loads(_property(pytester.path / "lane.xml", "fl_worker_devices") or "{}")
    assert sorted(workers) == ["gw0", "gw1"]
    assert workers["gw1"].startswith(f"{EMULATED_VAR}=1 (device 2 of 2): ")


def test_hardware_workers_get_the_listed_devices_round_robin(pytester, run_subprocess):
    pytester.makepyfile(test_where=RECORD % ("CUDA_VISIBLE_DEVICES", PINNED_ENV))
    result = run_subprocess(
        "-p",
        "fl_contract",
        "-p",
        "xdist",
        "--platform",
        "nvidia",
        "--fl-no-workaround",
        "-n",
        "3",
        "--fl-devices",
        "all",
        "-p",
        "no:cacheprovider",
        env={"CUDA_VISIBLE_DEVICES": "5,7"},
    )
    result.assert_outcomes(passed=6)
    seen = _seen(pytester.path)
    assert seen == {
        "gw0": {("5", "0/2")},
        "gw1": {("7", "1/2")},
        "gw2": {("5", "0/2")},
    }  # xdist deals 2 cases each first


@pytest.mark.parametrize("asked", [[], ["--fl-devices", "1"], ["--fl-devices", "all"]])
def test_one_device_gives_xdist_todays_arguments(pytester, run_subprocess, asked):
    pytester.makepyfile(test_where=RECORD % ("CUDA_VISIBLE_DEVICES", PINNED_ENV))
    pytester.makeconftest(TX)
    result = run_subprocess(
        "-p",
        "fl_contract",
        "-p",
        "xdist",
        "--platform",
        "nvidia",
        "--fl-no-workaround",
        "-n",
        "2",
        "--co",
        "-p",
        "no:cacheprovider",
        *asked,
        env={"CUDA_VISIBLE_DEVICES": "3"},
    )
    assert result.ret == 0
    assert json.loads((pytester.path / "tx.json").read_text()) == ["popen", "popen"]
    assert "fl-contract devices" not in result.stdout.str()


def test_the_ini_asks_as_the_option_does(pytester, run_subprocess):
    pytester.makepyfile(test_where=RECORD % ("CUDA_VISIBLE_DEVICES", PINNED_ENV))
    pytester.makeconftest(TX)
    pytester.makeini("[pytest]\nfl_devices = all\n")
    result = run_subprocess(
        "-p",
        "fl_contract",
        "-p",
        "xdist",
        "--platform",
        "nvidia",
        "--fl-no-workaround",
        "-n",
        "2",
        "--co",
        "-p",
        "no:cacheprovider",
        env={"CUDA_VISIBLE_DEVICES": "0,1"},
    )
    assert result.ret == 0
    assert [s.split("//")[1] for s in json.loads((pytester.path / "tx.json").read_text())] == [
        "env:CUDA_VISIBLE_DEVICES=0",
        "env:CUDA_VISIBLE_DEVICES=1",
    ]


@pytest.mark.parametrize(
    "args,env,line",
    [
        (["-n", "2", "--fl-devices", "x"], {}, "--fl-devices 'x': expected a number of devices"),
        (["-n", "2", "--fl-devices", "0"], {}, "--fl-devices '0': expected a number of devices"),
        (["-n", "2", "--fl-devices=-1"], {}, "--fl-devices '-1': expected a number of devices"),
        (
            ["-n", "2", "--fl-devices", "3"],
            {"CUDA_VISIBLE_DEVICES": "0,1"},
            "--fl-devices 3: more devices than this host has: 2 (CUDA_VISIBLE_DEVICES=0,1)",
        ),
        (
            ["--fl-devices", "2"],
            {"CUDA_VISIBLE_DEVICES": "0,1"},
            "--fl-devices 2 spreads a lane's xdist workers*add -n N*",
        ),
        (
            ["-n", "1", "--fl-devices", "2"],
            {"CUDA_VISIBLE_DEVICES": "0,1"},
            "--fl-devices: 2 devices but 1 xdist workers*",
        ),
    ],
)
def test_bad_input_is_one_usage_line(pytester, run_subprocess, args, env, line):
    pytester.makepyfile(test_where=RECORD % ("CUDA_VISIBLE_DEVICES", PINNED_ENV))
    result = run_subprocess(
        "-p",
        "fl_contract",
        "-p",
        "xdist",
        "--platform",
        "nvidia",
        "--fl-no-workaround",
        *args,
        "-p",
        "no:cacheprovider",
        env=env,
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {line}*"])
    assert [ln for ln in result.stderr.lines if ln.strip()] == [result.stderr.lines[0]]  # one line
    assert "Traceback" not in result.stderr.str() + result.stdout.str()
