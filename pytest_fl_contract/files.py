"""Files someone else may have put in our way: read, written and appended without blocking.

A FIFO where a manifest, a report or ``$GITHUB_STEP_SUMMARY`` should be blocks ``open()``
for good (a step can ``mkfifo`` its own JUnit path, or a later step's log); a full disk
leaves half a file.  So inputs are opened non-blocking and refused unless they are regular
files, outputs are written to a temporary file beside them and renamed over the old one
(never opened where they stand), and logs are created afresh.  Refusals are ``OSError``
with a one-line ``strerror``, as every caller already reports.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path
from typing import BinaryIO

KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def _kind(mode: int) -> str:
    return next((name for test, name in KINDS if test(mode)), "not a regular file")


def _refuse(path: str | os.PathLike[str], mode: int) -> OSError:
    return OSError(errno.EINVAL, f"not a regular file ({_kind(mode)})", os.fspath(path))


def read_bytes(path: str | os.PathLike[str], max_bytes: int) -> bytes:
    """At most ``max_bytes + 1`` bytes of a regular file; anything else is refused unread."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise _refuse(path, mode)
        os.set_blocking(fd, True)
        chunks, left = [], max_bytes + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def write_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """``path`` holds ``data`` whole or keeps what it held: written beside it, then renamed
    over it (a FIFO there is replaced, never opened; a full disk leaves the old file)."""
    target = Path(path)
    if target.is_dir():
        raise IsADirectoryError(errno.EISDIR, "is a directory", str(target))
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name[:60]}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as sink:
            sink.write(data)
            sink.flush()
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def append_text(path: str | os.PathLike[str], text: str) -> None:
    """Append to a regular file (created if missing) or a character device (``/dev/null``);
    a FIFO, a socket or a directory is refused without blocking."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        mode = stat.S_IFREG
    if not (stat.S_ISREG(mode) or stat.S_ISCHR(mode)):
        raise _refuse(path, mode)  # said for what it is (a FIFO would only say ENXIO)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        mode = os.fstat(fd).st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISCHR(mode)):
            raise _refuse(path, mode)
        os.set_blocking(fd, True)
        data = text.encode("utf-8")
        while data:
            data = data[os.write(fd, data) :]
    finally:
        os.close(fd)


def fresh_log(path: str | os.PathLike[str]) -> BinaryIO:
    """A new, unbuffered log at ``path``: whatever stands there (a FIFO, a link) is removed
    first and the file is created exclusively, so it is ours; every write reaches the file
    at once (a runner killed with SIGKILL keeps its step's log)."""
    try:
        os.unlink(path)  # a directory there raises: the caller reports "no log"
    except FileNotFoundError:
        pass
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    return os.fdopen(os.open(path, flags, 0o644), "wb", buffering=0)
