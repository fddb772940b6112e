"""Fact quality on stored rows: memory.apply demotes, labels and restores memories by key, and
`loom demote-activity-narration` drives it over a namespace. Nothing here deletes."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Annotated, Literal, Self

from pydantic import Field, model_validator

from chalicelib.auth import local_caller
from chalicelib.deps import Deps
from chalicelib.fact_quality import ACTIVITY_NARRATION, TEXT_CLASSES, JunkClass, classify
from chalicelib.ops.common import Ident, OpInput, OpOutput, OrgScoped
from chalicelib.ops.memory import Key
from chalicelib.registry import OpContext, call, op
from chalicelib.services.memory_quality import (
    QUALITY_TAG,
    Action,
    apply_actions,
    read_since,
    review_pages,
    reviewable_count,
)

MAX_ACTIONS = 500


class ActionIn(OpInput):
    action: Literal["demote", "label", "restore"]
    key: Key
    user_id: Ident = "-"  # the row's user; "-" is the namespace's shared rows
    factor: float = Field(default=0.25, gt=0, le=1)  # demote: confidence times this
    quality_class: JunkClass | None = None  # label: adds the tag quality:<class>

    @model_validator(mode="after")
    def _label_names_its_class(self) -> Self:
        if self.action == "label" and self.quality_class is None:
            raise ValueError("a label action names its quality_class")
        return self


class ApplyInput(OrgScoped):
    actions: Annotated[list[ActionIn], Field(min_length=1, max_length=MAX_ACTIONS)]
    dry_run: bool = False


class AppliedOut(OpOutput):
    action: str
    key: str
    user_id: str
    changed: bool
    confidence_before: float
    confidence_after: float
    tags_after: list[str]


class UnknownOut(OpOutput):
    key: str
    user_id: str


class ApplyOutput(OpOutput):
    applied: list[AppliedOut]
    unknown: list[UnknownOut]  # no live row of that key and user in this namespace
    dry_run: bool


@op("memory.apply", role="admin", kind="idempotent", audited=True, mcp="unlisted")
def memory_apply(inp: ApplyInput, ctx: OpContext) -> ApplyOutput:
    """Demote (confidence times factor), label (tag quality:<class>) or restore (undo both)
    memories of this namespace by key, in order, in one transaction; never deletes. A dry
    run answers what would change and changes nothing."""
    actions = [
        Action(a.action, a.user_id, a.key, a.factor, a.quality_class or "") for a in inp.actions
    ]
    applied, unknown = apply_actions(ctx.deps, inp.org, inp.namespace, actions, inp.dry_run)
    return ApplyOutput(
        applied=[AppliedOut(**a.__dict__) for a in applied],
        unknown=[UnknownOut(key=a.key, user_id=a.user_id) for a in unknown],
        dry_run=inp.dry_run,
    )


# ---- loom demote-activity-narration --------------------------------------------------------

# A page's junk rows each take a demote and a label: one memory.apply call a page.
PAGE_SIZE = MAX_ACTIONS // 2


@dataclass
class CleanUp:
    """What a namespace's clean-up found and did, by class."""

    read: int = 0
    found: Counter[str] = field(default_factory=Counter)
    changed: int = 0
    skipped_read: int = 0  # read by key within --days
    skipped_kept: int = 0  # pinned or locked: a person chose to keep them as they are
    skipped_done: int = 0  # labelled by an earlier run

    def summary(self, org: str, namespace: str, dry_run: bool) -> str:
        verb = "would change" if dry_run else "changed"
        classes = ", ".join(f"{c} {n}" for c, n in sorted(self.found.items())) or "none"
        line = f"{org}/{namespace}: read {self.read} memories; junk found: {classes};"
        line += f" {verb} {self.changed}"
        skipped = (
            ("read by key recently", self.skipped_read),
            ("pinned or locked", self.skipped_kept),
            ("labelled before", self.skipped_done),
        )
        left = [f"{n} {why}" for why, n in skipped if n]
        if left:
            line += f"; left alone: {', '.join(left)}"
        return line + ("" if not dry_run else " (dry run: pass --apply to change them)")


def demote_namespace(
    deps: Deps,
    org: str,
    namespace: str,
    *,
    classes: tuple[str, ...] = ACTIVITY_NARRATION,
    apply: bool = False,
    label_only: bool = False,
    days: int | None = None,
    factor: float = 0.25,
    progress: Callable[[int, int], None] = lambda done, total: None,
) -> CleanUp:
    """Classify a namespace's live facts a page at a time and, through
    memory.apply (audited as any call of it), demote and label those in `classes`. Rows read
    by key within `days`, pinned or locked rows, and rows a run labelled before are left
    alone. Without `apply`, a dry run."""
    unknown = set(classes) - set(TEXT_CLASSES)
    if unknown:
        raise ValueError(f"no such class: {', '.join(sorted(unknown))}")
    since = deps.clock() - timedelta(days=days) if days is not None else None
    done = CleanUp()
    total = reviewable_count(deps, org, namespace)
    caller = local_caller(org)
    for page, read in review_pages(deps, org, namespace, PAGE_SIZE):
        actions: list[dict[str, object]] = []
        for row in page:
            quality = classify(row["value"])
            if quality not in classes:
                continue
            done.found[quality] += 1
            if any(t.startswith(QUALITY_TAG) for t in row["tags"]):
                done.skipped_done += 1
            elif row["pinned"] or row["locked"]:
                done.skipped_kept += 1
            elif read_since(row, since):
                done.skipped_read += 1
            else:
                ident = {"key": row["key"], "user_id": row["user_id"]}
                if not label_only:
                    actions.append({"action": "demote", "factor": factor, **ident})
                actions.append({"action": "label", "quality_class": quality, **ident})
        if actions:
            body = {"org": org, "namespace": namespace, "actions": actions, "dry_run": not apply}
            result = call("memory.apply", body, caller, deps).body
            done.changed += len({(a["user_id"], a["key"]) for a in result["applied"]})
        done.read = read
        progress(read, max(total, read))
    return done
