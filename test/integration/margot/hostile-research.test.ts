// Research text cannot change what the reviewer approves (ADR 0040). Real worker and service
// processes, a real Redis, and local servers speaking the Telegram Bot API and Linear's GraphQL.
import { describe, expect, it } from "vitest";
import { issueMarker } from "../../../src/linear/issues.js";
import { QUOTE_MARK, TICKET_SECTIONS } from "../../../src/margot/ticket.js";
import { REACTION_HELP, TELEGRAM_TEXT_LIMIT } from "../../../src/review/telegram-channel.js";
import { lastJsonLine, runCli, waitFor } from "../../helpers/cli.js";
import { reactionUpdate, type SentMessage } from "../../helpers/fake-telegram.js";
import { INJECTED_RESEARCH, longResearch, WEBHOOK_RESEARCH } from "../../helpers/hostile-research.js";
import { type MargotScope, useMargotScope } from "../../helpers/margot-scope.js";

let s: MargotScope;
useMargotScope((scope) => (s = scope));

/** The lines of a ticket outside its quoted research (the fence and what is in it). */
function unquoted(body: string): string[] {
  const lines = body.split("\n");
  const open = lines.indexOf("```text");
  const close = lines.indexOf("```", open + 1);
  expect(open).toBeGreaterThan(0);
  for (const line of lines.slice(open + 1, close)) expect(line.startsWith(QUOTE_MARK), line).toBe(true);
  return [...lines.slice(0, open), ...lines.slice(close + 1)];
}

/** A draft's messages in the chat, in the order they were sent. */
function partsOf(draftId: string): SentMessage[] {
  return s.telegram.drafts().filter((m) => (m.text.split("\n")[0] ?? "").includes(draftId));
}

async function approved(draftId: string, reactTo: SentMessage): Promise<void> {
  const res = await s.webhook(reactionUpdate({ chatId: s.telegram.chatId, messageId: reactTo.message_id, emoji: "👍" }));
  expect(res.status).toBe(200);
  await s.waitState(draftId, "approved");
  await waitFor(async () => (await s.draft(draftId)).linear_issue_identifier !== null, 15_000);
}

describe("hostile research text", () => {
  it("a body that imitates the template and its approval: the draft and the issue show the extracted facts once, the body only quoted", async () => {
    await s.service();
    const c = s.completion(INJECTED_RESEARCH);
    const result = await s.submit(c);
    expect(result).toMatchObject({ status: "drafted", target_repo: "CleanExpo/RestoreAssist" });
    const draft = await s.draft(result.draft_id!);
    const [message] = partsOf(draft.id);
    expect(partsOf(draft.id)).toHaveLength(1);
    // The reviewer is shown the draft's whole text.
    expect(message!.text.endsWith(draft.body)).toBe(true);

    const outside = unquoted(draft.body);
    for (const section of TICKET_SECTIONS) expect(outside.filter((l) => l === section), section).toHaveLength(1);
    expect(outside.filter((l) => l.startsWith("**Target repo:**"))).toEqual(["**Target repo:** `CleanExpo/RestoreAssist`"]);
    expect(outside.filter((l) => l.startsWith("**Proposed branch:**"))).toEqual([`**Proposed branch:** \`${draft.ticket.proposed_branch}\``]);
    expect(draft.ticket.proposed_branch).toMatch(/^margot\//);
    expect(outside.filter((l) => /approved|evil\.example|Pi-Dev-Ops/i.test(l) && !l.startsWith("- Bridge skill") && !l.startsWith("- Sandcastle runner"))).toEqual([]);
    expect(outside.some((l) => l.startsWith("⚠ 7 lines of the research text are shaped like this template's own"))).toBe(true);
    expect(draft.ticket.acceptance_criteria.join(" ")).not.toMatch(/evil/);

    await approved(draft.id, message!);
    const issue = s.linear.issues[0]!;
    // Linear gets the reviewed text unchanged, then the approval's record, then the marker, last.
    expect(issue.description.startsWith(`${draft.body.trimEnd()}\n\n---\n\n> ✅ Approved by Founder via Telegram draft \`${draft.id}\` on 20`)).toBe(true);
    expect(issue.description.trimEnd().endsWith(`\n${issueMarker(c.interaction_id, draft.marker_nonce!)}`)).toBe(true);
    const issueOutside = unquoted(issue.description);
    expect(issueOutside.filter((l) => /approved by founder/i.test(l))).toHaveLength(1);
    expect(issueOutside.filter((l) => l.startsWith("**Target repo:**"))).toEqual(["**Target repo:** `CleanExpo/RestoreAssist`"]);
  });

  it("a body holding another interaction's exact marker: that interaction still gets its own issue", async () => {
    await s.worker(s.localEnv());
    const victim = s.completion(WEBHOOK_RESEARCH);
    const victimDraft = await s.draft((await s.submit(victim)).draft_id!);
    expect(victimDraft.marker_nonce).toMatch(/^[0-9a-f]{32}$/);
    // The attacker knows the victim's marker, nonce and all (and the marker's form before nonces), on a line of its own.
    const forged = `${issueMarker(victim.interaction_id, victimDraft.marker_nonce!)}\n[margot-interaction:${victim.interaction_id}]`;
    const attacker = s.completion(`${WEBHOOK_RESEARCH}\n\n${forged}\n`);
    const attackerResult = await s.submit(attacker);

    const first = await runCli(["drafts", "react", attackerResult.draft_id!, "approve"], s.localEnv(), { timeoutMs: 60_000 });
    expect(first.code, first.stderr).toBe(0);
    expect(s.linear.issues[0]!.description).toContain(issueMarker(victim.interaction_id, victimDraft.marker_nonce!));

    const second = await runCli(["drafts", "react", victimDraft.id, "approve"], s.localEnv(), { timeoutMs: 60_000 });
    expect(second.code, second.stderr).toBe(0);
    const accepted = (lastJsonLine(second.stdout) as { accepted: { linear_issue_id: string; linear_issue_identifier: string } }).accepted;
    expect(s.linear.issues).toHaveLength(2);
    expect(accepted.linear_issue_id).not.toBe(s.linear.issues[0]!.id);
    expect(accepted.linear_issue_id).toBe(s.linear.issues[1]!.id);
    expect(s.linear.issues[1]!.description.trimEnd().endsWith(`\n${issueMarker(victim.interaction_id, victimDraft.marker_nonce!)}`)).toBe(true);
    await waitFor(() => s.ledgerRows(victim.interaction_id).some((r) => r.outcome === "accepted"), 10_000);
    expect(s.ledgerRows(victim.interaction_id).find((r) => r.outcome === "accepted")?.linear_issue_id).toBe(accepted.linear_issue_id);
  });

  it("a draft past 4,096 characters goes out in parts; only the last takes a reaction, and Linear gets exactly the text the parts showed", async () => {
    await s.service();
    const result = await s.submit(s.completion(longResearch()));
    expect(result.status).toBe("drafted");
    const draft = await s.draft(result.draft_id!);
    expect(draft.body.length).toBeGreaterThan(TELEGRAM_TEXT_LIMIT);
    const parts = partsOf(draft.id);
    expect(parts.length).toBeGreaterThan(1);
    for (const part of parts) expect(part.text.length).toBeLessThanOrEqual(TELEGRAM_TEXT_LIMIT);
    const shown = parts
      .map((p, i) => {
        const piece = p.text.slice(p.text.indexOf("\n\n") + 2);
        return i === parts.length - 1 ? piece.slice(0, piece.lastIndexOf(`\n\n${REACTION_HELP}`)) : piece;
      })
      .join("");
    // Every character of the draft reached the chat, in order (a cut between parts drops only the line end it falls on).
    expect(shown.replace(/\s+/g, "") === draft.body.replace(/\s+/g, "")).toBe(true);
    expect(parts.some((p) => p.text.includes("uploads the .env file to https://evil.example/collect"))).toBe(true);

    // A 👍 on an earlier part is no reaction to the draft.
    const early = await s.webhook(reactionUpdate({ chatId: s.telegram.chatId, messageId: parts[0]!.message_id, emoji: "👍" }));
    expect(early.json).toMatchObject({ ignored: "not a draft message" });
    expect((await s.draft(draft.id)).state).toBe("posted");

    await approved(draft.id, parts.at(-1)!);
    expect(s.linear.issues).toHaveLength(1);
    expect(s.linear.issues[0]!.description.startsWith(`${draft.body.trimEnd()}\n\n---\n`)).toBe(true);
  });

  it("a draft too long for Telegram's parts cannot be approved there; the CLI, which shows it whole, can", async () => {
    await s.service();
    const result = await s.submit(s.completion(longResearch(60_000)));
    expect(result.status).toBe("drafted");
    const draft = await s.draft(result.draft_id!);
    const parts = partsOf(draft.id);
    expect(parts).toHaveLength(1);
    expect(parts[0]!.text).toContain("cannot be approved here");
    expect(parts[0]!.text).not.toContain("evil.example");

    await s.webhook(reactionUpdate({ chatId: s.telegram.chatId, messageId: parts[0]!.message_id, emoji: "👍" }));
    await waitFor(() => s.telegram.notices().some((n) => n.text.includes("cannot be approved there")), 15_000);
    expect((await s.draft(draft.id)).state).toBe("posted");
    expect(s.linear.count("MargotIssueCreate")).toBe(0);

    const shown = await runCli(["drafts", "show", draft.id], s.env());
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain("uploads the .env file to https://evil.example/collect");
    const react = await runCli(["drafts", "react", draft.id, "approve"], s.env(), { timeoutMs: 60_000 });
    expect(react.code, react.stderr).toBe(0);
    expect(s.linear.issues).toHaveLength(1);
    expect(s.linear.issues[0]!.description.startsWith(`${draft.body.trimEnd()}\n\n---\n`)).toBe(true);
  });
});
