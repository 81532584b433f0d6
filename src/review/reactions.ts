// The reaction vocabulary: what a reviewer can do with a draft (approve, reject, defer) and the emoji that
// say it. Every channel and the CLI read reactions in these words; the draft store decides what each does.

export const REACTIONS = ["approve", "reject", "defer"] as const;
export type Reaction = (typeof REACTIONS)[number];

/**
 * Each emoji and the reaction it means. Telegram's standard reaction set has 👍 and 👎 but neither ❌ nor ⏳,
 * so 😴 and 🥱 also mean defer.
 */
export const REACTION_EMOJI: ReadonlyArray<readonly [emoji: string, reaction: Reaction]> = [
  ["👍", "approve"],
  ["👎", "reject"],
  ["❌", "reject"],
  ["⏳", "defer"],
  ["⌛", "defer"],
  ["😴", "defer"],
  ["🥱", "defer"],
];

/** Emoji compare without variation selectors / skin tones ("👍🏽" is 👍). */
export function bareEmoji(text: string): string {
  return text.replace(/[\u{FE0E}\u{FE0F}\u{1F3FB}-\u{1F3FF}]/gu, "");
}

export function reactionForEmoji(emoji: string): Reaction | null {
  const bare = bareEmoji(emoji.trim());
  return REACTION_EMOJI.find(([e]) => e === bare)?.[1] ?? null;
}
