"""The interpreter oracle's child process (``probes.variants.oracle``): ``python -m
pytest_fl_contract.probes.oracle IN OUT`` replays each probe's recorded launches (a pickle of
``{probe id: Recording}``) on Triton's interpreter, no defect injected, and pickles
``{probe id: result array or error line}`` to OUT.  Its own process because the interpreter
must be on before triton is imported.

It brings up the interpreter's patches alone (``activate_interpreter``), not the CPU lane's
emulator: the probes import no FlagGems, and a vendor lane's Triton is its own, so neither
FlagGems' version nor the CPU lane's Triton is asked for.  On a Triton the patches were not
checked on it exits ``variants.ORACLE_UNSUPPORTED`` with that one line on stderr."""

from __future__ import annotations

import pickle
import sys


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m pytest_fl_contract.probes.oracle IN.pickle OUT.pickle", file=sys.stderr)
        return 2
    from ..emulation.interpreter import UnsupportedTriton, activate_interpreter
    from ..emulation.profiles import get_profile

    try:
        activate_interpreter(get_profile("nvidia-small"))
    except UnsupportedTriton as refused:
        from .variants import ORACLE_UNSUPPORTED

        print(refused, file=sys.stderr)
        return ORACLE_UNSUPPORTED
    from ..util import first_line
    from . import variants
    from .battery import BY_ID

    with open(argv[0], "rb") as f:
        recordings = pickle.load(f)  # noqa: S301 - written by our parent
    results = {}
    for probe_id, recording in recordings.items():
        try:
            results[probe_id] = variants.replay(recording, BY_ID[probe_id].kernel, "cpu").numpy()
        except Exception as exc:  # one probe's failure is that probe's finding, not the run's
            results[probe_id] = f"{type(exc).__name__}: {first_line(exc)}"
    with open(argv[1], "wb") as f:
        pickle.dump(results, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
