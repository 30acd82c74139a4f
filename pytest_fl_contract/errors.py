"""One exception type for every bad input we report as a single clear line."""


class FlContractError(Exception):
    """Bad input or an environment we refuse to run in; str() is the whole message."""


def first_line(exc: BaseException) -> str:
    """An exception's message cut to its first line: drivers append pages of advice."""
    return (str(exc).strip().splitlines() or [""])[0]
