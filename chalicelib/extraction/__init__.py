"""memory.set_from_messages: turning a transcript into durable facts, step by step."""
