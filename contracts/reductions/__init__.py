"""Reduction contracts: one op registry (``pytest_fl_contract.registry.reductions``), a module per property."""
