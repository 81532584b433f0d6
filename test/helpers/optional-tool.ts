// The suite's one rule for a tool a machine may lack (podman for container tests, Chromium for browser tests):
// `<VARIABLE>=require` (.ci/run sets each) makes a missing or unusable tool a loud failure; unset, a machine without
// it skips those tests with the reason printed (a developer's laptop); `=skip` skips them.

/**
 * Decides once, at a test file's import (describe.skipIf reads it then): true when the tests are to be skipped.
 * `whyNot` says why the tool cannot be used here, or undefined when it can; it is not asked under `=skip`.
 */
export function skipWithout(tests: string, variable: string, whyNot: () => string | undefined): boolean {
  const mode = (process.env[variable] ?? "auto") as "require" | "auto" | "skip";
  const reason = mode === "skip" ? `${variable}=skip` : whyNot();
  if (reason !== undefined && mode === "require") throw new Error(`${tests} are required here (${variable}=require) but cannot run: ${reason}`);
  if (reason !== undefined) console.warn(`${tests} skipped: ${reason} (${variable}=require makes this a failure)`);
  return reason !== undefined;
}
