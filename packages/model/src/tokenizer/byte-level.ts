/** GPT-2's byte-level alphabet, shared by the tokenizer builders and the GGUF export. @internal */

/** GPT-2's `bytes_to_unicode`: byte → the printable character byte-level BPE uses for it. */
export const BYTE_TO_UNICODE: readonly string[] = (() => {
  const printable: number[] = [];
  for (let byte = 0x21; byte <= 0x7e; byte++) printable.push(byte);
  for (let byte = 0xa1; byte <= 0xac; byte++) printable.push(byte);
  for (let byte = 0xae; byte <= 0xff; byte++) printable.push(byte);
  const table: string[] = new Array(256);
  let extra = 0;
  for (let byte = 0; byte < 256; byte++) {
    table[byte] = String.fromCodePoint(printable.includes(byte) ? byte : 256 + extra++);
  }
  return table;
})();

const encoder = new TextEncoder();

/** The byte-level (GPT-2) spelling of `text`: each UTF-8 byte as one printable character. */
export function byteLevelText(text: string): string {
  let out = '';
  for (const byte of encoder.encode(text)) out += BYTE_TO_UNICODE[byte];
  return out;
}
