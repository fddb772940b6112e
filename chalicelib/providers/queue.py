"""Delivery of deferred jobs: SQS in the cloud, the table itself locally, and a fake."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol

from chalicelib.observability import logger

SQS_MAX_DELAY = 900  # seconds; a longer wait is re-sent when the message arrives early


class JobQueue(Protocol):
    name: str

    def send(self, queue_id: str, delay_seconds: int = 0) -> None: ...


def send_committed(queue: JobQueue, queue_id: str) -> bool:
    """Send the message of a job whose row has committed; False when the send failed. A
    failure is logged, not raised: the job is queued already, and resend_stranded sends it
    again within minutes (an error answer would have the client queue it twice)."""
    try:
        queue.send(queue_id)
    except Exception:
        logger.warning(
            "the job's message was not sent; it is sent again within minutes",
            extra={"queue_id": queue_id},
            exc_info=True,
        )
        return False
    return True


class SqsQueue:
    """An SQS queue; the message body is the queue_id only (the table is the truth)."""

    name = "sqs"

    def __init__(self, queue_url: str, client: Any = None):
        self.queue_url = queue_url
        self._client = client

    def _sqs(self) -> Any:
        if self._client is None:
            import boto3

            self._client = boto3.client("sqs")
        return self._client

    def send(self, queue_id: str, delay_seconds: int = 0) -> None:
        self._sqs().send_message(
            QueueUrl=self.queue_url,
            MessageBody=json.dumps({"queue_id": queue_id}),
            DelaySeconds=max(0, min(SQS_MAX_DELAY, int(delay_seconds))),
        )


class TableQueue:
    """No message at all: the local worker polls the table for due jobs."""

    name = "table"

    def send(self, queue_id: str, delay_seconds: int = 0) -> None:
        return None


@dataclass
class FakeQueue:
    """Records what was sent, for tests."""

    sent: list[tuple[str, int]] = field(default_factory=list)
    name: str = "fake"

    def send(self, queue_id: str, delay_seconds: int = 0) -> None:
        self.sent.append((queue_id, delay_seconds))
