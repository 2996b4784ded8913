"""The Python client: typed HTTP calls, resumable events, and the state reducer."""
