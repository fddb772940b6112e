"""Secrets in the cloud: the database credentials and the model key, read from Secrets
Manager through Powertools Parameters with a five-minute cache."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

CACHE_SECONDS = 300


def _secret(arn: str, *, as_json: bool) -> Any:
    from aws_lambda_powertools.utilities import parameters

    return parameters.get_secret(arn, transform="json" if as_json else None, max_age=CACHE_SECONDS)


def database_url(secret_arn: str, host: str | None) -> str:
    """A libpq URL from an RDS secret (username, password, host, port, dbname); `host`
    (the RDS Proxy endpoint) replaces the secret's host. TLS is required."""
    s = _secret(secret_arn, as_json=True)
    user, password = quote(s["username"], safe=""), quote(s["password"], safe="")
    where = host or s["host"]
    return (
        f"postgresql://{user}:{password}@{where}:{s.get('port', 5432)}/"
        f"{s.get('dbname', 'loom')}?sslmode=require"
    )


def api_key(secret_arn: str) -> str:
    return str(_secret(secret_arn, as_json=False))
