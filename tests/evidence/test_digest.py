"""skgate's sha256 helpers give hashlib's digest at every size, whichever implementation
hashes (the interpreter's own below ``SMALL`` or one block, OpenSSL's above: issue 29)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from skgate.evidence import digest


@pytest.mark.parametrize(
    "size", [0, 1, 65535, 65536, 65537, digest.SMALL - 1, digest.SMALL, 3 << 20]
)
def test_every_helper_gives_hashlibs_sha256(tmp_path: Path, size: int) -> None:
    data = os.urandom(size)
    want = hashlib.sha256(data).hexdigest()
    (tmp_path / "f").write_bytes(data)
    assert digest.sha256_bytes(data) == want
    assert digest.sha256_small(data) == want
    assert digest.sha256_file(tmp_path / "f") == want
    fd = os.open(tmp_path / "f", os.O_RDONLY)
    try:
        assert digest.hash_fd(fd, block=1 << 16) == (want, size)
    finally:
        os.close(fd)
    h = digest.small_sha256()
    h.update(data[:7])
    copy = h.copy()
    copy.update(data[7:])
    assert copy.hexdigest() == want
