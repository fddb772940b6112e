"""The TypeScript SDK (`sdk-ts/`) made ready for a test: its npm packages installed as
package-lock.json pins them (again only when the lock changes; npm's cache serves repeats) and,
for a script that imports the package, `dist/` built from `src/`. `make test` installs Node.js
and npm where they are missing."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import threading
from pathlib import Path

SDK_TS = Path(__file__).parents[1] / "sdk-ts"
STAMP = SDK_TS / "node_modules" / ".loom-lock-sha256"  # the lock the install was made from
_once = threading.Lock()
_done: set[str] = set()


def _npm(*args: str) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("npm is missing: `make test` installs it (apt-get install nodejs npm)")
    done = subprocess.run(
        [npm, *args], cwd=SDK_TS, capture_output=True, text=True, timeout=600, check=False
    )
    if done.returncode != 0:
        said = done.stdout[-2000:] + done.stderr[-3000:]
        raise RuntimeError(f"npm {' '.join(args)} in {SDK_TS} failed:\n{said}")


def installed_sdk_ts() -> Path:
    """The SDK's folder, its packages installed from the lock (`npm ci`, which also builds)."""
    with _once:
        if "install" not in _done:
            lock = hashlib.sha256((SDK_TS / "package-lock.json").read_bytes()).hexdigest()
            if not STAMP.exists() or STAMP.read_text() != lock:
                _npm("ci", "--prefer-offline", "--no-audit", "--no-fund")
                STAMP.write_text(lock)
                _done.add("build")
            _done.add("install")
    return SDK_TS


def built_sdk_ts() -> Path:
    """The SDK's folder with `dist/` built from the current `src/` (once a test run)."""
    installed_sdk_ts()
    with _once:
        if "build" not in _done:
            _npm("run", "build")
            _done.add("build")
    return SDK_TS
