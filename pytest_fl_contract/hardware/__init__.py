"""Hardware lanes: the device, faults, xdist scheduling, the memory ledger, isolation, autotuning, slab references."""
