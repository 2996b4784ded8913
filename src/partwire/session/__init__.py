"""The session loop: prompts, steps, the stream processor, status."""
