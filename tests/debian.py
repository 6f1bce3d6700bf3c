"""Debian packages a test needs (wget, chromium): installed with apt-get when missing and we are root."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path


def debian_program(package: str, program: str) -> str | None:
    """Path of `program` (a name on PATH or an absolute path), installing `package` if it is missing."""
    def found() -> str | None:
        return program if os.path.isabs(program) and Path(program).exists() else shutil.which(program)

    if found() is None and hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("apt-get"):
        apt = ["env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "-y", "-q"]
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "check": False}
        # A fresh machine may have no package lists yet: update once, then try again.
        if subprocess.run([*apt, "install", package], **quiet).returncode != 0:
            subprocess.run([*apt, "update"], **quiet)
            subprocess.run([*apt, "install", package], **quiet)
    return found()
