"""One exception type for every bad input we report as a single clear line."""


class FlContractError(Exception):
    """Bad input or an environment we refuse to run in; str() is the whole message."""
