"""Names of orgs and namespaces: what every op accepts, and the settings and tokens check."""

from __future__ import annotations

import functools
from typing import Annotated

from pydantic import StringConstraints, TypeAdapter, ValidationError

# Printable, no spaces, bounded.
Name = Annotated[str, StringConstraints(min_length=1, max_length=256, pattern=r"^[^\s\x00]+$")]


@functools.cache
def _names() -> TypeAdapter:
    return TypeAdapter(Name)


def is_name(value: str) -> bool:
    """True when an op accepts this as an org, namespace or agent name."""
    try:
        _names().validate_python(value)
    except ValidationError:
        return False
    return True


ME = "@me"  # an end user's personal collection, resolved per user


def personal_namespace(user_id: str) -> str:
    """The namespace `@me` names for one user."""
    return f"{ME}:{user_id}"
