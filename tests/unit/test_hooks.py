"""A hook point runs what a test set on it, and a point no step reaches cannot be set."""

from __future__ import annotations

import pytest

from chalicelib.hooks import Hooks


def test_a_point_runs_what_was_set_on_it_and_nothing_otherwise():
    """GIVEN hooks with one point set
    WHEN that point and another are reached
    THEN the function set runs once, with what the step passed; the other point does nothing."""
    seen: list[dict] = []
    hooks = Hooks()
    hooks.on("erasure.batch", lambda **kw: seen.append(kw))
    hooks.at("erasure.batch", job={"job_id": "j1"})
    hooks.at("observe.claimed", rows=[])
    assert seen == [{"job": {"job_id": "j1"}}]


def test_a_misspelt_point_is_refused():
    """GIVEN hooks WHEN a test sets a point no step reaches THEN it is refused by name."""
    with pytest.raises(KeyError, match="erasure.batches"):
        Hooks().on("erasure.batches", lambda **kw: None)
