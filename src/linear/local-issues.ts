// The local mode, for trying an approval end to end without a Linear account: with
// LINEAR_LOCAL_FILE set, an approved draft's issue is one JSON line in that file instead of a Linear issue, with an
// identifier such as RA-LOCAL-1 — the team key from LINEAR_TEAM_ID (SCQ when it names no key), numbered by one
// counter in Redis that every worker of the deployment shares. Off unless chosen; never together with LINEAR_API_KEY.
//
// The same promise as LinearIssues: at most one issue per draft. The description ends with the draft's marker, and
// every create first looks for an issue whose description ends with it (a worker killed after its line was written
// finds it on the next attempt); the drafts' creation lease keeps two creators of one draft apart.
// Lines are appended whole and fdatasync'd (JsonlAppender), mode 0600: they hold the draft's text.
import { randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import { pathToFileURL } from "node:url";
import { JsonlAppender, parseJsonl } from "../audit/jsonl-appender.js";
import type { Logger } from "../log.js";
import type { RedisClient } from "../redis/connect.js";
import { endsWithMarker, issueMarker, MARGOT_LABELS, READY_STATE, type IssueRequest, type IssueTracker, type LinearIssue } from "./issues.js";

/** One line of LINEAR_LOCAL_FILE. */
export interface LocalIssue {
  readonly id: string;
  readonly identifier: string;
  readonly title: string;
  /** The draft's text, then `---` and the marker line, as a Linear issue's would be. */
  readonly description: string;
  readonly labels: readonly string[];
  readonly state: string;
  readonly team: string;
  readonly project: string | null;
  readonly created_at: string;
}

/** A Linear team key (RA, ENG2); LINEAR_TEAM_ID may hold an id or a name instead. */
const TEAM_KEY = /^[A-Za-z][A-Za-z0-9]{0,6}$/;

/** The prefix of local identifiers: LINEAR_TEAM_ID's key, upper-cased, or SCQ. */
export function localTeamKey(team: string | undefined): string {
  const t = team?.trim() ?? "";
  return TEAM_KEY.test(t) ? t.toUpperCase() : "SCQ";
}

export interface LocalIssuesOptions {
  /** LINEAR_LOCAL_FILE, absolute. */
  readonly path: string;
  readonly redis: RedisClient;
  readonly prefix: string;
  /** LINEAR_TEAM_ID. */
  readonly team: string | undefined;
  readonly log: Logger;
}

export class LocalIssues implements IssueTracker {
  private readonly appender: JsonlAppender;
  private readonly teamKey: string;

  constructor(private readonly options: LocalIssuesOptions) {
    this.appender = new JsonlAppender(options.path);
    this.teamKey = localTeamKey(options.team);
  }

  async createOnce(request: IssueRequest): Promise<{ issue: LinearIssue; created: boolean }> {
    const marker = issueMarker(request.interactionId, request.markerNonce);
    const found = await this.findByMarker(marker);
    if (found) return { issue: found, created: false };
    const n = await this.options.redis.incr(`${this.options.prefix}:linear-local:seq`);
    const issue: LocalIssue = {
      id: `local-${randomUUID()}`,
      identifier: `${this.teamKey}-LOCAL-${n}`,
      title: request.title,
      description: `${request.description.trimEnd()}\n\n---\n${marker}\n`,
      labels: [...MARGOT_LABELS],
      state: READY_STATE,
      team: this.teamKey,
      project: request.projectName,
      created_at: new Date().toISOString(),
    };
    await this.appender.append(issue);
    this.options.log.info({ identifier: issue.identifier, path: this.options.path }, "local issue written (LINEAR_LOCAL_FILE: not Linear)");
    return { issue: this.toIssue(issue), created: true };
  }

  async findByMarker(marker: string): Promise<LinearIssue | null> {
    const found = (await this.read()).find((i) => endsWithMarker(i.description, marker));
    return found ? this.toIssue(found) : null;
  }

  /** Every issue in the file, oldest first (a torn last line, from a writer killed mid-append, is skipped). */
  async read(): Promise<LocalIssue[]> {
    let text: string;
    try {
      text = await readFile(this.options.path, "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw err;
    }
    return parseJsonl(text) as unknown as LocalIssue[];
  }

  close(): Promise<void> {
    return this.appender.close();
  }

  private toIssue(i: LocalIssue): LinearIssue {
    return { id: i.id, identifier: i.identifier, url: `${pathToFileURL(this.options.path).href}#${i.identifier}`, labels: i.labels };
  }
}
