// Lines of a research body shaped like the ticket template's own lines: its section headings, its field
// lines (`**Target repo:**`, `**Proposed branch:**`, …), its provenance and approval lines, its checklist
// items, the Linear marker. Research has no reason to write them; an injection does. Classification and
// extraction read the body without them, so none can set the target repo, the branch or a criterion; the
// draft still quotes them (as data) and tells the reviewer how many there were (ADR 0040).
import { TICKET_SECTIONS } from "../ticket.js";

const SECTION_NAMES = TICKET_SECTIONS.map((s) => s.replace(/^#+\s*/, "").toLowerCase());
const FIELD_NAMES = ["target repo", "proposed branch", "complexity tier", "estimated max files modified"];

/**
 * One pattern, anchored at each line's start, linear in the line's length (no nested repetition):
 *   a heading naming a template section · a field line, bold, quoted or bulleted or not · a provenance
 *   line (`> Originated by Margot`, `> Routed to AFK`) · a line that opens with an approval claim
 *   (`✅ APPROVED by Founder`, `> Approved by …`) · a checklist item · anything with the Linear marker.
 */
const TEMPLATE_LINE = new RegExp(
  [
    String.raw`^[ \t]{0,3}#{1,6}[ \t]+(?:${SECTION_NAMES.join("|")})\b[^\n]*`,
    String.raw`^[ \t>*_+-]*(?:${FIELD_NAMES.join("|")})[ \t*_]*:[^\n]*`,
    String.raw`^[ \t>]*(?:originated by margot|routed to afk)[^\n]*`,
    String.raw`^[^\p{L}\p{N}\n]*approved(?:[ \t]+by\b|[^\p{L}\p{N}\n]*$)[^\n]*`,
    String.raw`^[ \t>]*[-*+][ \t]+\[[ xX]\][^\n]*`,
    String.raw`^[^\n]*\[margot-interaction:[^\n]*`,
  ].join("|"),
  "gimu",
);

export interface TemplateLines {
  /** The body with every template-shaped line emptied (line ends kept: a removed line ends a paragraph). */
  readonly text: string;
  /** How many lines were emptied. */
  readonly count: number;
}

export function withoutTemplateLines(body: string): TemplateLines {
  let count = 0;
  const text = body.replace(TEMPLATE_LINE, () => {
    count += 1;
    return "";
  });
  return { text, count };
}
