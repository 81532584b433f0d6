// 32-bit FNV-1a, one step at a time: the branch salt hashes a title's UTF-8 bytes, the word table a word's
// folded letters as the scanner reads them. A short, stable hash, not a security measure.

/** Where every hash starts (the FNV offset basis). */
export const FNV1A_SEED = 0x811c9dc5;

/** The hash after one more unit (a byte, or a UTF-16 code unit): a signed 32-bit value; `>>> 0` for the unsigned one. */
export function fnv1aStep(hash: number, unit: number): number {
  return Math.imul(hash ^ unit, 0x01000193);
}
