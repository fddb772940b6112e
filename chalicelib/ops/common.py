"""Identity fields every op shares, with the spec's '-' defaults."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, PrivateAttr, StringConstraints

# Names of orgs and namespaces: printable, no spaces, bounded.
Name = Annotated[str, StringConstraints(min_length=1, max_length=256, pattern=r"^[^\s\x00]+$")]
Ident = Annotated[str, StringConstraints(max_length=256)]


class OpInput(BaseModel):
    model_config = ConfigDict(extra="ignore", str_strip_whitespace=False)


class OpOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    # Input fields the handler did not apply, named in ignored_args beside unknown fields.
    _not_applied: list[str] = PrivateAttr(default_factory=list)


class OrgScoped(OpInput):
    org: Name
    namespace: Name


class AgentScoped(OrgScoped):
    agent: Ident
