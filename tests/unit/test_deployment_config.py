"""The deployment's settings against the limits they must fit: Lambda timeouts, the queue the
consumer reads, the 5xx alarm."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chalicelib.config import Settings
from chalicelib.providers.openai_client import MAX_RETRIES

ROOT = Path(__file__).parents[2]
CONFIG = json.loads((ROOT / ".chalice" / "config.json").read_text())
TEMPLATE = json.loads((ROOT / "infra" / "template.json").read_text())
TRIES = MAX_RETRIES + 1
BACKOFF_SECONDS = 3.0  # the openai client's waits between tries, and a margin to answer


def _settings(stage: str, function: str) -> Settings:
    """What a function of `stage` boots with: its environment over the stage's, over the
    defaults."""
    stage_cfg = CONFIG["stages"][stage]
    env = {
        **CONFIG.get("environment_variables", {}),
        **stage_cfg["environment_variables"],
        **stage_cfg["lambda_functions"].get(function, {}).get("environment_variables", {}),
    }
    return Settings.model_validate(
        {k[len("LOOM_") :].lower(): v for k, v in env.items() if k.startswith("LOOM_")}
    )


def _timeout(stage: str, function: str) -> float:
    stage_cfg = CONFIG["stages"][stage]
    return (
        stage_cfg["lambda_functions"]
        .get(function, {})
        .get("lambda_timeout", stage_cfg["lambda_timeout"])
    )


@pytest.mark.parametrize("stage", ["dev", "prod"])
@pytest.mark.parametrize("function", ["api_handler", "extraction_queue"])
def test_a_hung_model_or_embedder_is_given_up_before_the_function_times_out(stage, function):
    """GIVEN a model provider that never answers
    WHEN an op or a queued job calls it (every try, then the embedder's, bounded)
    THEN the call has failed, and Loom has answered its error (502/503) or put the job back
    without spending an attempt, before Lambda stops the function (API Gateway would answer
    504, and a job killed mid-run counts as a lost worker)."""
    settings = _settings(stage, function)
    worst = TRIES * (settings.llm_timeout_seconds + settings.embed_timeout_seconds)
    assert worst + BACKOFF_SECONDS < _timeout(stage, function), (stage, function, worst)


def test_the_consumer_reads_the_queue_the_template_creates():
    """GIVEN a package of any stage, deployed with any Stage parameter
    WHEN its consumer's event source is read (Chalice writes Fn::Sub of arn:...:<queue name>)
    THEN it names the queue the template creates: the same ${Stage} name, not one fixed from
    the stage packaged."""
    from chalice.app import SQSEventConfig

    from app import app

    (consumer,) = [e for e in app.event_sources if isinstance(e, SQSEventConfig)]
    created = TEMPLATE["Resources"]["ExtractionQueueQueue"]["Properties"]["QueueName"]
    assert consumer.queue == created["Fn::Sub"] == "loom-extraction-${Stage}"


def test_the_api_alarm_watches_the_share_of_requests_answered_5xx():
    """API Gateway's 5XXError is 0 or 1 a request: its average is the rate, a sum only a count
    whose meaning moves with traffic."""
    alarm = TEMPLATE["Resources"]["Api5xxAlarm"]["Properties"]
    assert alarm["Statistic"] == "Average"
    assert 0 < TEMPLATE["Parameters"]["ApiFiveXxThreshold"]["Default"] < 1


def test_every_function_the_app_declares_has_its_timeout_in_each_cloud_stage():
    from app import app

    names = {e.name for e in app.event_sources} | {"api_handler", "admin"}
    for stage in ("dev", "prod"):
        assert names <= set(CONFIG["stages"][stage]["lambda_functions"]), stage
