"""Protocol: framing, request/response types, API keys, error codes."""
