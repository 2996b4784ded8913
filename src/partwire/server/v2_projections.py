"""Folded v2 projections kept between requests, so a page of a session's durable history
costs about what the page costs, not what the session before it costs.

A v2 sequence number is a count of durable events from the session's start, so the only
way to one is to fold the log up to it. The log only grows, so a fold once done stays
true, and two things are kept per session (for the few sessions asked for last):

- the newest fold (the one the last request used): the projection, the id of the last
  event it folded and what that event made (a page may end part way through them). The
  next page that starts at or after it goes on from there, which is what a client paging
  forward asks for;
- marks: copies of the fold taken every ``MARK_EVERY`` durable events (the interval
  doubles once a session has ``MARKS`` of them), so a page further back starts from the
  mark before it rather than from the session's start.

A projection is taken out while a request uses it: two requests never share one.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from dataclasses import dataclass, field

from partwire.protocol.v2events import DurableEvents, seq_of
from partwire.schema.base import JSONObject
from partwire.storage.base import Store

KEPT = 8  # sessions whose folds are kept
MARK_EVERY = 1000  # durable events between marks, at first
MARKS = 16  # at most this many marks a session: past it, every other one goes


@dataclass
class Folded:
    """A projection, the last logged event it folded (None: none yet), and what that
    event made (a page may have ended part way through them)."""

    projection: DurableEvents
    through: str | None = None
    tail: list[JSONObject] = field(default_factory=list)

    @property
    def seq(self) -> int:
        return self.projection.seq

    def reaches(self, after: int) -> bool:
        """Whether the events after sequence number ``after`` can be made from here."""
        first = seq_of(self.tail[0]) - 1 if self.tail else self.seq
        return first <= after

    def since(self, after: int) -> list[JSONObject]:
        """What the last folded event made after ``after``."""
        return [d for d in self.tail if seq_of(d) > after]

    def copy(self) -> Folded:
        return Folded(self.projection.copy(), self.through, list(self.tail))


@dataclass
class _Kept:
    newest: Folded | None = None
    marks: list[Folded] = field(default_factory=list)
    every: int = field(default_factory=lambda: MARK_EVERY)


class Projections:
    def __init__(self) -> None:
        self._kept: OrderedDict[str, _Kept] = OrderedDict()

    def take(self, session_id: str, directory: str, after: int) -> Folded:
        """A fold from which the events after ``after`` can be made: the newest when it
        reaches there, else a copy of the last mark before it, else a new one."""
        kept = self._kept.get(session_id)
        if kept is None:
            return Folded(DurableEvents(session_id, directory))
        self._kept.move_to_end(session_id)
        if kept.newest is not None and kept.newest.reaches(after):
            newest, kept.newest = kept.newest, None
            return newest
        before = [mark for mark in kept.marks if mark.reaches(after)]
        return before[-1].copy() if before else Folded(DurableEvents(session_id, directory))

    def passed(self, session_id: str, folded: Folded) -> None:
        """``folded`` went on by an event: mark it when it is far enough past the last mark."""
        kept = self._kept.get(session_id)
        if kept is None:
            kept = self._kept[session_id] = _Kept()
            self._evict()
        last = kept.marks[-1].seq if kept.marks else 0
        if folded.seq < last + kept.every:
            return
        kept.marks.append(folded.copy())
        if len(kept.marks) > MARKS:
            kept.marks, kept.every = kept.marks[1::2], kept.every * 2

    def keep(self, session_id: str, folded: Folded) -> None:
        """``folded`` is done with: it is the session's newest fold now (where its client
        will ask next, if it pages on)."""
        kept = self._kept.setdefault(session_id, _Kept())
        kept.newest = folded
        self._kept.move_to_end(session_id)
        self._evict()

    def _evict(self) -> None:
        while len(self._kept) > KEPT:
            self._kept.popitem(last=False)


_BY_STORE: weakref.WeakKeyDictionary[Store, Projections] = weakref.WeakKeyDictionary()


def projections(store: Store) -> Projections:
    """The kept projections of the sessions in ``store``."""
    found = _BY_STORE.get(store)
    if found is None:
        found = _BY_STORE[store] = Projections()
    return found
