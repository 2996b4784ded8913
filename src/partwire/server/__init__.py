"""The HTTP server: app factory, routes, SSE."""
