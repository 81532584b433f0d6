import { describe, expect, it } from "vitest";
import { confirmRepoLine, renderTicket, TICKET_SECTIONS, TicketInput } from "../../../src/margot/ticket.js";

const input: TicketInput = {
  proposed_action: "Add idempotency to the Stripe webhook handler",
  interaction_id: "v1_ChdkZWVw",
  draft_id: "draft-7",
  ts: "2026-09-17T03:04:05Z",
  research_body: "Stripe retries deliveries for 3 days.\n\nWe should add idempotency to the Stripe webhook handler.",
  proposed_action_detail: "We should add idempotency to the Stripe webhook handler.",
  target_repo: "CleanExpo/RestoreAssist",
  target_candidates: [],
  proposed_branch: "margot/add-idempotency-stripe-webhook-handler-fb5c9c86",
  complexity_tier: "basic",
  max_files: 3,
  acceptance_criteria: ["Duplicate deliveries stop producing double credits"],
  out_of_scope: ["No need to change the checkout flow"],
};

// The seed's template, verbatim; the epic line's issue mention is rendered as its plain identifier.
const SEED_TEMPLATE = `# {{proposed_action}}

> Originated by Margot (\`mcp__margot__deep_research_max\`) — interaction \`{{interaction_id}}\`
> Approved by Founder via Telegram draft \`{{draft_id}}\` on {{ts}}
> Routed to AFK execution via Sandcastle (\`sandcastle:high-isolation\`)

## Research summary

{{research_body}}

## Proposed action

{{proposed_action_detail}}

**Target repo:** \`{{target_repo}}\`
**Proposed branch:** \`{{proposed_branch}}\`
**Complexity tier:** \`{{complexity_tier}}\` (basic/detailed/advanced)
**Estimated max files modified:** {{max_files}}

## Acceptance criteria

{{acceptance_criteria}}

## Out of scope

{{out_of_scope}}

## How this will run

1. autonomy.py picks up this ticket (label \`pi-dev:autonomous\`, status \`Ready for Pi-Dev\`)
2. session_phases.run_build hits the branch point (label \`sandcastle:high-isolation\` present)
3. sandcastle-runner spawns Sandcastle in Docker container with the parallel-planner-with-review template
4. Sandcastle internally: plan → 3 parallel implementers → reviewer → merger → final branch
5. Pi-CEO _phase_evaluate scores the result; _phase_push opens a PR
6. Founder reviews PR, merges via dual-key gate

Kill-switch: \`TAO_SANDCASTLE_ENABLED=0\` falls through to weak-sandbox path.

## References

- Original Margot interaction: \`{{interaction_id}}\`
- Bridge skill: \`Pi-Dev-Ops/skills/margot-sandcastle-bridge/SKILL.md\`
- Sandcastle runner: \`Pi-Dev-Ops/skills/sandcastle-runner/SKILL.md\`
- Wave 5 epic: RA-1856
`;

describe("renderTicket", () => {
  it("is the seed's template with every placeholder filled", () => {
    const values: Record<string, string> = {
      ...Object.fromEntries(Object.entries(input).map(([k, v]) => [k, String(v)])),
      acceptance_criteria: "- [ ] Duplicate deliveries stop producing double credits",
      out_of_scope: "- No need to change the checkout flow",
    };
    const expected = SEED_TEMPLATE.replace(/\{\{(\w+)\}\}/g, (_, key: string) => values[key] ?? `MISSING ${key}`);
    expect(expected).not.toContain("MISSING");
    expect(renderTicket(input)).toBe(expected);
  });

  it("has every section and no unfilled placeholder", () => {
    const body = renderTicket(input);
    let last = -1;
    for (const section of TICKET_SECTIONS) {
      const at = body.indexOf(`\n${section}\n`);
      expect(at, section).toBeGreaterThan(last);
      last = at;
    }
    expect(body).not.toMatch(/\{\{|\}\}/);
    expect(body.startsWith("# Add idempotency to the Stripe webhook handler\n")).toBe(true);
  });

  it("names the review channel the draft went to: Telegram, or the local channel (never 'via Telegram' for a CLI review)", () => {
    expect(renderTicket(input, { via: "telegram" })).toContain("> Approved by Founder via Telegram draft `");
    const local = renderTicket(input, { via: "local" });
    expect(local).toContain("> Approved by Founder via the local review channel draft `");
    expect(local).not.toContain("Telegram");
  });

  it("asks the founder to confirm the repo when it is unknown", () => {
    const body = renderTicket({ ...input, target_repo: null, target_candidates: ["CleanExpo/RestoreAssist", "CleanExpo/Synthex"] });
    expect(body).toContain("**Target repo:** `unknown`\nConfirm target repo? Detected: [CleanExpo/RestoreAssist, CleanExpo/Synthex]\n");
    expect(confirmRepoLine([])).toBe("Confirm target repo? Detected: []");
    expect(renderTicket(input)).not.toContain("Confirm target repo?");
  });

  it("says pending while the draft has no id and no approval time", () => {
    const body = renderTicket({ ...input, draft_id: null, ts: null });
    expect(body).toContain("Approved by Founder via Telegram draft `pending` on (pending founder approval)");
  });

  it("renders lists one item a line, and placeholders in the research body stay literal", () => {
    const body = renderTicket({
      ...input,
      research_body: "A body mentioning {{target_repo}} literally.",
      acceptance_criteria: ["one", "two\nlines"],
      out_of_scope: [],
    });
    expect(body).toContain("## Acceptance criteria\n\n- [ ] one\n- [ ] two lines\n");
    expect(body).toContain("## Out of scope\n\n- (nothing listed)\n");
    expect(body).toContain("A body mentioning {{target_repo}} literally.");
    expect(body).toContain("**Target repo:** `CleanExpo/RestoreAssist`");
  });

  it("its input schema refuses unknown fields", () => {
    expect(TicketInput.safeParse({ ...input, labels: [] }).success).toBe(false);
    expect(TicketInput.safeParse(input).success).toBe(true);
  });
});
