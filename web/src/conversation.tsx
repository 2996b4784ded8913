// The conversation: a windowed list (only messages near the viewport are in the DOM),
// following new content until the user scrolls up.
import type { ComponentChildren } from "preact";
import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import { api } from "./api";
import { useStore } from "./hooks";
import { MessageRow } from "./parts";
import { store } from "./store";
import type { Message } from "./types";

const ESTIMATE = 140;
const OVERSCAN = 1200;
const NEAR_BOTTOM = 48;

type Scroller = { current: HTMLDivElement | null };

/**
 * Follow new content until the user looks back. The ref is what observers read: state
 * lags a render behind a fast stream.
 */
function useFollow(scroller: Scroller) {
  const [following, setFollowing] = useState(true);
  const followingRef = useRef(true);
  const lastTop = useRef(0);
  const follow = (on: boolean) => {
    followingRef.current = on;
    setFollowing(on);
  };
  const toBottom = () => {
    const el = scroller.current;
    if (!el || !followingRef.current) return false;
    const target = el.scrollHeight - el.clientHeight;
    // Remember where the view is even when it is already there: content that shrank
    // clamps scrollTop down by itself, and the scroll event for that clamp (which may
    // arrive after the content grew again) must not read as the user scrolling up.
    const moved = Math.abs(el.scrollTop - target) > 1;
    if (moved) el.scrollTop = target;
    lastTop.current = el.scrollTop;
    return moved;
  };

  // a delta grows the last message without re-rendering the list: follow it too
  useEffect(() => {
    const inner = scroller.current?.firstElementChild;
    if (!inner) return;
    const grow = new ResizeObserver(() => void toBottom());
    grow.observe(inner);
    return () => grow.disconnect();
  }, []);

  const scrolled = (el: HTMLDivElement) => {
    if (el.scrollHeight - el.scrollTop - el.clientHeight < NEAR_BOTTOM) follow(true);
    else if (el.scrollTop < lastTop.current - 2) follow(false);
    lastTop.current = el.scrollTop;
  };
  // the user's own intent to look back wins over following at once
  const intent = {
    onWheel: (e: WheelEvent) => e.deltaY < 0 && follow(false),
    onKeyDown: (e: KeyboardEvent) => ["PageUp", "ArrowUp", "Home"].includes(e.key) && follow(false),
    onTouchMove: () => follow(false),
  };
  const jump = () => {
    follow(true);
    toBottom();
  };
  return { following, followingRef, toBottom, scrolled, intent, jump };
}

/** Measured row heights; a row that changes size above the viewport keeps the view in place. */
function useRowHeights(scroller: Scroller, followingRef: { current: boolean }) {
  const heights = useRef(new Map<string, number>());
  const [, setMeasured] = useState(0);
  const observer = useRef<ResizeObserver | null>(null);
  useEffect(() => {
    observer.current = new ResizeObserver((entries) => {
      let changed = false;
      let shift = 0;
      const el = scroller.current;
      const viewTop = el?.getBoundingClientRect().top ?? 0;
      for (const entry of entries) {
        const row = entry.target as HTMLElement;
        const id = row.dataset.row;
        const height = row.offsetHeight;
        const before = id ? heights.current.get(id) : undefined;
        if (!id || height === 0 || before === height) continue;
        if (row.getBoundingClientRect().bottom <= viewTop) shift += height - (before ?? ESTIMATE);
        heights.current.set(id, height);
        changed = true;
      }
      if (el && shift !== 0 && !followingRef.current) el.scrollTop += shift;
      if (changed) setMeasured((n) => n + 1);
    });
    return () => observer.current?.disconnect();
  }, []);
  const rowRef = (element: HTMLDivElement | null) => {
    if (element) observer.current?.observe(element);
  };
  return { heights: heights.current, rowRef };
}

/** Prefix offsets of the rows, from measured or estimated heights. */
function offsetsOf(messages: Message[], heights: Map<string, number>): number[] {
  const offsets = new Array<number>(messages.length + 1);
  offsets[0] = 0;
  for (let i = 0; i < messages.length; i++) {
    offsets[i + 1] = offsets[i] + (heights.get(messages[i].id) ?? ESTIMATE);
  }
  return offsets;
}

/** The rows [first, last) near a viewport at ``top``. */
function rowsNear(offsets: number[], top: number, height: number): [number, number] {
  const count = offsets.length - 1;
  const first = Math.max(0, search(offsets, top - OVERSCAN) - 1);
  return [first, Math.min(count, Math.max(search(offsets, top + height + OVERSCAN), first + 1))];
}

export function Conversation({ sessionID, empty }: { sessionID: string; empty?: ComponentChildren }) {
  useStore(`session:${sessionID}`, "sessions");
  const revert = store.sessions.get(sessionID)?.revert;
  const all = store.messages.get(sessionID) ?? [];
  // a reverted session hides the undone messages until the next prompt removes them
  // (by position in history, never by comparing ids)
  // (a revert to a part keeps its message, which shows the parts before it)
  const cut = revert ? all.findIndex((m) => m.id === revert.messageID) : -1;
  const messages = cut >= 0 ? all.slice(0, revert?.partID ? cut + 1 : cut) : all;
  const scroller = useRef<HTMLDivElement>(null);
  const [view, setView] = useState({ top: 0, height: 800 });
  const { following, followingRef, toBottom, scrolled, intent, jump } = useFollow(scroller);
  const { heights, rowRef } = useRowHeights(scroller, followingRef);

  // while following, the window is the bottom one even before the scroll catches up,
  // so a long session does not render its oldest rows first
  const offsets = offsetsOf(messages, heights);
  const total = offsets[messages.length];
  const top = followingRef.current ? Math.max(0, total - view.height) : view.top;
  const [first, last] = rowsNear(offsets, top, view.height);

  // a prompt sent from this page always brings the view to the bottom
  const sent = useStore(`sent:${sessionID}`);
  useEffect(() => {
    if (sent > 0) jump();
  }, [sent]);

  const measureView = () => {
    const el = scroller.current;
    if (el) setView({ top: el.scrollTop, height: el.clientHeight });
  };
  useLayoutEffect(() => {
    if (toBottom()) measureView();
  });
  const onScroll = () => {
    const el = scroller.current;
    if (!el) return;
    scrolled(el);
    measureView();
  };

  return (
    <div class="conversation-wrap">
      <div class="conversation" ref={scroller} onScroll={onScroll} {...intent} tabIndex={-1} data-testid="conversation">
        <div class="conversation-inner" style={{ height: `${total}px` }}>
          <div class="rows" style={{ transform: `translateY(${offsets[first]}px)` }}>
            {messages.slice(first, last).map((message) => (
              <div key={message.id} class="row" data-row={message.id} ref={rowRef}>
                <MessageRow message={message} />
              </div>
            ))}
          </div>
        </div>
        {messages.length === 0 && !revert && (empty ?? <div class="empty">Send a prompt to start.</div>)}
        {revert && <RevertBar sessionID={sessionID} hidden={all.length - messages.length} partial={!!revert.partID} />}
      </div>
      {!following && (
        <button type="button" class="jump" onClick={jump}>
          ↓ Jump to latest
        </button>
      )}
    </div>
  );
}

/** The first index i with offsets[i] > y. */
function search(offsets: number[], y: number): number {
  let lo = 0;
  let hi = offsets.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (offsets[mid] <= y) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function RevertBar({ sessionID, hidden, partial }: { sessionID: string; hidden: number; partial: boolean }) {
  const restore = () => void api.unrevert(sessionID).catch((e: Error) => store.reportError(e.message));
  const messages = hidden === 1 ? "1 message" : `${hidden} messages`;
  return (
    <div class="revert-bar notice" role="status">
      {partial ? `Rewound to before a part (${messages} after it)` : `${messages} reverted`}, with their file
      changes. The next prompt discards them.{" "}
      <button type="button" class="btn" onClick={restore}>
        Restore
      </button>
    </div>
  );
}
