// A research body shaped for reading: line ends and quotes normalised, fenced code cut out, over-long
// tokens and sentences bounded (which keeps every cue pattern linear), and the prose cut into sentences.
import { isSpace } from "../../hints.js";

const ABBREVIATION = /\b(e\.g|i\.e|etc|vs|approx|incl|cf|Inc|Ltd|Pty|No|Dr|Mr|Ms|Mrs|St)\./g;
const DOT_MASK = "\u2024";

/** Line ends as "\n", curly quotes straight, no-break spaces plain. */
export function normalise(text: string): string {
  // One pass finds whether there is anything to replace at all (usually there is not).
  if (!/[\r\u2018\u2019\u201C\u201D\u00A0]/.test(text)) return text;
  // Each replace only where its characters occur: each is a pass over the whole body.
  let out = text;
  if (out.includes("\r")) out = out.replace(/\r\n?/g, "\n");
  if (/[\u2018\u2019]/.test(out)) out = out.replace(/[\u2018\u2019]/g, "'");
  if (/[\u201C\u201D]/.test(out)) out = out.replace(/[\u201C\u201D]/g, '"');
  if (out.includes("\u00A0")) out = out.replaceAll("\u00A0", " ");
  return out;
}

const FENCE = "```";

/**
 * Fenced code cut out, each block replaced by a line end: what `/```[^\n]*\n[\s\S]*?(?:```|$)/g` matches (a
 * fence, the rest of its line, up to the next fence or the end), found with indexOf: the pattern, tried
 * again from every backtick of a line with no line end after it, is quadratic in a run of backticks.
 */
export function stripFences(text: string): { prose: string; hadFence: boolean } {
  const kept: string[] = [];
  let from = 0;
  for (let open = text.indexOf(FENCE); open >= 0; open = text.indexOf(FENCE, from)) {
    const lineEnd = text.indexOf("\n", open + FENCE.length);
    // No line end after this fence: none after any later one either.
    if (lineEnd < 0) break;
    const close = text.indexOf(FENCE, lineEnd + 1);
    kept.push(text.slice(from, open), "\n");
    from = close < 0 ? text.length : close + FENCE.length;
  }
  if (kept.length === 0) return { prose: text, hadFence: false };
  kept.push(text.slice(from));
  return { prose: kept.join(""), hadFence: true };
}

/** Longest token and sentence read: real ones are far shorter, and the bounds keep every pattern linear. */
export const MAX_TOKEN_LENGTH = 200;
export const MAX_SENTENCE_LENGTH = 1000;
// The lookbehind starts a try only where a token starts (linear, not a try at every character).
const LONG_TOKEN = new RegExp(String.raw`(?<!\S)\S{${MAX_TOKEN_LENGTH + 1},}`, "g");

/** Every token cut to MAX_TOKEN_LENGTH. */
export function boundTokens(text: string): string {
  // A token too long (almost never) covers one of every (MAX_TOKEN_LENGTH + 1)th character: only the tokens there are measured.
  for (let at = MAX_TOKEN_LENGTH; at < text.length; at += MAX_TOKEN_LENGTH + 1) {
    if (isSpace(text.charCodeAt(at))) continue;
    let start = at;
    while (start > 0 && !isSpace(text.charCodeAt(start - 1))) start--;
    let end = at + 1;
    while (end < text.length && !isSpace(text.charCodeAt(end))) end++;
    if (end - start > MAX_TOKEN_LENGTH) return text.replace(LONG_TOKEN, (token) => token.slice(0, MAX_TOKEN_LENGTH));
  }
  return text;
}

function boundSentence(sentence: string): string {
  if (sentence.length <= MAX_SENTENCE_LENGTH) return sentence;
  const cut = sentence.slice(0, MAX_SENTENCE_LENGTH);
  const space = cut.lastIndexOf(" ");
  return space > MAX_SENTENCE_LENGTH / 2 ? cut.slice(0, space) : cut;
}

const LINE_MARKER = /^\s*(?:#{1,6}\s+|>\s*|[-*+\u2022]\s+|\d{1,3}[.)]\s+)/;
/** A line that ends a sentence or introduces what follows: the next line starts a new block. */
const FINISHED = /[.!?:]$/;

/**
 * Cut text into sentences: blocks by line structure, then on sentence punctuation and contrast markers.
 * `prose`: the text is a reading's prose, already normalised and with its tokens bounded.
 */
export function splitSentences(text: string, prose = false): string[] {
  const blocks: string[] = [];
  let current = "";
  // What `current` ends with, known without reading it (a test of a joined string copies it whole).
  let currentFinished = false;
  let currentIsHeading = false;
  for (const raw of (prose ? text : normalise(text)).split("\n")) {
    const line = raw.trim();
    if (line === "") {
      if (current) blocks.push(current);
      current = "";
      continue;
    }
    const startsItem = LINE_MARKER.test(raw);
    // Each replace only where it has something to remove (a marker on the trimmed line is one on the raw line).
    const unmarked = startsItem ? line.replace(LINE_MARKER, "") : line;
    const cleaned = (unmarked.includes("**") || unmarked.includes("__") ? unmarked.replace(/\*\*|__/g, "") : unmarked).trim();
    // A hard-wrapped paragraph continues on the next line; items, headings and finished sentences do not.
    if (startsItem || current === "" || currentIsHeading || currentFinished) {
      if (current) blocks.push(current);
      current = cleaned;
    } else {
      current = `${current} ${cleaned}`;
    }
    currentFinished = FINISHED.test(cleaned);
    currentIsHeading = /^#{1,6}\s/.test(line);
  }
  if (current) blocks.push(current);

  const sentences: string[] = [];
  for (const block of prose ? blocks : blocks.map(boundTokens)) {
    const masked = block.replace(ABBREVIATION, (m) => m.replace(/\./g, DOT_MASK));
    const hasMask = masked.includes(DOT_MASK);
    for (const piece of masked.split(/(?<=[.!?])["')\]]*\s+|;\s+|,\s+(?=(?:but|however|although|whereas)\b)/i)) {
      const sentence = boundSentence((hasMask ? piece.replaceAll(DOT_MASK, ".") : piece).trim());
      if (sentence) sentences.push(sentence);
    }
  }
  return sentences;
}
