"""Where the repository and the `toolgate` binary are, for the binding's tests."""

import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def toolgate() -> str:
    """The toolgate binary the parity suite compares with: TOOLGATE_BIN, else the release build,
    else the debug build."""
    candidates = [os.environ.get("TOOLGATE_BIN"), REPO / "target/release/toolgate", REPO / "target/debug/toolgate"]
    for candidate in candidates:
        if candidate and Path(candidate).is_file():
            return str(candidate)
    found = shutil.which("toolgate")
    if found is None:
        pytest.fail("no toolgate binary: build it (cargo build --release) or set TOOLGATE_BIN")
    return found
