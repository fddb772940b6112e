"""One module per plane; importing this package registers every op."""

from chalicelib.ops import system  # noqa: F401
