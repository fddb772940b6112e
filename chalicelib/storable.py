"""What PostgreSQL and JSON can store: the check every body passes before it is served."""

from __future__ import annotations

import math
from typing import Any

# How deep objects and lists may nest in a body: far past any metadata or schema, and short
# of the depth at which a stored value could no longer be serialised back in an answer.
MAX_NESTING = 64


def unstorable(body: Any) -> str | None:
    """Why some value in the body (keys included) cannot be stored, or None: PostgreSQL text
    holds no U+0000 and only valid UTF-8 (no lone surrogate), JSON no NaN or infinity, and no
    answer a value nested past MAX_NESTING levels."""
    stack = [(body, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict | list) and depth >= MAX_NESTING:
            return f"objects and lists may nest at most {MAX_NESTING} levels deep"
        if isinstance(value, str):
            if "\x00" in value:
                return "text may not contain the NUL character (\\u0000)"
            if not value.isascii() and _lone_surrogate(value):
                return "text may not contain a lone UTF-16 surrogate (\\ud800-\\udfff)"
        elif isinstance(value, float):
            if not math.isfinite(value):
                return "numbers must be finite (no NaN or Infinity)"
        elif isinstance(value, dict):
            stack.extend((k, depth + 1) for k in value)
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)
    return None


def _lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
