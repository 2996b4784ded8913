"""Other views of the event log: pure functions from partwire's events to another protocol's
frames, each with a reducer that rebuilds the message from those frames alone."""

# the events part frames are made from (GET /session/{id}/stream subscribes to these)
FRAME_EVENTS = ("message.updated", "message.part.updated", "message.part.delta")
