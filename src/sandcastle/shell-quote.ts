// One word for `sh`: single quotes keep every byte but `'` literal; `'` itself becomes `'\''`.
export function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}
