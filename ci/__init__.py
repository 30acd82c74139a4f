"""The lane manifest (``manifest.yaml``), shipped in the wheel as ``pytest_fl_contract.ci``."""
