"""One module per plane; importing this package registers every op."""

from chalicelib.ops import (  # noqa: F401
    compaction,
    conversation,
    erasure,
    extraction,
    extraction_policy,
    extraction_status,
    memory,
    observe,
    saved_messages,
    session,
    system,
)
