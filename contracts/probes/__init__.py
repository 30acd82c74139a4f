"""Compiler probes: standalone Triton kernels (no flag_gems), one compiler feature each.

When the reduction contracts fail on a vendor lane, these say whether the lane's Triton
compiler is to blame and which feature of it, with the kernel that shows it - the seed's
standalone table (the PR review in which the Iluvatar defect was found: 28 for 6), made a suite.  ``battery.py`` holds the kernels;
``pytest_fl_contract.probes.catalogue`` runs them without pytest (``fl-contract probe``).
"""
