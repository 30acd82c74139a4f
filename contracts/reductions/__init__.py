"""Reduction contracts: one op registry (``pytest_fl_contract.ops``), a module per property."""
