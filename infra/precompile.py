"""Add bytecode to the Lambda package: a function cannot write __pycache__ at run time, so
every cold start would compile pydantic, psycopg and the rest again."""

from __future__ import annotations

import compileall
import py_compile
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path


def precompile(zip_path: Path) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        with zipfile.ZipFile(zip_path) as z:
            z.extractall(tmp)
        compileall.compile_dir(
            tmp,
            quiet=2,
            workers=0,
            invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
        )
        rebuilt = zip_path.with_suffix(".tmp.zip")
        with zipfile.ZipFile(rebuilt, "w", zipfile.ZIP_DEFLATED) as z:
            for path in sorted(Path(tmp).rglob("*")):
                if path.is_file():
                    z.write(path, path.relative_to(tmp))
        shutil.move(rebuilt, zip_path)
    return 0


if __name__ == "__main__":
    sys.exit(precompile(Path(sys.argv[1])))
