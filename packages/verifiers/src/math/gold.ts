/**
 * The gold answer as datasets write it (issue 35): a bare answer, `$…$`, a solution whose boxes hold
 * the answer (`\(\boxed{1}\) and \(\boxed{-2}\)`: the list 1, −2), JSON-escaped LaTeX with doubled
 * backslashes (`\\frac{1}{5}`). What cannot be read is refused with a reason, never guessed.
 * Internal.
 */
import { groupBoxes } from './box-groups.js';
import { findBoxes } from './boxes.js';
import { normalizeUnicode } from './unicode.js';

export type GoldText = { text: string } | { error: string };

/** Every backslash doubled and no single one before a command: JSON-escaped LaTeX, undone. */
export function undouble(text: string): string {
  if (!/\\\\[A-Za-z{}()[\]]/.test(text) || /(?<!\\)\\[A-Za-z]/.test(text.replace(/\\\\/g, ''))) {
    return text;
  }
  return text.replace(/\\\\/g, '\\');
}

/** The answer text of a gold, or why it is refused. */
export function readGold(gold: string): GoldText {
  const text = undouble(normalizeUnicode(gold)).trim();
  if (/^\$*\s*0,\d{3,}\s*\$*$/.test(text)) {
    return {
      error: `'${text}' is ambiguous (a decimal comma or the list 0, ${text.replace(/^\D*0,/, '')}): write 0.${text.replace(/^\D*0,/, '')} or "0, …"`,
    };
  }
  const boxes = findBoxes(text, 64);
  if (boxes.length === 0) return { text };
  const open = boxes.find((box) => !box.terminated);
  if (open) return { error: 'it has an unterminated \\boxed{' };
  const groups = groupBoxes(text, boxes);
  const contents = groups.since.map((box) => box.content.trim()).filter((item) => item !== '');
  if (contents.length === 0) return { error: 'its box is empty' };
  if (groups.alternative) return { text: contents.join(' \\text{ or } ') };
  const distinct = [...new Set(contents)];
  return { text: distinct.length === 1 ? distinct[0]! : distinct.join(', ') };
}
