// The projects config (PROJECTS_CONFIG_PATH, default config/harness/projects.json):
// the repos Margot may propose work against (the repo allowlist) and the
// names by which research text refers to them.
//
// Format:
//   {
//     "projects": [
//       { "name": "RestoreAssist", "repo": "CleanExpo/RestoreAssist", "aliases": ["Restore Assist"] },
//       { "name": "Synthex", "repo": "CleanExpo/Synthex" }
//     ]
//   }
// `name` is also the Linear project name; `repo` is the GitHub "Owner/Name";
// `aliases` are extra spellings matched in research text (case-insensitive,
// whole words). Repo comparisons are case-insensitive, as on GitHub.
// Reading the file is the caller's job; this module only validates and matches.
import { z } from "zod";

/** GitHub owner (1–39 alphanumerics or single hyphens) / repo name (1–100 of [A-Za-z0-9._-], not `.` or `..`). */
export const REPO_PATTERN = /^[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}\/(?!\.\.?$)[A-Za-z0-9._-]{1,100}$/;

export const RepoSlug = z
  .string({ error: "repo must be a string" })
  .regex(REPO_PATTERN, { error: 'repo must look like "Owner/Name" (a GitHub repository)' });

export const Project = z
  .object({
    name: z.string({ error: "name must be a string" }).trim().min(1, { error: "name must not be empty" }),
    repo: RepoSlug,
    aliases: z
      .array(z.string().trim().min(1, { error: "aliases must not contain empty strings" }), {
        error: "aliases must be an array of strings",
      })
      .optional(),
  })
  .strict();
export type Project = z.infer<typeof Project>;

export const ProjectsConfig = z
  .object({ projects: z.array(Project, { error: "projects must be an array" }) })
  .strict()
  .superRefine((config, ctx) => {
    const seen = new Map<string, number>();
    config.projects.forEach((project, index) => {
      const key = project.repo.toLowerCase();
      const first = seen.get(key);
      if (first !== undefined) {
        ctx.addIssue({
          code: "custom",
          path: ["projects", index, "repo"],
          message: `repo ${project.repo} is listed twice (also projects[${first}])`,
        });
      } else {
        seen.set(key, index);
      }
    });
  });
export type ProjectsConfig = z.infer<typeof ProjectsConfig>;

export function sameRepo(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase();
}

/** The configured project for a repo, or undefined (GitHub names are case-insensitive). */
export function findProjectByRepo(projects: readonly Project[], repo: string): Project | undefined {
  return projects.find((project) => sameRepo(project.repo, repo));
}

/** The repo allowlist: a target repo must be a configured project. */
export function isRepoAllowed(projects: readonly Project[], repo: string): boolean {
  return findProjectByRepo(projects, repo) !== undefined;
}

const spellingsOf = new WeakMap<Project, readonly string[]>();

/** Every spelling research text may use for a project: name, aliases, and the repo's Name part (worked out once per project). */
export function projectSpellings(project: Project): readonly string[] {
  let spellings = spellingsOf.get(project);
  if (!spellings) {
    const repoName = project.repo.slice(project.repo.indexOf("/") + 1);
    const unique = new Map<string, string>();
    for (const spelling of [project.name, repoName, ...(project.aliases ?? [])]) unique.set(spelling.toLowerCase(), spelling);
    spellings = Object.freeze([...unique.values()]);
    spellingsOf.set(project, spellings);
  }
  return spellings;
}
