"""Checks of `make package`: the template passes cfn-lint, the unzipped package fits Lambda's
250 MB, and the cold import of app.py is measured."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

LIMIT_MB = 250


def unzipped_mb(zip_path: Path) -> float:
    with zipfile.ZipFile(zip_path) as z:
        return sum(i.file_size for i in z.infolist()) / 1e6


def import_ms(zip_path: Path, python: str) -> tuple[float, list[str]]:
    """Cold `import app` from the unzipped package (-X importtime): total and heaviest."""
    with tempfile.TemporaryDirectory() as tmp:
        zipfile.ZipFile(zip_path).extractall(tmp)
        out = subprocess.run(
            [python, "-X", "importtime", "-c", "import app"],
            cwd=tmp,
            capture_output=True,
            text=True,
            env={"PYTHONPATH": tmp, "AWS_DEFAULT_REGION": "us-east-1", "PATH": "/usr/bin:/bin"},
        )
    if out.returncode != 0:
        sys.exit(f"importing app.py from the package failed:\n{out.stderr[-2000:]}")
    rows = []
    for line in out.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)", line)
        if m:
            rows.append((int(m.group(2)), len(m.group(3)), m.group(4)))
    total = next(us for us, _, name in reversed(rows) if name == "app")
    top = sorted((r for r in rows if r[1] == 3), reverse=True)[:5]  # what app.py imports
    return total / 1000, [f"{name} {us / 1000:.0f} ms" for us, _, name in top]


def main(build_dir: str, python: str) -> int:
    build = Path(build_dir)
    python = os.path.abspath(python)
    template = next(build.glob("sam.*"))
    cfn_lint = str(Path(python).parent / "cfn-lint")
    lint = subprocess.run([cfn_lint, str(template)], capture_output=True, text=True)
    print(f"cfn-lint {template.name}: {'ok' if lint.returncode == 0 else 'FAILED'}")
    if lint.returncode != 0:
        print(lint.stdout[-4000:], lint.stderr[-2000:])
        return 1
    size = unzipped_mb(build / "deployment.zip")
    print(f"unzipped package: {size:.1f} MB (limit {LIMIT_MB} MB)")
    if size >= LIMIT_MB:
        return 1
    total, heaviest = import_ms(build / "deployment.zip", python)
    print(f"cold import of app.py: {total:.0f} ms; heaviest: {', '.join(heaviest)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
