"""Folded v2 projections kept between requests, so paging a session's durable history
costs what the page costs, not what the session before it costs.

A v2 sequence number is a count of durable events from the session's start, so the only
way to one is to fold the log up to it. The log only grows, so a fold done once stays
true: after answering a page, the projection is kept with the id of the last event it
folded and the items that event made. The next page that starts at or after that point
goes on from there; any other request folds from the start as before. A projection is
taken out while a request uses it (two requests never share one) and the newest few
sessions' are kept.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from dataclasses import dataclass, field

from partwire.protocol.v2events import DurableEvents, seq_of
from partwire.schema.base import JSONObject
from partwire.storage.base import Store

KEPT = 8  # sessions whose folded projection is kept


@dataclass
class Folded:
    """A projection, the last logged event it folded (None: none yet), and what that
    event made (a page may have ended part way through them)."""

    projection: DurableEvents
    through: str | None = None
    tail: list[JSONObject] = field(default_factory=list)

    def reaches(self, after: int) -> bool:
        """Whether the events after sequence number ``after`` can be made from here."""
        first = seq_of(self.tail[0]) - 1 if self.tail else self.projection.seq
        return first <= after

    def since(self, after: int) -> list[JSONObject]:
        """What the last folded event made after ``after``."""
        return [d for d in self.tail if seq_of(d) > after]


class Projections:
    def __init__(self) -> None:
        self._kept: OrderedDict[str, Folded] = OrderedDict()

    def take(self, session_id: str, directory: str, after: int) -> Folded:
        """A projection from which the events after ``after`` can be made: a kept one when
        it reaches there, else a new one from the session's start."""
        kept = self._kept.pop(session_id, None)
        if kept is not None and kept.reaches(after):
            return kept
        return Folded(DurableEvents(session_id, directory))

    def keep(self, session_id: str, folded: Folded) -> None:
        self._kept[session_id] = folded
        while len(self._kept) > KEPT:
            self._kept.popitem(last=False)


_BY_STORE: weakref.WeakKeyDictionary[Store, Projections] = weakref.WeakKeyDictionary()


def projections(store: Store) -> Projections:
    """The kept projections of the sessions in ``store``."""
    found = _BY_STORE.get(store)
    if found is None:
        found = _BY_STORE[store] = Projections()
    return found
