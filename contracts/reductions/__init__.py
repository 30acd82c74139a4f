"""Reduction contracts: one op registry (``pytest_fl_contract.registry.ops``), a module per property."""
