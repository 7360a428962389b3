"""A strategy module with a syntax error (for the malformed corpus)."""

def compact(messages, client, output_stream, context_limit)
    return messages
