// The run's branch leaving the container as data (ADR 0033): at the end of an agent phase, one exec in the
// container writes a `git bundle` of the branch (only the objects the host does not have: every ref the
// agent's repository started with is excluded) to its stdout, which the child streams into a file on the
// host. The container's git reads the agent's repository; nothing on the host does. The last stderr line
// says what happened (`scq-handoff <bundle|unchanged|gone> <dirty|clean>`); it is the agent's to forge,
// and only ever decides whether the host looks at a bundle, which branch-intake.ts checks on its own.
import { shellQuote } from "../shell-quote.js";

export type HandoffState = "bundle" | "unchanged" | "gone";

export interface HandoffStatus {
  readonly state: HandoffState;
  /** The agent left uncommitted changes in its work tree. */
  readonly dirty: boolean;
}

/** Past this the branch is not taken: a run's commits are code, not gigabytes. */
export const MAX_BUNDLE_BYTES = 1024 ** 3;

const STATUS_LINE = /^scq-handoff (bundle|unchanged|gone) (dirty|clean)$/;

/**
 * The script run in the container's work tree. Its own git calls turn the agent's fsmonitor and hooks off
 * (they would only run inside the container, but could hold the hand-off up), and read history as committed:
 * no replace refs, no grafts.
 */
export function handoffScript(branch: string, base: string): string {
  return [
    'g() { GIT_GRAFT_FILE=/dev/null git --no-replace-objects -c core.fsmonitor=false -c core.hooksPath=/dev/null "$@"; }',
    'if [ -n "$(g status --porcelain --untracked-files=normal 2>/dev/null | head -c 1)" ]; then dirty=dirty; else dirty=clean; fi',
    `tip=$(g rev-parse --verify --quiet ${shellQuote(`refs/heads/${branch}^{commit}`)}) || { echo "scq-handoff gone $dirty" >&2; exit 0; }`,
    `if [ "$tip" = ${shellQuote(base)} ]; then echo "scq-handoff unchanged $dirty" >&2; exit 0; fi`,
    'g bundle create --quiet - --stdin || exit 1',
    'echo "scq-handoff bundle $dirty" >&2',
  ].join("\n");
}

/** `git bundle create --stdin`: the branch, less every object the host already had when the phase began. */
export function handoffRevs(branch: string, startingRefs: ReadonlyMap<string, string>): string {
  const excluded = [...new Set(startingRefs.values())].map((id) => `^${id}`);
  return [`refs/heads/${branch}`, ...excluded, ""].join("\n");
}

/** The status line, or undefined when the script did not get that far (its exit code and stderr say why). */
export function parseHandoffStatus(stderr: string): HandoffStatus | undefined {
  const last = stderr.trimEnd().split("\n").pop() ?? "";
  const match = STATUS_LINE.exec(last);
  if (match === null) return undefined;
  return { state: match[1] as HandoffState, dirty: match[2] === "dirty" };
}
