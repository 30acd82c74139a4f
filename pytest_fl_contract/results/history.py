"""``fl-contract history``: a long-lived runner's lane reports kept in SQLite (off unless
asked: nothing writes a database but ``history add``), answering "first seen failing" and
"how often did this case flip".

One row per run (lane, when it was added, the report's provenance) and one per case of it
(``cases.rows_of``: a case written twice in a report is its worst entry).  The database is
input like any other: a FIFO, a device or a directory is refused unopened, and one that is
read-only, full, locked or not a database is one line (``FlContractError``), never a
traceback.  A case is named by its whole key or its exact, case-sensitive ending.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Iterable, Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..config.safeyaml import shown
from ..util import FlContractError, one_line
from .cases import FAILING, LaneReport

SCHEMA = """
create table if not exists runs (
    id integer primary key, lane text not null, source text not null, added text not null,
    commit_id text, flag_gems text, torch text, triton text, registry text);
create table if not exists cases (
    run integer not null references runs(id), key text not null, outcome text not null,
    op text, contract text, defect text, primary key (run, key));
create index if not exists cases_key on cases (key);
"""


def _refuse_odd(path: Path) -> None:
    """A FIFO where the database should be would block SQLite's open for good."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise FlContractError(f"history database {shown(path)}: {exc.strerror}") from None
    if not stat.S_ISREG(mode):
        raise FlContractError(f"history database {shown(path)}: not a regular file")


@contextmanager
def database(path: Path) -> Iterator[sqlite3.Connection]:
    """The database, open; every SQLite error inside (read-only, full, corrupt, locked) and
    text it cannot store become one line."""
    _refuse_odd(path)
    try:
        with closing(sqlite3.connect(str(path), timeout=30)) as db:
            db.executescript(SCHEMA)
            yield db
    except sqlite3.Error as exc:
        raise FlContractError(f"history database {shown(path)}: {one_line(exc, 300)}") from None
    except UnicodeEncodeError as exc:
        raise FlContractError(f"history database {shown(path)}: text it cannot store ({one_line(exc, 200)})") from None


def add(path: Path, reports: Iterable[LaneReport], when: str) -> list[int]:
    """Record each lane report as one run, all of them or none; returns the run ids."""
    ids = []
    with database(path) as db, db:
        for report in reports:
            p = report.properties
            cursor = db.execute(
                "insert into runs (lane, source, added, commit_id, flag_gems, torch, triton, registry) "
                "values (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    report.lane,
                    report.path,
                    when,
                    p.get("fl_checkout_commit"),
                    p.get("version_flag_gems"),
                    p.get("version_torch"),
                    p.get("version_triton"),
                    p.get("fl_registry_sha256"),
                ),
            )
            run = cursor.lastrowid
            assert run is not None
            db.executemany(
                "insert or replace into cases values (?, ?, ?, ?, ?, ?)",
                [(run, row.key, row.outcome, row.op, row.contract, row.defect) for row in report.rows],
            )
            ids.append(run)
    return ids


@dataclass(frozen=True)
class CaseHistory:
    lane: str
    key: str
    runs: int
    first_failing: tuple[int, str, str | None] | None  # run id, added, commit
    flips: int  # changes between failing and not failing, run after run
    last: str


def case_history(path: Path, key: str, lane: str | None = None) -> list[CaseHistory]:
    """Every lane's history of one case (``key`` as compare prints it, or its unique ending)."""
    with database(path) as db:
        # the whole key, or its exact ending: no LIKE (its % and _ are wildcards, its case folds)
        keys = [
            k
            for (k,) in db.execute(
                "select distinct key from cases where key = ?1 or "
                "(length(key) > length(?1) and substr(key, -length(?1)) = ?1)",
                (key,),
            )
        ]
        if len(keys) > 1 and key not in keys:
            raise FlContractError(f"{key!r} names {len(keys)} cases ({', '.join(keys[:3])}, ...); give more of it")
        if not keys:
            raise FlContractError(f"no case {key!r} in {shown(path)}")
        found = key if key in keys else keys[0]
        rows = db.execute(
            "select r.lane, r.id, r.added, r.commit_id, c.outcome from cases c join runs r on r.id = c.run "
            "where c.key = ? and (? is null or r.lane = ?) order by r.lane, r.id",
            (found, lane, lane),
        ).fetchall()
    out = []
    for name in sorted({r[0] for r in rows}):
        mine = [r for r in rows if r[0] == name]
        failing = [r[4] in FAILING for r in mine]
        first = next(((r[1], r[2], r[3]) for r in mine if r[4] in FAILING), None)
        flips = sum(a != b for a, b in zip(failing, failing[1:]))
        out.append(CaseHistory(name, found, len(mine), first, flips, mine[-1][4]))
    return out


def flaky(path: Path, top: int = 20) -> Sequence[tuple[str, str, int, int]]:
    """The cases that flipped most, (lane, key, flips, runs): the nondeterminism a single run cannot see."""
    with database(path) as db:
        rows = db.execute(
            "select r.lane, c.key, c.outcome from cases c join runs r on r.id = c.run order by r.lane, c.key, r.id"
        ).fetchall()
    seen: dict[tuple[str, str], list[bool]] = {}
    for lane, key, outcome in rows:
        seen.setdefault((lane, key), []).append(outcome in FAILING)
    counted = [(lane, key, sum(a != b for a, b in zip(v, v[1:])), len(v)) for (lane, key), v in seen.items()]
    return sorted((c for c in counted if c[2]), key=lambda c: (-c[2], c[0], c[1]))[:top]
