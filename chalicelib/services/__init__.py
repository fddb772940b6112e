"""Domain steps shared by ops and workers: writing turns and memories, erasure, MCP sessions."""
