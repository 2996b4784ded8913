"""How much of each streamed part a client already has: the one answer every adapter uses.

A text or reasoning part reaches an adapter two ways: as ``message.part.delta`` events
(append these) and as whole ``message.part.updated`` parts (send only what is new). A
pending tool call's raw arguments grow the same way. ``SentText`` keeps, per part, what
was sent: deltas are kept as pieces and joined only when a whole part is compared, so a
long part costs linear time, not quadratic.
"""

from __future__ import annotations


class SentText:
    def __init__(self) -> None:
        self._pieces: dict[str, list[str]] = {}

    def __contains__(self, part_id: str) -> bool:
        return part_id in self._pieces

    def start(self, part_id: str) -> bool:
        """Begin following a part; False if it was followed already."""
        if part_id in self._pieces:
            return False
        self._pieces[part_id] = []
        return True

    def text(self, part_id: str) -> str:
        pieces = self._pieces.get(part_id)
        if not pieces:
            return ""
        if len(pieces) > 1:
            pieces[:] = ["".join(pieces)]
        return pieces[0]

    def append(self, part_id: str, delta: str) -> bool:
        """Record a delta of a followed part; False (nothing recorded) for any other."""
        pieces = self._pieces.get(part_id)
        if pieces is None:
            return False
        pieces.append(delta)
        return True

    def catch_up(self, part_id: str, whole: str) -> str:
        """What ``whole`` adds to what was sent of the part (following it from now on);
        empty when nothing is new or ``whole`` does not continue what was sent."""
        self.start(part_id)
        sent = self.text(part_id)
        if len(whole) <= len(sent) or not whole.startswith(sent):
            return ""
        self._pieces[part_id] = [whole]
        return whole[len(sent) :]

    def copy(self) -> SentText:
        twin = SentText()
        twin._pieces = {part_id: list(pieces) for part_id, pieces in self._pieces.items()}
        return twin

    def forget(self, part_id: str) -> None:
        self._pieces.pop(part_id, None)
