"""Programs from Debian's packages that some tests drive (systemd-analyze, Chromium).

scripts/test installs them when it can (as root with apt-get: scripts/debian-packages);
a test that needs one where it is still missing is skipped, saying which and why."""

from __future__ import annotations

import shutil

import pytest

PACKAGES = {"systemd-analyze": "systemd", "chromium": "chromium",
            "chromedriver": "chromium-driver"}


def require(program: str) -> str:
    path = shutil.which(program)
    if path is None:
        pytest.skip(f"{program} is not installed (Debian package {PACKAGES[program]}; "
                    "scripts/test installs it when run as root on a machine with apt-get)")
    return path
