"""Small helpers shared by tests that are not fixtures."""

from __future__ import annotations

import tempfile
from pathlib import Path


def embedded_test_dir() -> Path:
    """A private folder for an embedded server, outside pytest's temp root.

    pytest resets its temp root to mode 0700 whenever any pytest process starts, which would cut the
    server's own system user off from its data folder in the middle of a run.
    """
    return Path(tempfile.mkdtemp(prefix="ac-context-test-"))
