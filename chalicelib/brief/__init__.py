"""Session briefs: sections, merging and rendering, the deterministic builder, the LLM reviser."""
