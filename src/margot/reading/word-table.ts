// Words looked up where they stand in a text, without cutting each one out as a string. The reading looks
// up every word of every sentence, and most words are in no list: a string per word, made only to be hashed
// and thrown away, would cost more than the lookup. The scanner hashes the folded letters as it reads them
// (`fnv1aStep`) and the table compares the candidate's letters in place.
import { FNV1A_SEED, fnv1aStep } from "./fnv1a.js";

function hashOf(word: string): number {
  let hash = FNV1A_SEED;
  for (let i = 0; i < word.length; i++) hash = fnv1aStep(hash, word.charCodeAt(i));
  return hash;
}

/** ASCII upper case to lower case; every other code unit as it is. */
export function foldAscii(code: number): number {
  return code >= 65 && code <= 90 ? code | 0x20 : code;
}

export class WordTable {
  private readonly words: string[] = [];
  private readonly values: number[] = [];
  /** Open addressing: index + 1 into `words`, 0 for an empty slot. */
  private readonly slots: Int32Array;
  private readonly mask: number;

  /** `entries`: lower-case words and their values (non-zero). */
  constructor(entries: Iterable<readonly [string, number]>) {
    const list = [...entries];
    let size = 16;
    while (size < list.length * 4) size <<= 1;
    this.slots = new Int32Array(size);
    this.mask = size - 1;
    for (const [word, value] of list) {
      let slot = hashOf(word) & this.mask;
      while (this.slots[slot] !== 0) slot = (slot + 1) & this.mask;
      this.words.push(word);
      this.values.push(value);
      this.slots[slot] = this.words.length;
    }
  }

  /**
   * The value of the word `text.slice(start, end)` read with ASCII letters folded to lower case, given
   * the hash of its folded code units; 0 when it is not in the table.
   */
  get(text: string, start: number, end: number, hash: number): number {
    const length = end - start;
    for (let slot = hash & this.mask; ; slot = (slot + 1) & this.mask) {
      const entry = this.slots[slot]!;
      if (entry === 0) return 0;
      const word = this.words[entry - 1]!;
      if (word.length !== length) continue;
      let i = 0;
      while (i < length && word.charCodeAt(i) === foldAscii(text.charCodeAt(start + i))) i++;
      if (i === length) return this.values[entry - 1]!;
    }
  }
}
