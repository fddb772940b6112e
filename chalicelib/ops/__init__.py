"""One module per plane; importing this package registers every op."""

from chalicelib.ops import compaction, conversation, saved_messages, system  # noqa: F401
