// Paths in the UI are shown relative to the project directory.
import { api } from "./api";

let root = "";
let loading: Promise<string> | null = null;

export function setProjectRoot(directory: string): void {
  root = directory.replace(/\/+$/, "");
}

/** The project directory, fetched once (GET /path). Anything that builds a path from it
 * (an @-mention's file:// URL) waits for this instead of reading a root not yet known. */
export function loadProjectRoot(): Promise<string> {
  if (!loading) {
    loading = api.path().then(
      (p) => {
        setProjectRoot(p.directory);
        return root;
      },
      (error: unknown) => {
        loading = null; // the next caller asks again
        throw error;
      },
    );
  }
  return loading;
}

export function projectRoot(): string {
  return root;
}

export function relativePath(path: unknown): string {
  if (typeof path !== "string") return "";
  if (root && path === root) return ".";
  if (root && path.startsWith(root + "/")) return path.slice(root.length + 1);
  return path;
}

/** Strip ANSI escape sequences (colours, cursor moves) from terminal output. */
export function stripAnsi(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/\u001b\[[0-9;?]*[ -/]*[@-~]|\u001b\][^\u0007]*(\u0007|\u001b\\)/g, "");
}
