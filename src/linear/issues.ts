// Creating the Linear issue for an approved draft, at most once.
//
// Names are resolved to ids with GraphQL queries and cached for the process:
//   team      LINEAR_TEAM_ID matched against each team's id, key ("RA") or name; unset and
//             exactly one team visible: that team
//   labels    issueLabels by name, workspace labels or the team's own; a missing label is
//             created on the team (issueLabelCreate) so the autonomy poller can see it
//   state     the team's workflow state named "Ready for Pi-Dev" (case-insensitive); missing:
//             a clear error, never created (a team's workflow is the team's to change)
//   project   the Linear project named like the projects-config project, when there is one
//
// No duplicate after a timeout: the description ends with a marker `[margot-interaction:<id>:<nonce>]`,
// the nonce random and kept with the draft; before every create (the first one too) the issues are
// searched for it, and a found issue is returned instead of creating another. A create whose outcome is
// unknown (timeout, 5xx) is followed by another search, never by a blind second create. Linear's search
// is `contains`, so a found issue counts only when the marker is its description's last line: research
// text quoted in another issue holds the marker somewhere else, never there (ADR 0040).
import { randomUUID } from "node:crypto";
import type { Logger } from "../log.js";
import { LinearError, type LinearGraphQL } from "./graphql.js";

export const MARGOT_LABELS = ["pi-dev:autonomous", "sandcastle:high-isolation", "margot:originated"] as const;
export const READY_STATE = "Ready for Pi-Dev";

export interface IssueRequest {
  readonly interactionId: string;
  /** The draft's marker nonce (`newMarkerNonce`): the same for every attempt at this issue. */
  readonly markerNonce: string;
  readonly title: string;
  /** Already PII-redacted; the marker is appended here. */
  readonly description: string;
  readonly projectName: string | null;
}

export interface LinearIssue {
  readonly id: string;
  readonly identifier: string;
  readonly url: string | null;
  readonly labels: readonly string[];
}

export interface IssueTracker {
  createOnce(request: IssueRequest): Promise<{ issue: LinearIssue; created: boolean }>;
}

export function issueMarker(interactionId: string, nonce: string): string {
  return `[margot-interaction:${interactionId}:${nonce}]`;
}

/** 32 random hex digits: a marker that no research text written before its draft can hold. */
export function newMarkerNonce(): string {
  return randomUUID().replaceAll("-", "");
}

/** Whether the marker is the description's last line, where createOnce puts it. */
export function endsWithMarker(description: string, marker: string): boolean {
  const text = description.trimEnd();
  return text.slice(text.lastIndexOf("\n") + 1).trim() === marker;
}

const TEAMS = `query MargotTeams { teams(first: 250) { nodes { id key name } } }`;
const LABELS = `query MargotLabels($names: [String!]) {
  issueLabels(first: 250, filter: { name: { in: $names } }) { nodes { id name team { id } } }
}`;
const LABEL_CREATE = `mutation MargotLabelCreate($input: IssueLabelCreateInput!) {
  issueLabelCreate(input: $input) { success issueLabel { id name } }
}`;
const STATES = `query MargotStates($teamId: ID!) {
  workflowStates(first: 250, filter: { team: { id: { eq: $teamId } } }) { nodes { id name } }
}`;
const PROJECTS = `query MargotProjects($name: String!) {
  projects(first: 5, filter: { name: { eqIgnoreCase: $name } }) { nodes { id name } }
}`;
const BY_MARKER = `query MargotIssueByMarker($marker: String!) {
  issues(first: 5, includeArchived: true, filter: { description: { contains: $marker } }) {
    nodes { id identifier url description labels { nodes { name } } }
  }
}`;
const ISSUE_CREATE = `mutation MargotIssueCreate($input: IssueCreateInput!) {
  issueCreate(input: $input) { success issue { id identifier url labels { nodes { name } } } }
}`;

type Nodes<T> = { nodes: T[] };
type IssueNode = { id: string; identifier: string; url?: string | null; description?: string | null; labels?: Nodes<{ name: string }> };

const toIssue = (node: IssueNode): LinearIssue => ({
  id: node.id,
  identifier: node.identifier,
  url: node.url ?? null,
  labels: node.labels?.nodes.map((l) => l.name) ?? [],
});

export interface LinearIssuesOptions {
  readonly client: LinearGraphQL;
  /** LINEAR_TEAM_ID: id, key or name. */
  readonly team: string | undefined;
  readonly log: Logger;
  readonly labels?: readonly string[];
  readonly stateName?: string;
}

export class LinearIssues implements IssueTracker {
  private resolved: Promise<{ teamId: string; labelIds: string[]; stateId: string }> | null = null;
  private readonly labels: readonly string[];
  private readonly stateName: string;

  constructor(private readonly options: LinearIssuesOptions) {
    this.labels = options.labels ?? MARGOT_LABELS;
    this.stateName = options.stateName ?? READY_STATE;
  }

  async createOnce(request: IssueRequest): Promise<{ issue: LinearIssue; created: boolean }> {
    const { client } = this.options;
    const marker = issueMarker(request.interactionId, request.markerNonce);
    const ids = await this.resolve();
    const projectId = request.projectName ? await this.projectId(request.projectName) : null;
    const input = {
      teamId: ids.teamId,
      title: request.title,
      description: `${request.description.trimEnd()}\n\n---\n${marker}\n`,
      labelIds: ids.labelIds,
      stateId: ids.stateId,
      ...(projectId ? { projectId } : {}),
    };
    for (let attempt = 1; ; attempt++) {
      const found = await this.findByMarker(marker);
      if (found) return { issue: found, created: false };
      try {
        const data = await client.mutate<{ issueCreate: { success: boolean; issue: IssueNode | null } }>("MargotIssueCreate", ISSUE_CREATE, { input });
        if (!data.issueCreate.success || !data.issueCreate.issue) throw new LinearError("linear issueCreate answered success: false", false);
        return { issue: toIssue(data.issueCreate.issue), created: true };
      } catch (err) {
        if (!(err instanceof LinearError) || !err.retryable || attempt >= client.attempts) throw err;
        await client.backoff(attempt, err, "MargotIssueCreate");
      }
    }
  }

  async findByMarker(marker: string): Promise<LinearIssue | null> {
    const data = await this.options.client.query<{ issues: Nodes<IssueNode> }>("MargotIssueByMarker", BY_MARKER, { marker });
    const node = data.issues.nodes.find((n) => endsWithMarker(n.description ?? "", marker));
    return node ? toIssue(node) : null;
  }

  private resolve(): Promise<{ teamId: string; labelIds: string[]; stateId: string }> {
    this.resolved ??= this.lookUp().catch((err: unknown) => {
      this.resolved = null;
      throw err;
    });
    return this.resolved;
  }

  private async lookUp(): Promise<{ teamId: string; labelIds: string[]; stateId: string }> {
    const { client, log } = this.options;
    const teams = (await client.query<{ teams: Nodes<{ id: string; key: string; name: string }> }>("MargotTeams", TEAMS)).teams.nodes;
    const wanted = this.options.team?.trim().toLowerCase();
    const team = wanted
      ? teams.find((t) => t.id.toLowerCase() === wanted || t.key.toLowerCase() === wanted || t.name.toLowerCase() === wanted)
      : teams.length === 1
        ? teams[0]
        : undefined;
    if (!team) {
      const known = teams.map((t) => t.key).join(", ") || "none";
      throw new LinearError(
        wanted
          ? `linear team "${this.options.team}" not found (teams: ${known}); set LINEAR_TEAM_ID to a team's id, key or name`
          : `set LINEAR_TEAM_ID (teams: ${known})`,
        false,
      );
    }

    const states = (await client.query<{ workflowStates: Nodes<{ id: string; name: string }> }>("MargotStates", STATES, { teamId: team.id })).workflowStates
      .nodes;
    const state = states.find((s) => s.name.toLowerCase() === this.stateName.toLowerCase());
    if (!state) {
      throw new LinearError(
        `linear team ${team.key} has no workflow state "${this.stateName}": add it in Linear (Settings → Teams → ${team.name} → Workflow)`,
        false,
      );
    }

    const labels = (
      await client.query<{ issueLabels: Nodes<{ id: string; name: string; team?: { id: string } | null }> }>("MargotLabels", LABELS, {
        names: [...this.labels],
      })
    ).issueLabels.nodes;
    const labelIds: string[] = [];
    for (const name of this.labels) {
      const usable = labels.filter((l) => l.name.toLowerCase() === name.toLowerCase() && (!l.team || l.team.id === team.id));
      const label = usable.find((l) => l.team?.id === team.id) ?? usable[0];
      if (label) {
        labelIds.push(label.id);
        continue;
      }
      const made = await client.mutate<{ issueLabelCreate: { success: boolean; issueLabel: { id: string; name: string } | null } }>(
        "MargotLabelCreate",
        LABEL_CREATE,
        {
          input: { name, teamId: team.id },
        },
      );
      if (!made.issueLabelCreate.success || !made.issueLabelCreate.issueLabel) throw new LinearError(`linear could not create label ${name}`, true);
      log.info({ label: name, team: team.key }, "created missing Linear label");
      labelIds.push(made.issueLabelCreate.issueLabel.id);
    }
    return { teamId: team.id, labelIds, stateId: state.id };
  }

  private async projectId(name: string): Promise<string | null> {
    try {
      const data = await this.options.client.query<{ projects: Nodes<{ id: string; name: string }> }>("MargotProjects", PROJECTS, { name });
      return data.projects.nodes[0]?.id ?? null;
    } catch (err) {
      // The project is a convenience; the issue matters more.
      this.options.log.warn({ project: name, err: (err as Error).message }, "linear project lookup failed; creating the issue without a project");
      return null;
    }
  }
}
