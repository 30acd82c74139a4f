"""Opt-in test tooling that never reaches a vendor lane by itself: the defect mutant zoo
(``-p pytest_fl_contract.testing.mutants``, ``fl-contract mutants``)."""
