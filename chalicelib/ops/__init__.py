"""One module per plane; importing this package registers every op."""

from chalicelib.ops import conversation, system  # noqa: F401
