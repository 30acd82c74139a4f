"""The contract suites, shipped in the wheel as ``pytest_fl_contract.contracts``:
``pytest -p fl_contract --platform P --pyargs pytest_fl_contract.contracts.reductions``."""
