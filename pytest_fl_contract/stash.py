"""What the plugin keeps on a collected item (pytest's stash), in one low place: the lane
session writes it, the device watch and the summaries read it, and none of them needs the
other to find it."""

from __future__ import annotations

import pytest

from .markers import Xfail
from .reporting.outcomes import CaseTag

TAG = pytest.StashKey[CaseTag]()  # what the case checks: its op and contract
SEED = pytest.StashKey[int]()  # the seed a generated case drew from
SPECS = pytest.StashKey[tuple]()  # tuple[markers.Spec, ...]: its validated marks
DECISION = pytest.StashKey[Xfail]()  # its known-defect decision
