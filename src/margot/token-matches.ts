// Matching a pattern only where it can match. Paths, repos and file names never hold whitespace and
// always hold some mark ("/", ".ts"): trying the pattern only inside the runs of text that hold a mark
// finds the same matches as a scan of the whole text, in the same order, and leaves the prose untried.
// A case-insensitive pattern whose matches all hold some ASCII word is not tried on a text whose
// lower-cased form lacks the word.

const stickies = new WeakMap<RegExp, RegExp>();

/** The pattern tried at one position only. */
function sticky(pattern: RegExp): RegExp {
  let at = stickies.get(pattern);
  if (!at) {
    at = new RegExp(pattern.source, `${pattern.flags.replace("g", "")}y`);
    stickies.set(pattern, at);
  }
  return at;
}

/**
 * The matches `text.matchAll(pattern)` gives, for a `pattern` whose every match lies inside one run of
 * non-whitespace characters and holds a match of the global `mark`.
 */
export function* matchesWithin(pattern: RegExp, text: string, mark: RegExp): Generator<RegExpExecArray> {
  const at = sticky(pattern);
  let from = 0;
  for (;;) {
    mark.lastIndex = from;
    const hit = mark.exec(text);
    if (hit === null) return;
    let start = hit.index;
    while (start > from && !isSpace(text.charCodeAt(start - 1))) start--;
    let end = hit.index + hit[0].length;
    while (end < text.length && !isSpace(text.charCodeAt(end))) end++;
    let found: RegExpExecArray | null = null;
    // Leftmost first, as a scan would find it: a match starting at i is what the pattern finds there.
    for (let i = start; i < end && found === null; i++) {
      at.lastIndex = i;
      found = at.exec(text);
    }
    if (found === null) {
      from = end;
      continue;
    }
    yield found;
    from = found.index + Math.max(1, found[0].length);
  }
}

const FOLDS_TO_ASCII = /[\u017f\u212a]/;
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

/** Whether a literal is one that foldableLower's text can be searched for (printable ASCII, lower case). */
export function foldableLiteral(literal: string): boolean {
  return PRINTABLE_ASCII.test(literal) && literal === literal.toLowerCase();
}

/**
 * The text lower-cased, to look for ASCII literals that an `i` pattern's matches hold; null when that could
 * miss one: ſ and K (Kelvin) are the two characters that fold to ASCII letters.
 */
export function foldableLower(text: string): string | null {
  return FOLDS_TO_ASCII.test(text) ? null : text.toLowerCase();
}

const SPACE = /\s/;

/** What `\s` matches, by char code. */
export function isSpace(code: number): boolean {
  return code === 32 || (code >= 9 && code <= 13) || (code > 127 && SPACE.test(String.fromCharCode(code)));
}
