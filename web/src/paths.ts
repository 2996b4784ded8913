// Paths in the UI are shown relative to the project directory.
let root = "";

export function setProjectRoot(directory: string): void {
  root = directory.replace(/\/+$/, "");
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
