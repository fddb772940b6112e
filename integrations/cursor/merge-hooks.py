#!/usr/bin/env python3
"""Add Loom's Cursor hooks to a hooks.json, keeping every hook already there.

    python3 integrations/cursor/merge-hooks.py ~/.cursor/hooks.json

Each event of integrations/cursor/hooks.json gets Loom's entry unless one with the same
command is there already, so running it twice changes nothing; a missing file is created.
Python standard library only."""

from __future__ import annotations

import json
import sys
from pathlib import Path

OURS = Path(__file__).with_name("hooks.json")


def merged(theirs: dict, ours: dict) -> dict:
    out = dict(theirs)
    out.setdefault("version", ours["version"])
    hooks = dict(out.get("hooks") or {})
    for event, entries in ours["hooks"].items():
        present = list(hooks.get(event) or [])
        commands = {entry.get("command") for entry in present if isinstance(entry, dict)}
        present += [entry for entry in entries if entry["command"] not in commands]
        hooks[event] = present
    out["hooks"] = hooks
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    target = Path(argv[1]).expanduser()
    try:
        theirs = json.loads(target.read_text()) if target.exists() else {}
    except (OSError, ValueError) as exc:
        print(f"{target} cannot be read as JSON ({exc}); left as it is", file=sys.stderr)
        return 1
    if not isinstance(theirs, dict):
        print(f"{target} does not hold a JSON object; left as it is", file=sys.stderr)
        return 1
    target.parent.mkdir(parents=True, exist_ok=True)
    ours = json.loads(OURS.read_text())
    target.write_text(json.dumps(merged(theirs, ours), indent=2) + "\n")
    print(f"{target}: Loom's hooks for {', '.join(ours['hooks'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
