// The Linear ticket body the founder reviews (seed: "The Linear ticket body template").
// One pass over a fixed template: text inside the research body that happens to
// look like `{{placeholder}}` is left alone, never substituted.
import { z } from "zod";
import { ComplexityTier } from "./contract.js";

export const TicketInput = z
  .object({
    proposed_action: z.string().min(1, { error: "proposed_action must not be empty" }),
    interaction_id: z.string().min(1, { error: "interaction_id must not be empty" }),
    /** null before the draft is posted: rendered as "pending". */
    draft_id: z.string().min(1).nullable(),
    /** When the founder approved; null while the draft awaits review. */
    ts: z.string().min(1).nullable(),
    research_body: z.string(),
    proposed_action_detail: z.string(),
    /** null when no repo could be decided: the body then asks the founder to confirm. */
    target_repo: z.string().min(1).nullable(),
    target_candidates: z.array(z.string().min(1)),
    proposed_branch: z.string().min(1),
    complexity_tier: ComplexityTier,
    max_files: z.number().int().positive(),
    acceptance_criteria: z.array(z.string().min(1)),
    out_of_scope: z.array(z.string().min(1)),
  })
  .strict();
export type TicketInput = z.infer<typeof TicketInput>;

/** The Wave 5 epic every Margot-originated ticket points back to. */
export const WAVE5_EPIC = "RA-1856";

function bullets(items: readonly string[], prefix: string, none: string): string {
  if (items.length === 0) return none;
  return items.map((item) => `${prefix}${item.replace(/\s*\n\s*/g, " ").trim()}`).join("\n");
}

/** The "Confirm target repo?" line the seed asks for when the repo is unknown. */
export function confirmRepoLine(candidates: readonly string[]): string {
  return `Confirm target repo? Detected: [${candidates.join(", ")}]`;
}

/** Render the seed's ticket template, every `{{…}}` filled; `via` names the review channel the draft went to. */
export function renderTicket(input: TicketInput, opts: { via?: "telegram" | "local" } = {}): string {
  const via = opts.via === "local" ? "the local review channel" : "Telegram";
  const draftId = input.draft_id ?? "pending";
  const ts = input.ts ?? "(pending founder approval)";
  const targetRepo =
    input.target_repo === null
      ? "**Target repo:** `unknown`\n" + confirmRepoLine(input.target_candidates)
      : `**Target repo:** \`${input.target_repo}\``;

  return `# ${input.proposed_action}

> Originated by Margot (\`mcp__margot__deep_research_max\`) — interaction \`${input.interaction_id}\`
> Approved by Founder via ${via} draft \`${draftId}\` on ${ts}
> Routed to AFK execution via Sandcastle (\`sandcastle:high-isolation\`)

## Research summary

${input.research_body.trim()}

## Proposed action

${input.proposed_action_detail.trim()}

${targetRepo}
**Proposed branch:** \`${input.proposed_branch}\`
**Complexity tier:** \`${input.complexity_tier}\` (basic/detailed/advanced)
**Estimated max files modified:** ${input.max_files}

## Acceptance criteria

${bullets(input.acceptance_criteria, "- [ ] ", "- [ ] (none given — confirm before approving)")}

## Out of scope

${bullets(input.out_of_scope, "- ", "- (nothing listed)")}

## How this will run

1. autonomy.py picks up this ticket (label \`pi-dev:autonomous\`, status \`Ready for Pi-Dev\`)
2. session_phases.run_build hits the branch point (label \`sandcastle:high-isolation\` present)
3. sandcastle-runner spawns Sandcastle in Docker container with the parallel-planner-with-review template
4. Sandcastle internally: plan → 3 parallel implementers → reviewer → merger → final branch
5. Pi-CEO _phase_evaluate scores the result; _phase_push opens a PR
6. Founder reviews PR, merges via dual-key gate

Kill-switch: \`TAO_SANDCASTLE_ENABLED=0\` falls through to weak-sandbox path.

## References

- Original Margot interaction: \`${input.interaction_id}\`
- Bridge skill: \`Pi-Dev-Ops/skills/margot-sandcastle-bridge/SKILL.md\`
- Sandcastle runner: \`Pi-Dev-Ops/skills/sandcastle-runner/SKILL.md\`
- Wave 5 epic: ${WAVE5_EPIC}
`;
}

/** The section headings a rendered ticket always has, in order. */
export const TICKET_SECTIONS = [
  "## Research summary",
  "## Proposed action",
  "## Acceptance criteria",
  "## Out of scope",
  "## How this will run",
  "## References",
] as const;
