"""Blacklist patterns, matched in time linear in the value.

A pattern is an admin's regular expression, run on every memory write of a namespace or an
org. Python's `re` backtracks: `(a+)+b` takes minutes on a 30-character value and holds the
interpreter lock all the while, so every request of every tenant waits. Patterns are run by
RE2 (google-re2), whose automaton reads a value once whatever the pattern; one RE2 cannot
compile (a lookaround, a backreference, a program over MAX_PROGRAM_BYTES) matches as plain text.
"""

from __future__ import annotations

import functools
from typing import Any

MAX_PATTERN_CHARS = 500
MAX_PROGRAM_BYTES = 1 << 20  # RE2 refuses a pattern whose automaton would need more


@functools.lru_cache(maxsize=1024)
def _compiled(pattern: str) -> Any | None:
    """The pattern as RE2 runs it, case-blind; None when RE2 cannot compile it."""
    import re2  # only writes in a scope with a blacklist pay for the import

    options = re2.Options()
    options.case_sensitive = False
    options.log_errors = False
    options.max_mem = MAX_PROGRAM_BYTES
    try:
        return re2.compile(pattern, options)
    except re2.error:
        return None


def blacklisted(value: str, patterns: list[str]) -> bool:
    """Whether a pattern matches the value: as a regular expression (RE2's syntax), or as
    plain text, case-blind, when it is none RE2 compiles."""
    for pattern in patterns:
        compiled = _compiled(pattern)
        if compiled is not None:
            if compiled.search(value) is not None:
                return True
        elif pattern.casefold() in value.casefold():
            return True
    return False
