"""The cloud's moving parts offline: the SQS adapter against moto, and every Lambda
entrypoint invoked through Chalice's test client with the event shape AWS sends."""

from __future__ import annotations

import json
import time

import boto3
import pytest
from chalice.app import ScheduledEventConfig
from moto import mock_aws

from chalicelib.auth import local_caller
from chalicelib.providers.queue import SqsQueue
from chalicelib.registry import call


def _scheduled() -> list[str]:
    from app import app

    return sorted(e.name for e in app.event_sources if isinstance(e, ScheduledEventConfig))


SCHEDULED = _scheduled()  # every schedule app.py declares: a new one cannot be missed here


@pytest.fixture
def sqs():
    with mock_aws():
        client = boto3.client("sqs", region_name="us-east-1")
        dlq = client.create_queue(QueueName="loom-extraction-dlq")["QueueUrl"]
        dlq_arn = client.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        url = client.create_queue(
            QueueName="loom-extraction",
            Attributes={
                "VisibilityTimeout": "1",
                "RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 5}),
            },
        )["QueueUrl"]
        yield client, url, dlq


def test_a_deferred_request_is_sent_to_sqs_only_after_its_row_committed(sqs, deps, org, pool):
    """GIVEN the SQS adapter on moto's queue WHEN a request is deferred THEN at the moment
    of sending, another connection already sees the committed job row, and the message
    carries only its queue_id."""
    client, url, _ = sqs
    seen_at_send = []

    class Watching:
        def send_message(self, **kw):
            queue_id = json.loads(kw["MessageBody"])["queue_id"]
            with pool.connection() as conn:
                seen_at_send.append(
                    conn.execute(
                        "SELECT count(*) FROM loom.memory_extraction_queue WHERE queue_id = %s",
                        (queue_id,),
                    ).fetchone()[0]
                )
            return client.send_message(**kw)

    deps._queue = SqsQueue(url, client=Watching())
    body = {"namespace": "c", "agent": "a", "messages": [{"role": "user", "content": "hi"}]}
    out = call("memory.set_from_messages", {**body, "defer": True}, local_caller(org), deps).body
    got = client.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    assert seen_at_send == [1]
    assert [json.loads(m["Body"]) for m in got] == [{"queue_id": out["queue_id"]}]


def test_an_unacknowledged_message_returns_after_its_visibility_timeout(sqs):
    client, url, _ = sqs
    SqsQueue(url, client=client).send("q-1")
    first = client.receive_message(QueueUrl=url)["Messages"]
    assert client.receive_message(QueueUrl=url).get("Messages", []) == []  # invisible
    time.sleep(1.2)
    again = client.receive_message(QueueUrl=url)["Messages"]
    assert again[0]["Body"] == first[0]["Body"]


def test_a_message_received_five_times_moves_to_the_dead_letter_queue(sqs):
    client, url, dlq = sqs
    SqsQueue(url, client=client).send("q-poison")
    for _ in range(5):
        assert client.receive_message(QueueUrl=url, VisibilityTimeout=0).get("Messages")
    assert client.receive_message(QueueUrl=url).get("Messages", []) == []
    dead = client.receive_message(QueueUrl=dlq)["Messages"]
    assert json.loads(dead[0]["Body"]) == {"queue_id": "q-poison"}


@pytest.mark.parametrize("name", SCHEDULED)
def test_every_scheduled_entrypoint_runs_on_a_scheduled_event(client, name):
    event = client.events.generate_cw_event(
        source="aws.events", detail_type="Scheduled Event", detail={}, resources=[]
    )
    result = client.lambda_.invoke(name, event)
    assert result.payload is not None


def test_nine_schedules_are_declared():
    assert len(SCHEDULED) == 9 and "erasure_worker" in SCHEDULED


def test_the_admin_entrypoint_runs_loom_commands_beside_the_database(
    client, monkeypatch, database_url, org
):
    """GIVEN the admin function (it runs in the VPC, where the database is reached)
    WHEN it is invoked with migrate, then token mint, then a command it does not run, then no
    args
    THEN migrate answers exit 0; the minted token (its output's last line) is accepted by the
    API; serve and an empty payload answer exit 2 with a message saying what to send."""
    monkeypatch.setenv("LOOM_DATABASE_URL", database_url)
    monkeypatch.setenv("LOOM_EMBEDDER", "fake")
    migrated = client.lambda_.invoke("admin", {"args": ["migrate"]}).payload
    assert migrated["exit_code"] == 0, migrated
    minted = client.lambda_.invoke(
        "admin", {"args": ["token", "mint", "--org", org, "--role", "viewer"]}
    ).payload
    assert minted["exit_code"] == 0, minted
    token = minted["stdout"].strip().splitlines()[-1]
    resp = client.http.post(
        "/v1/system.whoami",
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
        body="{}",
    )
    assert resp.status_code == 200 and json.loads(resp.body)["org"] == org
    for payload in ({"args": ["serve"]}, {}):
        refused = client.lambda_.invoke("admin", payload).payload
        assert refused["exit_code"] == 2 and "error:" in refused["stderr"], refused


def test_the_api_entrypoint_answers_an_api_gateway_request(client):
    resp = client.http.post(
        "/v1/system.whoami", headers={"Content-Type": "application/json"}, body="{}"
    )
    assert resp.status_code == 401  # the test stage runs with tokens
    assert json.loads(resp.body)["error"]["code"] == "unauthorized"


def test_database_and_model_credentials_come_from_secrets_manager(monkeypatch):
    """GIVEN the cloud's secrets in (moto's) Secrets Manager WHEN Deps resolves the database
    and the model key THEN the URL points at the proxy with TLS and the key is the secret's."""
    from chalicelib.deps import Deps
    from tests.conftest import make_settings

    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws():
        sm = boto3.client("secretsmanager", region_name="us-east-1")
        db = sm.create_secret(
            Name="loom-db",
            SecretString=json.dumps(
                {
                    "username": "loom",
                    "password": "p@ss/word",
                    "host": "cluster.internal",
                    "port": 5432,
                    "dbname": "loom",
                }
            ),  # fmt: skip
        )["ARN"]
        key = sm.create_secret(Name="loom-openai", SecretString="sk-test-123")["ARN"]
        deps = Deps(
            make_settings(
                database_secret_arn=db,
                database_host="proxy.internal",
                llm_api_key_secret_arn=key,
                llm_provider="openai",
            )
        )
        url = deps.database_url()
        llm = deps.llm
    assert url == "postgresql://loom:p%40ss%2Fword@proxy.internal:5432/loom?sslmode=require"
    assert llm._openai._api_key == "sk-test-123"
