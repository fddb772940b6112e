"""One module per plane; importing this package registers every op."""

# isort: off
# The order ops register in is the order MCP lists them: the transcript's come first.
from chalicelib.ops import (  # noqa: F401
    conversation_logging,
    conversation_writes,
    conversation_reads,
    conversation_search,
    compaction,
    erasure,
    extraction,
    extraction_policy,
    extraction_status,
    model_calls,
    memory,
    knowledge,
    learnings,
    memory_quality,
    observe,
    saved_messages,
    session,
    system,
    agent_context,
    agent_recall,
)
# isort: on
