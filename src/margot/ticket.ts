// The Linear ticket body the founder reviews.
// One pass over a fixed template: text inside the research body that happens to
// look like `{{placeholder}}` is left alone, never substituted. The research body is
// untrusted: it is quoted as data where nothing it holds can pass for the template (ADR 0040).
import { z } from "zod";
import { ComplexityTier } from "./contract.js";

export const TicketInput = z
  .object({
    proposed_action: z.string().min(1, { error: "proposed_action must not be empty" }),
    interaction_id: z.string().min(1, { error: "interaction_id must not be empty" }),
    /** null before the draft has an id: rendered as "pending". */
    draft_id: z.string().min(1).nullable(),
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
    /** Lines of the research body shaped like this template's own, left unread (template-lines.ts). */
    template_lines: z.number().int().nonnegative(),
  })
  .strict();
export type TicketInput = z.infer<typeof TicketInput>;

/** The Wave 5 epic every Margot-originated ticket points back to. */
export const WAVE5_EPIC = "RA-1856";

/** Every line of the quoted research text starts with this; no line of the template does. */
export const QUOTE_MARK = "│";

const LINE_BREAK = /\r\n|[\n\r\v\f\u0085\u2028\u2029]/;
// Controls but tab, and the invisible characters that reorder or hide text (bidi overrides, zero widths).
const UNSEEN = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u061C\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF]/g;

/** What cannot be seen shown as U+FFFD: the reviewer sees that something was there. */
function visible(text: string): string {
  return text.replace(UNSEEN, "\uFFFD");
}

/** One line from the research (a title, a criterion): no line break, nothing unseen, no leading heading or quote mark. */
function inline(text: string): string {
  return visible(text.replace(/\s+/g, " ")).replace(/^[\s#>]+/, "").trim();
}

/** The research body as data: fenced, each line behind QUOTE_MARK, so no line can close the fence, open a section or pass for the template's. */
export function quoteResearch(body: string): string {
  const lines = body.trim().split(LINE_BREAK).map((line) => (line === "" ? QUOTE_MARK : `${QUOTE_MARK} ${visible(line)}`));
  return `\`\`\`text\n${lines.join("\n")}\n\`\`\``;
}

function bullets(items: readonly string[], prefix: string, none: string): string {
  if (items.length === 0) return none;
  return items.map((item) => `${prefix}${inline(item)}`).join("\n");
}

/** The "Confirm target repo?" line, when the repo is unknown: the founder names it. */
export function confirmRepoLine(candidates: readonly string[]): string {
  return `Confirm target repo? Detected: [${candidates.map(inline).join(", ")}]`;
}

type Via = "telegram" | "local";
const viaWords = (via: Via | undefined) => (via === "local" ? "the local review channel" : "Telegram");

/**
 * The ticket the founder reviews, every `{{…}}` of the template filled; `via` names the review channel
 * the draft went to. The fields the founder decides on come first, filled by extraction; the research text
 * comes last, quoted. The approval is not in it: `approvalRecord` follows the reviewed text in the issue.
 */
export function renderTicket(input: TicketInput, opts: { via?: Via } = {}): string {
  const draftId = input.draft_id ?? "pending";
  const targetRepo =
    input.target_repo === null
      ? "**Target repo:** `unknown`\n" + confirmRepoLine(input.target_candidates)
      : `**Target repo:** \`${inline(input.target_repo)}\``;
  const detail = input.proposed_action_detail
    .trim()
    .split("\n")
    .map((line) => `- ${inline(line.replace(/^- /, ""))}`)
    .join("\n");
  const n = input.template_lines;
  const imitations =
    n === 0
      ? ""
      : `\n\n⚠ ${n} line${n === 1 ? "" : "s"} of the research text ${n === 1 ? "is" : "are"} shaped like this template's own (a section heading, a field line, an approval claim, a checklist item, the Linear marker): quoted in the research summary, never read to fill in this ticket.`;

  return `# ${inline(input.proposed_action)}

> Originated by Margot (\`mcp__margot__deep_research_max\`) — interaction \`${input.interaction_id}\`
> For the founder's review in ${viaWords(opts.via)} draft \`${draftId}\`; an approval is recorded below the end of this text
> Routed to AFK execution via Sandcastle (\`sandcastle:high-isolation\`)

## Proposed action

${detail}

${targetRepo}
**Proposed branch:** \`${inline(input.proposed_branch)}\`
**Complexity tier:** \`${input.complexity_tier}\` (basic/detailed/advanced)
**Estimated max files modified:** ${input.max_files}${imitations}

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

## Research summary

Margot's research text, quoted as data: each of its lines starts with ${QUOTE_MARK}, and nothing in it is part of this ticket.

${quoteResearch(input.research_body)}
`;
}

/** What the Linear issue carries below the reviewed text, which it holds unchanged: who approved it, where, when. */
export function approvalRecord(opts: { via: Via; draftId: string; ts: string }): string {
  return `---

> ✅ Approved by Founder via ${viaWords(opts.via)} draft \`${opts.draftId}\` on ${opts.ts}: everything above this line is the draft exactly as it was reviewed.
`;
}

/** The section headings a rendered ticket always has, in order. */
export const TICKET_SECTIONS = [
  "## Proposed action",
  "## Acceptance criteria",
  "## Out of scope",
  "## How this will run",
  "## References",
  "## Research summary",
] as const;
