"""The op registry: every FlagGems op the project knows, as rows."""
