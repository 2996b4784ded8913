import { useEffect, useState } from "preact/hooks";
import { loadProjectRoot, projectRoot } from "./paths";
import { store } from "./store";

/** Re-render when any of the store keys is notified; returns a value that changes with them. */
export function useStore(...keys: string[]): number {
  const [, setTick] = useState(0);
  const version = () => keys.reduce((sum, key) => sum + store.version(key), 0);
  const rendered = version();
  useEffect(() => {
    const bump = () => setTick((t) => t + 1);
    const offs = keys.map((key) => store.subscribe(key, bump));
    // a change between this render and the subscription would otherwise be missed
    if (version() !== rendered) bump();
    return () => offs.forEach((off) => off());
  }, keys);
  return rendered;
}

/** Milliseconds since `start`, ticking every second while `live`. */
export function useElapsed(start: number | undefined, end: number | undefined, live: boolean): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    if (!live) return;
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, [live]);
  if (start === undefined) return 0;
  return (end ?? now) - start;
}

export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(s < 10 ? 1 : 0)} s`;
  if (s < 3600) return `${Math.floor(s / 60)} m ${Math.floor(s % 60)} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} m`;
}

/** The project directory this page serves, once GET /path has answered ("" before). */
export function useProjectRoot(): string {
  const [root, setRoot] = useState(projectRoot());
  useEffect(() => {
    if (!root) loadProjectRoot().then(setRoot, () => undefined);
  }, []);
  return root;
}

/** Re-render every `ms` milliseconds (relative times stay true). */
export function useTick(ms: number): void {
  const [, setTick] = useState(0);
  useEffect(() => {
    const timer = setInterval(() => setTick((t) => t + 1), ms);
    return () => clearInterval(timer);
  }, [ms]);
}

/** "just now", "5 min ago", "3 h ago", "2 d ago". */
export function ago(ms: number, now = Date.now()): string {
  const seconds = Math.max(0, Math.floor((now - ms) / 1000));
  if (seconds < 60) return "just now";
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h ago`;
  return `${Math.floor(seconds / 86400)} d ago`;
}
