"""pytest-fl-contract: contract suite for FlagGems vendor lanes."""

__version__ = "0.1.0"
