"""The dashboard: static HTML, CSS and JavaScript that talk to `/v1/<op>` like any client.

Served by the app itself (`GET /` and `GET /dashboard/<file>`), so it works wherever the API
does. Assets are read from the package on first use: importing this module does no I/O.
"""

from __future__ import annotations

import functools
from pathlib import Path

STATIC = Path(__file__).parent / "static"
INDEX = "index.html"
TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
}
# The page loads nothing but its own files and calls nothing but its own origin.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:;"
    " connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}

Served = tuple[int, str, dict[str, str]]


@functools.cache
def _read(name: str) -> str:
    return (STATIC / name).read_text(encoding="utf-8")


def _files() -> frozenset[str]:
    return frozenset(p.name for p in STATIC.iterdir() if p.suffix in TYPES)


def page(path: str = "/") -> Served:
    """GET /: the dashboard's one page. Its asset and API URLs are relative to a folder, so a
    page address without the trailing slash (an API Gateway stage root such as `/dev`: pass
    the request's full path) is sent to the one with it; the relative Location keeps any
    prefix the client used."""
    last = path.rstrip("/").rsplit("/", 1)[-1]
    if last and not path.endswith("/"):
        return _redirect(f"{last}/")
    return _serve(INDEX)


def asset(name: str) -> Served:
    """GET /dashboard/<name>: one file of the static folder, by exact name; anything else 404.
    The page itself, asked for here, is sent to `/`: its relative URLs only resolve there."""
    if name == INDEX:
        return _redirect("../")
    if name not in _files():
        return 404, "not found", {"Content-Type": "text/plain; charset=utf-8"}
    return _serve(name)


def _serve(name: str) -> Served:
    content_type = TYPES[Path(name).suffix]
    return 200, _read(name), {"Content-Type": content_type, **SECURITY_HEADERS}


def _redirect(location: str) -> Served:
    headers = {"Location": location, "Content-Type": "text/plain; charset=utf-8"}
    return 302, f"see {location}", {**headers, **SECURITY_HEADERS}
