"""Structured JSON logs (Powertools Logger): one line per op with op, org, namespace, status."""

from __future__ import annotations

from aws_lambda_powertools.logging import Logger

logger = Logger(service="loom")
