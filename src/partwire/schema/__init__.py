"""Wire types, shaped like opencode's HTTP/SSE API."""
