// The Linear client against a local server speaking Linear's GraphQL shapes: backoff on 5xx/429,
// no duplicate issue when a retry follows a timeout, names resolved to ids, clear final errors.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LinearError, LinearGraphQL } from "../../../src/linear/graphql.js";
import { issueMarker, LinearIssues } from "../../../src/linear/issues.js";
import { createLogger } from "../../../src/log.js";
import { lastJsonLine, runCli, stopAllCli, waitFor } from "../../helpers/cli.js";
import { FakeLinear } from "../../helpers/fake-linear.js";
import { ACTION_BODY, type MargotScope, useMargotScope } from "../../helpers/margot-scope.js";

const log = createLogger("silent");
let linear: FakeLinear;

function client(opts: { timeoutMs?: number; apiKey?: string; team?: string } = {}): LinearIssues {
  const graphql = new LinearGraphQL({
    url: linear.url,
    apiKey: opts.apiKey ?? linear.apiKey,
    timeoutMs: opts.timeoutMs ?? 2000,
    log,
    baseDelayMs: 20,
    maxDelayMs: 100,
  });
  return new LinearIssues({ client: graphql, team: opts.team ?? "RA", log });
}

const NONCE = "0123456789abcdef0123456789abcdef";
const request = (interactionId = "int-linear-1", description = "# Add idempotency\n\nbody") => ({
  interactionId,
  markerNonce: NONCE,
  title: "Add idempotency to the Stripe webhook handler",
  description,
  projectName: "RestoreAssist",
});

beforeEach(async () => {
  linear = await new FakeLinear().start();
});
afterEach(async () => {
  await linear.stop();
});

describe("Linear client", () => {
  it("issueCreate answering 500, then success → exactly one issue", async () => {
    linear.failNext("MargotIssueCreate", 1, 500);
    const { issue, created } = await client().createOnce(request());
    expect(created).toBe(true);
    expect(linear.issues).toHaveLength(1);
    expect(issue).toMatchObject({ identifier: "RA-1", id: linear.issues[0]!.id });
    expect(linear.calls.filter((c) => c.startsWith("MargotIssue"))).toEqual([
      "MargotIssueByMarker", "MargotIssueCreate", "MargotIssueByMarker", "MargotIssueCreate",
    ]);
  });

  it("a create that times out (but happened) is not repeated: the retry finds the issue by its marker", async () => {
    linear.answerLate("MargotIssueCreate", 1500);
    const { issue, created } = await client({ timeoutMs: 400 }).createOnce(request());
    expect(created).toBe(false);
    expect(linear.issues).toHaveLength(1);
    expect(linear.count("MargotIssueCreate")).toBe(1);
    expect(issue.identifier).toBe("RA-1");
    expect(linear.issues[0]!.description.trimEnd().endsWith(`\n${issueMarker("int-linear-1", NONCE)}`)).toBe(true);
  });

  it("an issue that already carries the interaction's marker is returned, never created again", async () => {
    const first = await client().createOnce(request());
    const second = await client().createOnce(request());
    expect(second).toEqual({ issue: first.issue, created: false });
    expect(linear.issues).toHaveLength(1);
    // A different interaction whose id extends the first one's is another issue.
    await client().createOnce(request("int-linear-10"));
    expect(linear.issues).toHaveLength(2);
  });

  it("an issue that holds the marker anywhere but its last line is not the interaction's: its own issue is created", async () => {
    // Another interaction's issue quotes research text that holds this interaction's exact marker (ADR 0040).
    const marker = issueMarker("int-victim", NONCE);
    const other = await client().createOnce(request("int-attacker", `# Attacker\n\n\`\`\`text\n│ ${marker}\n\`\`\`\n\n${marker}\n\nmore text`));
    expect(linear.issues[0]!.description).toContain(marker);
    const victim = await client().createOnce(request("int-victim"));
    expect(victim.created).toBe(true);
    expect(victim.issue.id).not.toBe(other.issue.id);
    expect(linear.issues).toHaveLength(2);
    // Its own marker, last, finds it again (trailing blank lines or spaces aside).
    linear.issues[1]!.description = `${linear.issues[1]!.description.trimEnd()}  \n\n`;
    expect(await client().createOnce(request("int-victim"))).toEqual({ issue: victim.issue, created: false });
    expect(linear.issues).toHaveLength(2);
  });

  it("backs off on 429, RATELIMITED and 502 for reads, then succeeds", async () => {
    linear.failNext("MargotTeams", 1, 429);
    linear.rateLimitNext("MargotStates", 1);
    linear.failNext("MargotLabels", 1, 502);
    const { issue } = await client().createOnce(request());
    expect(issue.identifier).toBe("RA-1");
    expect(linear.count("MargotTeams")).toBe(2);
    expect(linear.count("MargotStates")).toBe(2);
    expect(linear.count("MargotLabels")).toBe(2);
  });

  it("resolves team (key, name or id), labels and state by name; a missing label is created once on the team", async () => {
    const c = client({ team: "restoreassist" });
    await c.createOnce(request("int-a"));
    await c.createOnce(request("int-b"));
    const created = linear.labels.filter((l) => l.name === "margot:originated");
    expect(created).toEqual([{ id: expect.any(String), name: "margot:originated", teamId: "team-ra" }]);
    expect(linear.count("MargotLabelCreate")).toBe(1);
    expect(linear.count("MargotTeams")).toBe(1);
    const issue = linear.issues[0]!;
    expect(linear.labelNames(issue).sort()).toEqual(["margot:originated", "pi-dev:autonomous", "sandcastle:high-isolation"]);
    expect(linear.stateName(issue)).toBe("Ready for Pi-Dev");
    expect(issue.projectId).toBe("project-ra");
    await client({ team: "team-ops" }).createOnce(request("int-c"));
    expect(linear.issues[2]!.teamId).toBe("team-ops");
  });

  it("final errors say what to fix and are not retried: unknown team, missing state, refused key (never echoed)", async () => {
    await expect(client({ team: "NOPE" }).createOnce(request())).rejects.toThrow(/team "NOPE" not found \(teams: RA, OPS\); set LINEAR_TEAM_ID/);
    linear.states.splice(0, linear.states.length);
    const missing = await client().createOnce(request()).catch((e: unknown) => e as LinearError);
    expect(missing).toBeInstanceOf(LinearError);
    expect((missing as LinearError).retryable).toBe(false);
    expect((missing as LinearError).message).toMatch(/no workflow state "Ready for Pi-Dev"/);
    const badKey = "lin_api_wrongkey0123456789abcdefghij";
    const refused = (await client({ apiKey: badKey }).createOnce(request()).catch((e: unknown) => e)) as LinearError;
    expect(refused).toBeInstanceOf(LinearError);
    expect(refused.retryable).toBe(false);
    expect(refused.message).toMatch(/check LINEAR_API_KEY/);
    expect(refused.message).not.toContain(badKey);
    expect(linear.issues).toHaveLength(0);
  });
});

describe("Linear through the worker", () => {
  let s: MargotScope;
  useMargotScope((scope) => (s = scope));

  it("👍 while Linear answers 500 then recovers → exactly one issue, one accepted row", async () => {
    await s.worker(s.localEnv());
    const c = s.completion(ACTION_BODY);
    const result = await s.submit(c);
    s.linear.failNext("MargotIssueCreate", 2, 500);
    s.linear.failNext("MargotTeams", 1, 503);
    const react = await runCli(["drafts", "react", result.draft_id!, "approve"], s.localEnv(), { timeoutMs: 60_000 });
    expect(react.code, react.stderr).toBe(0);
    expect(lastJsonLine(react.stdout)).toMatchObject({
      changed: true,
      state: "approved",
      accepted: { draft_id: result.draft_id, linear_issue_identifier: "RA-1" },
    });
    expect(s.linear.issues).toHaveLength(1);
    await waitFor(() => s.ledgerRows(c.interaction_id).length === 2, 5000);
    expect(s.auditTypes(c.interaction_id).filter((t) => t === "margot_intent_accepted")).toHaveLength(1);
  });

  it("without LINEAR_API_KEY an approval fails saying so; approving again once it is set creates the issue", async () => {
    await s.worker(s.localEnv({ LINEAR_API_KEY: undefined }));
    const result = await s.submit(s.completion(ACTION_BODY));
    const first = await runCli(["drafts", "react", result.draft_id!, "approve"], s.localEnv({ LINEAR_API_KEY: undefined }));
    expect(first.code).toBe(1);
    expect(first.stderr).toMatch(/LINEAR_API_KEY is not set/);
    expect((await s.draft(result.draft_id!)).state).toBe("approved");
    await stopAllCli();
    await s.worker(s.localEnv());
    const second = await runCli(["drafts", "react", result.draft_id!, "approve"], s.localEnv());
    expect(second.code, second.stderr).toBe(0);
    expect(lastJsonLine(second.stdout)).toMatchObject({ changed: true, accepted: { linear_issue_identifier: "RA-1" } });
    expect(s.linear.issues).toHaveLength(1);
  });
});
