"""Run one step as a supervised process: its output kept, its deadline kept, nothing it
starts left alive.

Every step runs in its own session with a token in its environment and the runner's
death as its own (``PR_SET_PDEATHSIG``); a watchdog beside it (``WATCHDOG``) takes the
rest of the step along - its group, every process carrying its token - the moment the
runner dies without saying the step ended (SIGKILL, a lost machine).  The runner is a child subreaper
(``PR_SET_CHILD_SUBREAPER``): a process that double-forks and ``setsid()``s to escape is
re-parented to the runner, not to init, so it is still found.  When the step ends - it
exits, times out, or the run is cancelled - the runner sweeps until a sweep finds nothing:
the step's process group, every process carrying its token, and every descendant of those
and of the runner that started after the step did; each sweep kills what it found, so a
process forking every few milliseconds runs out of parents.  The case records what was
killed.  Output is read as bytes through a selector, written unbuffered to the step's log
(kept whole if the runner itself is killed) and kept for the JUnit case capped in bytes.

A step that is cancelled or runs out of time is stopped as Ctrl-C stops pytest: SIGINT
first, so pytest writes its JUnit report and its summary of what ran (nothing it ran is
lost), then SIGTERM, then SIGKILL, each after a bounded grace; another cancel signal moves
on to the next at once.
"""

from __future__ import annotations

import ctypes
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ..reporting import junit
from .manifest import DEFAULT_OUTPUT_CAP

INTERRUPT_GRACE = 5.0  # seconds a stopped step's group gets after SIGINT to write what it ran
KILL_GRACE = 2.0  # seconds a stopped step's group gets between SIGTERM and SIGKILL
DRAIN_SECONDS = 1.0  # reading what is left in the pipe once the group is dead
POLL = 0.1  # seconds between looks at exit, deadline and cancel
READ_CHUNK = 64 * 1024
SWEEP_SECONDS = 10.0  # the longest the runner keeps sweeping for processes a step left
STEP_TOKEN = "FL_CONTRACT_STEP_TOKEN"  # in every step's environment: finds the processes it left
# What ends a run as SIGTERM does: the step is stopped and reported, the reports written.
# SIGHUP is what a dropped ssh session sends; SIGQUIT, SIGUSR1/2 and SIGALRM kill a Python
# process that does not handle them, with no report and the step left running.
CANCEL_SIGNALS = tuple(
    getattr(signal, name)
    for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM")
    if hasattr(signal, name)
)
_PR_SET_PDEATHSIG, _PR_SET_CHILD_SUBREAPER = 1, 36
_SHELLS = {"sh", "bash", "dash", "zsh", "ksh", "ash", "busybox"}


def describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"{code} {signal.Signals(-code).name}"
        except ValueError:
            return f"{code} (signal)"
    return f"exit {code}"


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def shell_signal(code: int | None, argv: list[str] | str, shell: bool) -> int | None:
    """The signal that killed a step's program when a shell reports it (exit 128 + N from
    ``bash -c``, as the shell says of a child it lost), else None."""
    if code is None or not 128 < code < 128 + 65:
        return None
    program = "sh" if shell or isinstance(argv, str) else os.path.basename(argv[0]) if argv else ""
    if program not in _SHELLS:
        return None
    try:
        signal.Signals(code - 128)
    except ValueError:
        return None
    return code - 128


# -- cancellation -----------------------------------------------------------------------


class Cancel:
    """Set by the runner's signal handlers; the running step polls it.  ``count``: the
    cancel signals received (a second one hurries a step that is being stopped)."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self.count = 0

    @property
    def reason(self) -> str:
        return f"cancelled by {signal_name(self.signum or 0)}"


@contextmanager
def cancel_on_signals() -> Iterator[Cancel]:
    """While a lane runs, the signals in ``CANCEL_SIGNALS`` cancel it instead of killing
    the runner: the current step's group is stopped, the rest are reported not run, the
    reports written.  Outside the main thread (no handlers can be set) nothing is installed."""
    cancel = Cancel()
    if threading.current_thread() is not threading.main_thread():
        yield cancel
        return

    def handler(signum: int, frame: object) -> None:
        cancel.count += 1
        if cancel.signum is None:
            cancel.signum = signum

    previous = {}
    for sig in CANCEL_SIGNALS:
        try:
            previous[sig] = signal.signal(sig, handler)
        except (OSError, ValueError):
            pass
    try:
        yield cancel
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


# -- output -----------------------------------------------------------------------------


class OutputCap:
    """The first ``cap // 2`` and the last ``cap - cap // 2`` bytes of a stream, and its size."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.head_cap = cap // 2
        self.tail_cap = cap - self.head_cap
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > 2 * self.tail_cap:
                del self.tail[: -self.tail_cap]

    def text(self) -> str:
        """Decoded (undecodable bytes replaced) and XML-safe; the cut, if any, is said."""
        tail = bytes(self.tail[-self.tail_cap :]) if self.tail_cap else b""
        cut = self.total - len(self.head) - len(tail)
        if cut <= 0:
            text = (bytes(self.head) + tail).decode("utf-8", "replace")
        else:
            text = (
                f"{bytes(self.head).decode('utf-8', 'replace')}\n"
                f"[... {cut} bytes of output cut by fl-contract (output cap {self.cap} bytes) ...]\n"
                f"{tail.decode('utf-8', 'replace')}"
            )
        return junit.xml_safe(text)


def capped(data: bytes, cap: int) -> str:
    """What a step's JUnit case keeps of ``data``."""
    keep = OutputCap(cap)
    keep.feed(data)
    return keep.text()


class _Reader:
    """Reads a pipe as bytes without ever blocking past ``wait``; everything goes to the log.
    ``wake`` (a pidfd) ends a wait the moment the process exits, where the kernel has them."""

    def __init__(self, fd: int, log: BinaryIO | None, keep: OutputCap, wake: int | None = None) -> None:
        self.fd = fd
        self.log = log
        self.keep = keep
        self.eof = False
        self.wake = wake
        self.selector = selectors.DefaultSelector()
        self.selector.register(fd, selectors.EVENT_READ)
        if wake is not None:
            self.selector.register(wake, selectors.EVENT_READ)

    def pump(self, wait: float, max_chunks: int = 64) -> None:
        """Read what is there, waiting at most ``wait`` seconds for it; bounded per call so
        a step that floods its output cannot starve the exit, timeout and cancel checks."""
        if self.eof and self.wake is None:
            time.sleep(max(wait, 0.0))
            return
        timeout = max(wait, 0.0)
        for _ in range(max_chunks):
            events = self.selector.select(timeout)
            if not any(key.fd == self.fd for key, _ in events):
                return  # nothing to read, or the process exited
            chunk = os.read(self.fd, READ_CHUNK)
            if not chunk:
                self.eof = True
                self.selector.unregister(self.fd)
                return
            self.keep.feed(chunk)
            if self.log is not None:
                try:
                    self.log.write(chunk)
                except OSError:
                    self.log = None  # a full disk loses the log, not the lane
            timeout = 0.0

    def drain(self, seconds: float) -> None:
        """What is left in the pipe once the group is dead (bounded: a daemon may hold it)."""
        if self.wake is not None:
            self.selector.unregister(self.wake)
            self.wake = None
        end = time.monotonic() + seconds
        while not self.eof and time.monotonic() < end:
            self.pump(min(POLL, end - time.monotonic()))

    def close(self) -> None:
        self.selector.close()


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)  # type: ignore[attr-defined]  # Linux >= 5.3, Python >= 3.9
    except (AttributeError, OSError):
        return None


# -- processes --------------------------------------------------------------------------


def _libc_prctl():  # resolved in the runner: the step's process only calls it (no dlopen after fork)
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _libc_prctl()


def _prctl(option: int, value: int) -> bool:
    return _PRCTL is not None and _PRCTL(option, value, 0, 0, 0) == 0


_SUBREAPER: bool | None = None


def become_subreaper() -> bool:
    """Make this process the reaper of every orphan below it (Linux >= 3.4), once."""
    global _SUBREAPER
    if _SUBREAPER is None:
        _SUBREAPER = _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    return _SUBREAPER


def _die_with_parent(parent: int) -> None:
    """In the step's process, before exec: SIGKILL when the runner dies (even by SIGKILL)."""
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the runner died before the line above took effect
        os._exit(137)


@dataclass(frozen=True)
class Proc:  # one line of /proc/PID/stat
    pid: int
    ppid: int
    pgid: int
    start: int  # clock ticks after boot
    name: str


def _processes() -> dict[int, Proc]:
    """Every live (not zombie) process /proc shows; empty where there is no /proc."""
    found: dict[int, Proc] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        name = stat[stat.find("(") + 1 : stat.rfind(")")]
        fields = stat[stat.rfind(")") + 2 :].split()  # state, ppid, pgrp, session, ..., starttime (20)
        if len(fields) < 20 or fields[0] in ("Z", "X"):
            continue
        found[int(entry)] = Proc(int(entry), int(fields[1]), int(fields[2]), int(fields[19]), name)
    return found


def _carries(pid: int, mark: bytes) -> bool:
    try:
        return mark in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False


_LIVE_LEADERS: set[int] = set()  # steps running now in this process (threads): not another's strays
_WATCHDOGS: set[int] = set()  # the runner's own watchdogs (``Watchdog``): never a step's strays


def _children(pid: int) -> list[int] | None:
    """The direct children of ``pid`` (every thread's), read from /proc: microseconds, where
    a scan of all of /proc takes milliseconds - longer than a process that forks and exits
    every few milliseconds lives.  None where the kernel does not list children."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    found: list[int] = []
    for tid in tasks:
        try:
            found += [int(c) for c in Path(f"/proc/{pid}/task/{tid}/children").read_text().split()]
        except FileNotFoundError:
            if pid == os.getpid():
                return None  # no CONFIG_PROC_CHILDREN: the full scan it is
        except (OSError, ValueError):
            continue
    return found


def _started(pid: int) -> int:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return int(stat[stat.rfind(")") + 2 :].split()[19])
    except (OSError, ValueError, IndexError):
        return 1 << 62  # gone, or unreadable: never older than the step


def _descendants(pgid: int, since: int) -> set[int] | None:
    """The step's leader's descendants and every process the runner (a subreaper) was given
    since the step started, with their descendants; None where children cannot be listed."""
    me = os.getpid()
    mine = _children(me)
    if mine is None:
        return None
    others = (_LIVE_LEADERS - {pgid}) | _WATCHDOGS
    roots = [pid for pid in mine if pid not in others and (pid == pgid or _started(pid) >= since)]
    found: set[int] = set()
    while roots:
        pid = roots.pop()
        for child in _children(pid) or ():
            if child not in found and child != me:
                found.add(child)
                roots.append(child)
    found |= {pid for pid in mine if pid not in others and pid != pgid and _started(pid) >= since}
    return found


def leftovers(pgid: int, token: str, since: int = 0) -> dict[int, str]:
    """Live processes of the step other than its leader ``pgid``: those of its process group,
    those carrying its ``STEP_TOKEN``, the runner's own children that started at or after
    ``since`` (orphans re-parented to it as subreaper), and every descendant of those.
    pid -> program name (a full scan of /proc)."""
    procs = _processes()
    me = os.getpid()
    mark = f"{STEP_TOKEN}={token}".encode()
    others = (_LIVE_LEADERS - {pgid}) | _WATCHDOGS
    roots = {
        p.pid
        for p in procs.values()
        if p.pid != pgid
        and (p.pgid == pgid or (p.ppid == me and p.start >= since and p.pid not in others) or _carries(p.pid, mark))
    }
    children: dict[int, list[int]] = {}
    for p in procs.values():
        children.setdefault(p.ppid, []).append(p.pid)
    found, todo = set(), [*roots, pgid]
    while todo:
        pid = todo.pop()
        for child in children.get(pid, ()):
            if child not in found and child != me and child not in others:
                found.add(child)
                todo.append(child)
    found |= roots
    found.discard(pgid)
    return {pid: procs[pid].name for pid in found if pid in procs}


def _name(pid: int) -> str:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat[stat.find("(") + 1 : stat.rfind(")")]
    except OSError:
        return "?"


def _reap(pids: set[int]) -> None:
    """Collect the zombies of killed processes that were re-parented to the runner."""
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except (ChildProcessError, OSError):
            pass


def kill_all(pgid: int, token: str, since: int = 0, seconds: float = SWEEP_SECONDS) -> dict[int, str]:
    """SIGKILL the step's group and everything it started, again until the runner's tree
    and a full scan of /proc both find nothing (a process may fork while we look: its
    parent's death leaves its child to the runner, the subreaper); every process killed
    besides the leader, pid -> name."""
    if pgid <= 1:  # killpg(0) is our own group, kill(-1) everything we may signal: never
        raise ValueError(f"not a step's process group: {pgid}")
    killed: dict[int, str] = {}
    end = time.monotonic() + seconds
    quiet = 0
    while quiet < 2 and time.monotonic() < end:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        tree = _descendants(pgid, since)
        strays = {pid: _name(pid) for pid in tree} if tree else {}
        if tree is None or not strays:  # the tree is quiet (or cannot be read): the full scan decides
            strays = leftovers(pgid, token, since)
        for pid in strays:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        live = {pid: name for pid, name in strays.items() if name != "?"}
        killed.update(live)
        _reap(set(strays) | set(killed))
        quiet = quiet + 1 if not strays else 0
    return {pid: name for pid, name in killed.items() if pid != pgid}


def kill_token(token: str, seconds: float = 2.0) -> dict[int, str]:
    """Kill every process carrying a step's token and their descendants (what a runner that
    was itself killed left running), until a scan finds none; pid -> name."""
    mark = f"{STEP_TOKEN}={token}".encode()
    killed: dict[int, str] = {}
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        procs = _processes()
        marked = {p.pid for p in procs.values() if _carries(p.pid, mark)}
        children: dict[int, list[int]] = {}
        for p in procs.values():
            children.setdefault(p.ppid, []).append(p.pid)
        todo = list(marked)
        while todo:
            for child in children.get(todo.pop(), ()):
                if child not in marked:
                    marked.add(child)
                    todo.append(child)
        if not marked:
            break
        for pid in marked:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            killed[pid] = procs[pid].name if pid in procs else "?"
        time.sleep(0.01)
    return killed


def _exited(proc: subprocess.Popen) -> bool:
    """Has the process exited?  Looks without reaping it, so its group id stays reserved
    and killing the group afterwards cannot hit a stranger that reused the number."""
    if proc.returncode is not None:
        return True
    try:
        return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _boot_ticks() -> int:
    """Now, in the clock ticks /proc's start times count (0 where it cannot be read)."""
    try:
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return int(uptime * os.sysconf("SC_CLK_TCK")) - 1
    except (OSError, ValueError, IndexError):
        return 0


# The watchdog: a small process beside each step that outlives a runner killed with SIGKILL.
# It starts before the step (a step may run ahead of its runner), knowing the step's token,
# and waits on a pipe only the runner can write: "pgid N" once the step is started, "done"
# once it ended.  End of file without "done" is the runner's death: the step's leader died
# with it (PR_SET_PDEATHSIG), and the watchdog kills what is left - the step's process group
# and every process carrying its token, with their descendants - until a scan finds none.
WATCHDOG = r"""
import os, signal, sys, time
for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM, signal.SIGQUIT):
    signal.signal(sig, signal.SIG_IGN)
mark = (sys.argv[2] + "=" + sys.argv[1]).encode()
said = b""
while True:
    try:
        chunk = os.read(0, 64)
    except InterruptedError:
        continue
    if not chunk:
        break
    said += chunk
if b"done" in said:
    sys.exit(0)
words = said.split()
pgid = int(words[words.index(b"pgid") + 1]) if b"pgid" in words[:-1] else -1

def scan():
    procs = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = open("/proc/" + entry + "/stat").read()
            fields = stat[stat.rfind(")") + 2:].split()
            marked = mark in open("/proc/" + entry + "/environ", "rb").read().split(b"\0")
        except OSError:
            continue
        if fields[0] not in "ZX":
            procs[int(entry)] = (int(fields[1]), int(fields[2]), marked)
    return procs

end, quiet = time.monotonic() + 10, 0
while quiet < 2 and time.monotonic() < end:
    procs = scan()
    found = {pid for pid, (ppid, pgrp, marked) in procs.items() if marked or pgrp == pgid}
    todo = list(found)
    while todo:
        parent = todo.pop()
        for pid, (ppid, _, _) in procs.items():
            if ppid == parent and pid not in found:
                found.add(pid)
                todo.append(pid)
    found.discard(os.getpid())
    for pid in found:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    quiet = quiet + 1 if not found else 0
    time.sleep(0.01)
"""


class Watchdog:
    """The step's watchdog (``WATCHDOG``), started before the step: ``started(pgid)`` tells it
    the step's group, ``done()`` that the step ended (and reaps it)."""

    def __init__(self, token: str) -> None:
        self.proc: subprocess.Popen | None = None
        self.write: int | None = None
        read, write = os.pipe()  # not inheritable: no step holds the runner's end
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-S", "-I", "-c", WATCHDOG, token, STEP_TOKEN],
                stdin=read,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                env={},
            )
        except (OSError, ValueError, subprocess.SubprocessError):
            os.close(write)  # no watchdog: the next run still finds the step by its token
        else:
            self.write = write
            _WATCHDOGS.add(self.proc.pid)
        finally:
            os.close(read)

    def started(self, pgid: int) -> None:
        if self.write is not None:
            try:
                os.write(self.write, f"pgid {pgid}\n".encode())
            except OSError:
                pass

    def done(self) -> None:
        if self.write is not None:
            try:
                os.write(self.write, b"done")
            except OSError:
                pass
            os.close(self.write)
            self.write = None
        if self.proc is not None:
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            _WATCHDOGS.discard(self.proc.pid)
            self.proc = None


def _stop(proc: subprocess.Popen, reader: _Reader, cancel: Cancel) -> None:
    """SIGINT, then SIGTERM, each with its grace while the step's leader lives (SIGKILL is
    ``kill_all``'s): pytest writes its report and summary on the first.  A cancel signal
    that comes meanwhile ends the grace at once."""
    for sig, grace in ((signal.SIGINT, INTERRUPT_GRACE), (signal.SIGTERM, KILL_GRACE)):
        if _exited(proc):
            return
        _signal_group(proc.pid, sig)
        seen = cancel.count
        end = time.monotonic() + grace
        while not _exited(proc) and time.monotonic() < end and cancel.count == seen:
            reader.pump(min(POLL, max(end - time.monotonic(), 0.0)))


@dataclass(frozen=True)
class Execution:
    code: int | None  # exit status (negative: the signal); None when it never started
    ended: str  # exited | timeout | cancelled | not started
    output: str  # capped, XML-safe
    seconds: float
    left_behind: tuple[str, ...] = ()  # "pid (name)" of each process still alive after it exited (all killed)
    pipe_held: bool = False  # a process outside its group still held its output


def execute(
    argv: list[str] | str,
    shell: bool,
    env: dict[str, str],
    timeout: float,
    log: BinaryIO | None,
    cap: int = DEFAULT_OUTPUT_CAP,
    cancel: Cancel | None = None,
    token: str | None = None,
) -> Execution:
    """Run one step in a new session; whatever way it ends, nothing it started survives."""
    cancel = cancel or Cancel()
    start = time.monotonic()
    keep = OutputCap(cap)
    token = token or uuid.uuid4().hex
    become_subreaper()
    since = _boot_ticks()
    parent = os.getpid()
    watchdog = Watchdog(token)
    try:
        proc = subprocess.Popen(
            argv,
            shell=shell,
            env={**env, STEP_TOKEN: token},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=(lambda: _die_with_parent(parent)) if _PRCTL else None,
        )
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        watchdog.done()
        return Execution(None, "not started", junit.xml_safe(f"cannot start: {exc}"), time.monotonic() - start)
    assert proc.stdout is not None
    _LIVE_LEADERS.add(proc.pid)
    watchdog.started(proc.pid)
    wake = _pidfd(proc.pid)
    reader = _Reader(proc.stdout.fileno(), log, keep, wake)
    deadline = start + timeout
    ended = "exited"
    killed: dict[int, str] = {}
    try:
        while not _exited(proc):
            if cancel.signum is not None:
                ended = "cancelled"
                break
            left = deadline - time.monotonic()
            if left <= 0:
                ended = "timeout"
                break
            reader.pump(min(POLL, left))
        if ended != "exited":
            _stop(proc, reader, cancel)
        killed = kill_all(proc.pid, token, since)
        proc.wait()
        reader.drain(DRAIN_SECONDS)
        killed.update(kill_all(proc.pid, token, since, seconds=1.0))  # one that held the pipe past the drain
    finally:
        if proc.returncode is None:  # an exception above: still leave nothing behind
            kill_all(proc.pid, token, since)
            proc.wait()
        _LIVE_LEADERS.discard(proc.pid)
        watchdog.done()
        reader.close()
        proc.stdout.close()
        if wake is not None:
            os.close(wake)
    left_behind = tuple(f"{pid} ({name})" for pid, name in sorted(killed.items())) if ended == "exited" else ()
    return Execution(proc.returncode, ended, keep.text(), time.monotonic() - start, left_behind, not reader.eof)
