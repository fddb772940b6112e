"""The deployed schedules follow the cadence settings they are packaged with."""

from __future__ import annotations

import pytest

import app as loom_app


def _rates() -> dict[str, str]:
    return {
        source.name: source.schedule_expression.to_string()
        for source in loom_app.app.event_sources
        if hasattr(source, "schedule_expression")
    }


def test_each_worker_schedule_is_its_settings_default_when_packaged_without_one():
    """GIVEN no cadence variable set when the app is packaged
    WHEN its schedules are read
    THEN each worker runs at its setting's default, as `make run` does (the observe and
    memory workers every minute, the titler every 15, retention every 60)."""
    rates = _rates()
    assert rates["conversation_titler"] == "rate(15 minutes)"
    assert rates["conversation_retention"] == "rate(60 minutes)"
    assert rates["observe_extract"] == "rate(1 minute)"
    assert rates["entity_extractor"] == rates["embedding_worker"] == "rate(1 minute)"


@pytest.mark.parametrize(
    ("variable", "value", "setting", "per", "rate"),
    [
        ("CONVERSATION_TITLER_INTERVAL_MINUTES", "5", "conversation_titler_interval_minutes",
         60, "rate(5 minutes)"),
        ("OBSERVE_EXTRACT_INTERVAL_SECONDS", "300", "observe_extract_interval_seconds", 1,
         "rate(5 minutes)"),
        ("MEMORY_WORKERS_INTERVAL_SECONDS", "10", "memory_workers_interval_seconds", 1,
         "rate(1 minute)"),  # EventBridge's finest
        ("RETENTION_INTERVAL_MINUTES", "abc", "retention_interval_minutes", 60,
         "rate(60 minutes)"),  # unreadable: the default (the settings check names it at start)
    ],
)  # fmt: skip
def test_a_cadence_set_when_packaged_becomes_the_schedule(
    monkeypatch, variable, value, setting, per, rate
):
    """GIVEN a cadence variable set when the app is packaged
    WHEN the schedule is built from it
    THEN it runs at that cadence in whole minutes, at least one."""
    monkeypatch.setenv("LOOM_" + variable, value)
    assert loom_app._every(setting, per).to_string() == rate
