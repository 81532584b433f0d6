// A local HTTP server that answers Linear's GraphQL API the way it is documented: POST with a
// JSON {query, variables, operationName}, `Authorization: <API key>`; answers {data} or
// {errors: [{message, extensions: {code, type}}]}. It knows the operations our client sends,
// keeps teams, labels, workflow states, projects and issues in memory, and can be told to fail
// (HTTP 500, 429, RATELIMITED) or to answer too late (after doing the work: a timeout the
// client cannot tell from a failure).
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import { closeServer, listenOnLoopback, readBody } from "./local-http.js";

export interface FakeIssue {
  id: string;
  identifier: string;
  title: string;
  description: string;
  teamId: string;
  stateId: string;
  labelIds: string[];
  projectId: string | null;
  url: string;
}

interface Fault {
  op: string;
  kind: "status" | "ratelimited" | "late";
  status?: number;
  delayMs?: number;
}

export class FakeLinear {
  readonly apiKey = "lin_api_fakekeyfortests0123456789abcdef";
  readonly teams = [
    { id: "team-ra", key: "RA", name: "RestoreAssist" },
    { id: "team-ops", key: "OPS", name: "Operations" },
  ];
  readonly states = [
    { id: "state-backlog", name: "Backlog", teamId: "team-ra" },
    { id: "state-ready", name: "Ready for Pi-Dev", teamId: "team-ra" },
    { id: "state-ops-ready", name: "Ready for Pi-Dev", teamId: "team-ops" },
  ];
  labels: Array<{ id: string; name: string; teamId: string | null }> = [
    { id: "label-auto", name: "pi-dev:autonomous", teamId: null },
    { id: "label-iso", name: "sandcastle:high-isolation", teamId: null },
  ];
  readonly projects = [{ id: "project-ra", name: "RestoreAssist" }];
  readonly issues: FakeIssue[] = [];
  /** Every request's operation name, in order. */
  readonly calls: string[] = [];
  /** Every request body, for checks on what left the process. */
  readonly raw: string[] = [];
  identifierPrefix: string | null = null;
  private faults: Fault[] = [];
  private server: Server | null = null;
  url = "";

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      void this.handle(req).then(({ status, body, delayMs }) => {
        const send = () => {
          if (res.destroyed) return;
          res.writeHead(status, { "content-type": "application/json", ...(status === 429 ? { "retry-after": "1" } : {}) });
          res.end(JSON.stringify(body));
        };
        if (delayMs) setTimeout(send, delayMs);
        else send();
      });
    });
    this.url = `${await listenOnLoopback(this.server)}/graphql`;
    return this;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = null;
    await closeServer(server);
  }

  /** The next `count` calls of `op` answer HTTP `status` (without doing anything). */
  failNext(op: string, count: number, status: number): void {
    for (let i = 0; i < count; i++) this.faults.push({ op, kind: "status", status });
  }

  /** The next `count` calls of `op` are refused with a RATELIMITED GraphQL error (HTTP 400, as Linear does). */
  rateLimitNext(op: string, count: number): void {
    for (let i = 0; i < count; i++) this.faults.push({ op, kind: "ratelimited" });
  }

  /** The next call of `op` does its work, then answers only after `delayMs`. */
  answerLate(op: string, delayMs: number): void {
    this.faults.push({ op, kind: "late", delayMs });
  }

  count(op: string): number {
    return this.calls.filter((c) => c === op).length;
  }

  private takeFault(op: string): Fault | undefined {
    const i = this.faults.findIndex((f) => f.op === op);
    return i < 0 ? undefined : this.faults.splice(i, 1)[0];
  }

  private async handle(req: IncomingMessage): Promise<{ status: number; body: unknown; delayMs?: number }> {
    const text = await readBody(req);
    this.raw.push(text);
    if (req.method !== "POST" || !(req.url ?? "").startsWith("/graphql")) return { status: 404, body: { errors: [{ message: "Not found" }] } };
    if (req.headers.authorization !== this.apiKey) {
      return {
        status: 401,
        body: {
          errors: [{ message: "Authentication required, not authenticated", extensions: { type: "authentication error", code: "AUTHENTICATION_ERROR" } }],
        },
      };
    }
    let request: { query?: string; variables?: Record<string, unknown>; operationName?: string };
    try {
      request = JSON.parse(text) as typeof request;
    } catch {
      return { status: 400, body: { errors: [{ message: "Unexpected token in JSON", extensions: { code: "BAD_USER_INPUT" } }] } };
    }
    const op = request.operationName ?? /(?:query|mutation)\s+(\w+)/.exec(request.query ?? "")?.[1] ?? "anonymous";
    this.calls.push(op);
    const fault = this.takeFault(op);
    if (fault?.kind === "status")
      return { status: fault.status ?? 500, body: { errors: [{ message: "Internal server error", extensions: { code: "INTERNAL_SERVER_ERROR" } }] } };
    if (fault?.kind === "ratelimited") return { status: 400, body: { errors: [{ message: "Rate limit exceeded", extensions: { code: "RATELIMITED" } }] } };
    const data = this.execute(op, request.variables ?? {});
    if ("errors" in data) return { status: 200, body: data, delayMs: fault?.delayMs };
    return { status: 200, body: { data }, delayMs: fault?.kind === "late" ? fault.delayMs : undefined };
  }

  private execute(op: string, v: Record<string, unknown>): Record<string, unknown> {
    const userError = (message: string) => ({
      errors: [{ message, extensions: { code: "INVALID_INPUT", type: "invalid input", userPresentableMessage: message } }],
    });
    switch (op) {
      case "MargotTeams":
        return { teams: { nodes: this.teams } };
      case "MargotStates":
        return { workflowStates: { nodes: this.states.filter((s) => s.teamId === v.teamId).map(({ id, name }) => ({ id, name })) } };
      case "MargotLabels": {
        const names = (v.names as string[] | undefined) ?? [];
        return {
          issueLabels: {
            nodes: this.labels.filter((l) => names.includes(l.name)).map((l) => ({ id: l.id, name: l.name, team: l.teamId ? { id: l.teamId } : null })),
          },
        };
      }
      case "MargotLabelCreate": {
        const input = v.input as { name: string; teamId?: string };
        if (this.labels.some((l) => l.name === input.name && l.teamId === (input.teamId ?? null))) return userError("Label name already exists");
        const label = { id: `label-${randomUUID()}`, name: input.name, teamId: input.teamId ?? null };
        this.labels.push(label);
        return { issueLabelCreate: { success: true, issueLabel: { id: label.id, name: label.name } } };
      }
      case "MargotProjects":
        return { projects: { nodes: this.projects.filter((p) => p.name.toLowerCase() === String(v.name).toLowerCase()) } };
      case "MargotIssueByMarker": {
        const marker = String(v.marker);
        return { issues: { nodes: this.issues.filter((i) => i.description.includes(marker)).slice(0, 5).map((i) => this.issueNode(i)) } };
      }
      case "MargotIssueCreate": {
        const input = v.input as { teamId: string; title: string; description: string; labelIds: string[]; stateId: string; projectId?: string };
        const team = this.teams.find((t) => t.id === input.teamId);
        if (!team) return userError("Entity not found: Team");
        if (!this.states.some((s) => s.id === input.stateId && s.teamId === team.id)) return userError("Entity not found: WorkflowState");
        if (input.labelIds.some((id) => !this.labels.some((l) => l.id === id))) return userError("Entity not found: IssueLabel");
        const n = this.issues.length + 1;
        const identifier = `${this.identifierPrefix ?? team.key}-${n}`;
        const issue: FakeIssue = {
          id: randomUUID(),
          identifier,
          title: input.title,
          description: input.description,
          teamId: team.id,
          stateId: input.stateId,
          labelIds: input.labelIds,
          projectId: input.projectId ?? null,
          url: `https://linear.app/fake/issue/${identifier}`,
        };
        this.issues.push(issue);
        return { issueCreate: { success: true, issue: this.issueNode(issue) } };
      }
      default:
        return { errors: [{ message: `Cannot query field on type "Query" (${op})`, extensions: { code: "GRAPHQL_VALIDATION_FAILED" } }] };
    }
  }

  labelNames(issue: FakeIssue): string[] {
    return issue.labelIds.map((id) => this.labels.find((l) => l.id === id)?.name ?? id);
  }

  stateName(issue: FakeIssue): string {
    return this.states.find((s) => s.id === issue.stateId)?.name ?? issue.stateId;
  }

  private issueNode(issue: FakeIssue) {
    return {
      id: issue.id,
      identifier: issue.identifier,
      url: issue.url,
      description: issue.description,
      labels: { nodes: this.labelNames(issue).map((name) => ({ name })) },
    };
  }
}
