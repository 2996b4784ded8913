// The project this page serves, and a switcher over the directories the server knows.
import { useEffect, useState } from "preact/hooks";
import { api, projectDirectory, type Project } from "./api";
import { useProjectRoot } from "./hooks";

function baseName(path: string): string {
  return path.replace(/\/+$/, "").split("/").pop() || path;
}

/** Open the page for another project directory (a fresh page: its own sessions and files). */
function openProject(directory: string): void {
  const url = new URL(location.href);
  url.searchParams.set("directory", directory);
  url.hash = "";
  location.assign(url.toString());
}

export function ProjectSwitcher() {
  const root = useProjectRoot();
  const [projects, setProjects] = useState<Project[]>([]);
  useEffect(() => {
    api.projects().then(setProjects, () => undefined);
  }, []);
  const directories = projects.map(projectDirectory);
  if (root && !directories.includes(root)) directories.unshift(root);
  return (
    <div class="project">
      <div class="project-name" data-testid="project-name" title={root}>
        {root ? baseName(root) : "…"}
      </div>
      {directories.length > 1 ? (
        <select aria-label="Project" value={root} onChange={(e) => openProject((e.target as HTMLSelectElement).value)}>
          {directories.map((d) => (
            <option key={d} value={d}>
              {baseName(d)} — {d}
            </option>
          ))}
        </select>
      ) : (
        <div class="project-path" title={root}>
          <bdi>{root}</bdi>
        </div>
      )}
    </div>
  );
}
