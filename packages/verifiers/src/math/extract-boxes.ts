/** Extraction from the boxes of a response (decided by position) and a final statement after them. Internal. */
import { classifyGap, groupBoxes } from './box-groups.js';
import type { BoxSpan } from './boxes.js';
import { DEFAULT_COMPARE_OPTIONS } from './compare.js';
import { parseCached, parsedEquivalent, safeEqual } from './equivalent.js';
import {
  type Extraction,
  type ExtractSource,
  finish,
  hedgedExtraction,
  markedSpan,
  type ResolvedExtractOptions,
} from './extraction.js';
import { ANSWER_IS, ANSWER_LABEL, FINAL_ANSWER, GSM8K, MINERVA } from './markers.js';
import type { MathValue } from './structure.js';

/** Items of a list, set or tuple answer (the last box may name every earlier box's value). */
function namedItems(parsed: ReturnType<typeof parseCached>): MathValue[] {
  if (!('value' in parsed)) return [];
  const value = parsed.value;
  if (value.kind === 'list' || value.kind === 'set' || value.kind === 'tuple') return value.items;
  return [value];
}

/** The parsed values of some boxes, or null when one cannot be read (or is too long). */
function boxValues(boxes: readonly BoxSpan[], limit: number): MathValue[] | null {
  const values: MathValue[] = [];
  for (const box of boxes) {
    const content = box.content.trim();
    if (content.length > limit) return null;
    const parsed = parseCached(content);
    if (!('value' in parsed)) return null;
    values.push(parsed.value);
  }
  return values;
}

/** True when a box of `group` holds a value that is neither the last box's nor one it names. */
function differs(group: readonly BoxSpan[], limit: number): boolean {
  return contentsDiffer(
    group.map((box) => box.content.trim()),
    limit,
  );
}

/** True when one of `contents` is a value that is neither the last one's nor one it names. */
export function contentsDiffer(contents: readonly string[], limit: number): boolean {
  const lastText = contents[contents.length - 1]!;
  const lastParsed = parseCached(lastText);
  const named = namedItems(lastParsed);
  return contents.some((content) => {
    if (content === lastText) return false;
    if (content.length > limit) return true;
    const parsed = parseCached(content);
    if (parsedEquivalent(parsed, lastParsed, DEFAULT_COMPARE_OPTIONS)) return false;
    return !(
      'value' in parsed &&
      named.some((item) => safeEqual(parsed.value, item, DEFAULT_COMPARE_OPTIONS))
    );
  });
}

/**
 * Extraction from the boxes, by position (see `box-groups.ts`): the last box, unless a box offered
 * beside it as the final answer holds a different value that the last box does not name — a hedge,
 * whose values are kept as alternatives (verifyMath reads them as a list when the gold lists several
 * values). Boxes before reasoning or a correction are intermediate results.
 */
export function fromBoxes(
  text: string,
  boxes: BoxSpan[],
  options: ResolvedExtractOptions,
  violations: string[],
): Extraction {
  const contents = boxes.map((box) => box.content.trim());
  const nonEmpty = boxes.filter((box) => box.content.trim() !== '');
  if (nonEmpty.length === 0) return finish('', 'boxed', contents, options, violations);
  const last = nonEmpty[nonEmpty.length - 1]!;
  if (!last.terminated || last.content.length > options.maxAnswerLength) {
    return finish('x'.repeat(options.maxAnswerLength + 1), 'boxed', contents, options, [
      ...violations,
      ...(last.terminated ? [] : ['unterminated-box']),
    ]);
  }
  if (options.multipleAnswers === 'last' || nonEmpty.length === 1) {
    return finish(last.content, 'boxed', contents, options, violations);
  }
  const groups = groupBoxes(text, nonEmpty);
  const limit = options.maxAnswerLength;
  const boxLists = [groups.final, groups.since]
    .filter((group, index) => group.length > 1 && (index === 0 || group !== groups.final))
    .map((group) => boxValues(group, limit))
    .filter((values): values is MathValue[] => values !== null);
  const texts = groups.final.map((box) => box.content.trim());
  if (groups.alternative || differs(groups.final, limit)) {
    const hedged = hedgedExtraction('boxed', texts, violations, boxValues(groups.final, limit));
    return { ...hedged, boxLists };
  }
  return { ...finish(last.content, 'boxed', contents, options, violations), boxLists };
}

/** Markers that state the final answer; one after the last box is the later statement. */
const FINAL_MARKERS: readonly (readonly [ExtractSource, RegExp])[] = [
  ['gsm8k', GSM8K],
  ['minerva', MINERVA],
  ['final-answer', FINAL_ANSWER],
  ['answer-is', ANSWER_IS],
  ['answer-is', ANSWER_LABEL],
];

/**
 * A final-answer statement after the last box ("… \\boxed{255} … Final Answer: The final answer is
 * $10,455$"): the later statement is the answer, unless it is offered beside the box (nothing but
 * punctuation between, or an "or"), which hedges when the two differ.
 */
export function finalStatementAfter(
  text: string,
  boxEnd: number,
  boxed: Extraction,
  options: ResolvedExtractOptions,
  violations: string[],
): Extraction | null {
  let best: { source: ExtractSource; start: number; end: number } | null = null;
  for (const [source, pattern] of FINAL_MARKERS) {
    pattern.lastIndex = 0;
    for (let match = pattern.exec(text); match; match = pattern.exec(text)) {
      if (match.index >= boxEnd && (!best || match.index > best.start)) {
        best = { source, start: match.index, end: match.index + match[0].length };
      }
    }
  }
  if (!best) return null;
  const span = markedSpan(text, best.end, options);
  const stated = finish(span, best.source, [span], options, violations);
  const gap = classifyGap(text.slice(boxEnd, best.start));
  const same =
    boxed.parsed !== null &&
    stated.parsed !== null &&
    parsedEquivalent(boxed.parsed, stated.parsed, DEFAULT_COMPARE_OPTIONS);
  if (same || boxed.answer === null) return same ? boxed : null;
  // a statement that is not math ("the answer is \"$12 $ and $13 $\"") does not outweigh the box
  const value = stated.parsed && 'value' in stated.parsed ? stated.parsed.value : null;
  if (value === null || value.kind === 'text') return null;
  if (gap === 'alternative' || gap === 'list') {
    return hedgedExtraction('boxed', [boxed.answer, span], violations, null);
  }
  return stated;
}
