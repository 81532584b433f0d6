// Many literals as one regex whose alternatives are factored by shared prefix, so a position
// is tested once per distinct next char instead of once per literal (secrets often share `sk-ant-…`).
import { escapeRegExp } from "../escape-regexp.js";

interface TrieNode {
  terminal: boolean;
  readonly children: Map<string, TrieNode>;
}

function newNode(): TrieNode {
  return { terminal: false, children: new Map() };
}

function sourceOf(start: TrieNode): string {
  let chain = "";
  let node = start;
  // Walk unbranched, non-terminal runs iteratively: recursion depth stays at the number of branch points.
  while (!node.terminal && node.children.size === 1) {
    const [char, child] = node.children.entries().next().value as [string, TrieNode];
    chain += escapeRegExp(char);
    node = child;
  }
  if (node.children.size === 0) return chain;
  const branches = [...node.children].map(([char, child]) => escapeRegExp(char) + sourceOf(child));
  const group = `(?:${branches.join("|")})`;
  // Greedy `?` prefers the longer literal and backtracks to this one if the longer one fails.
  return chain + (node.terminal ? `${group}?` : branches.length === 1 ? (branches[0] ?? "") : group);
}

/** Regex source (no capturing groups) matching any of `literals`, preferring the longest at a position. */
export function literalAlternation(literals: Iterable<string>): string {
  const root = newNode();
  for (const literal of literals) {
    if (literal === "") continue;
    let node = root;
    for (const char of literal.split("")) {
      let child = node.children.get(char);
      if (child === undefined) {
        child = newNode();
        node.children.set(char, child);
      }
      node = child;
    }
    node.terminal = true;
  }
  return sourceOf(root);
}
