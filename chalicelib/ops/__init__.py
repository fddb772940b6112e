"""One module per plane; importing this package registers every op."""

from chalicelib.ops import compaction, conversation, saved_messages, session, system  # noqa: F401
