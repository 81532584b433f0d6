// PII and secrets in a research body never reach Telegram or Linear (nor the ledger, the audit
// log, or the job's return value): the redactor runs on every draft before it leaves the process.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { waitFor } from "../../helpers/cli.js";
import { reactionUpdate } from "../../helpers/fake-telegram.js";
import { type MargotScope, useMargotScope } from "../../helpers/margot-scope.js";

const SENSITIVE = {
  email: "jane.doe@acmeplumbing.com.au",
  phone: "+61 412 345 678",
  internalUrl: "https://admin.corp.example.com/customers/991",
  ip: "10.20.30.40",
  customer: "Acme Plumbing",
  vendor: "Bluestone Payments",
  apiKey: "sk-ant-api03-ThisIsAFakeKeyForTestsOnly0123456789abcdef",
  github: "ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef0123",
};

const BODY =
  `Acme Plumbing reported double-charged invoices; their contact ${SENSITIVE.email} (${SENSITIVE.phone}) sent logs from ${SENSITIVE.internalUrl} and host ${SENSITIVE.ip}. ` +
  `Their processor ${SENSITIVE.vendor} confirmed the duplicates. The leaked key ${SENSITIVE.apiKey} and token ${SENSITIVE.github} appear in the same log. ` +
  "We should add idempotency to the Stripe webhook handler in CleanExpo/RestoreAssist (app/api/stripe/webhook/route.ts) by recording processed event ids, " +
  `so that Acme Plumbing and others stop seeing double credits (target: 0 per month).`;

let s: MargotScope;
useMargotScope((scope) => (s = scope));

describe("PII redaction", () => {
  it("nothing sensitive reaches the fake Telegram or the fake Linear, the ledger, the audit log or the result", async () => {
    await s.service();
    const c = s.completion(BODY);
    const result = await s.submit(c);
    expect(result.status).toBe("drafted");
    const message = s.telegram.draftMessage(result.draft_id!)!;
    expect(message.text).toContain("[EMAIL]");
    expect(message.text).toContain("[CUSTOMER]");
    expect(message.text).toContain("[VENDOR]");
    expect(message.text).toContain("[INTERNAL_URL]");
    await s.webhook(reactionUpdate({ chatId: s.telegram.chatId, messageId: message.message_id, emoji: "👍" }));
    await waitFor(() => s.linear.issues.length === 1, 15_000);
    await waitFor(() => s.ledgerRows(c.interaction_id).length === 2, 5000);

    const outbound = [...s.telegram.raw, ...s.linear.raw].join("\n");
    const stored = [readFileSync(s.ledgerPath, "utf8"), readFileSync(s.auditPath, "utf8"), JSON.stringify(result), JSON.stringify(await s.drafts.list())].join(
      "\n",
    );
    for (const [kind, value] of Object.entries(SENSITIVE)) {
      expect(outbound, kind).not.toContain(value);
      expect(outbound.toLowerCase(), kind).not.toContain(value.toLowerCase());
      expect(stored, kind).not.toContain(value);
    }
    expect(s.linear.issues[0]!.description).toContain("[PHONE]");
    expect(s.linear.issues[0]!.description).toContain("[IP]");
  });
});
