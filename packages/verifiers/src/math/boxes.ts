/**
 * `\boxed{…}` / `\fbox{…}` spans of a response, found in one linear pass. Internal.
 */

/** One box: its command offset, end (exclusive), content, and whether its brace was closed. */
export type BoxSpan = { start: number; end: number; content: string; terminated: boolean };

const COMMANDS = ['\\boxed', '\\fbox'] as const;

function isLetterCode(code: number): boolean {
  return (code >= 65 && code <= 90) || (code >= 97 && code <= 122);
}

/** Offsets of every box command (not `\boxedfoo`), in order. */
function commandOffsets(text: string): number[] {
  const lists = COMMANDS.map((command) => {
    const offsets: number[] = [];
    for (let index = text.indexOf(command); index >= 0; index = text.indexOf(command, index + 1)) {
      if (!isLetterCode(text.charCodeAt(index + command.length))) offsets.push(index);
    }
    return offsets;
  });
  const [boxed, fbox] = lists as [number[], number[]];
  if (fbox.length === 0) return boxed;
  if (boxed.length === 0) return fbox;
  return [...boxed, ...fbox].sort((a, b) => a - b);
}

/** Offset just after the command at `start` and its spaces. */
function afterCommand(text: string, start: number): number {
  let cursor = start + (text.startsWith('\\boxed', start) ? 6 : 5);
  while (text.charCodeAt(cursor) === 32) cursor++;
  return cursor;
}

/**
 * Matches every box's opening brace with one scan over the text (`\{` `\}` are escapes), so a
 * closed box is found closed however deep or long its content is. `opens[i]` is box i's brace
 * offset (-1 for `\boxed 5`); returns each box's closing-brace offset (-1 when never closed).
 */
function matchBraces(text: string, opens: readonly number[]): Int32Array {
  const closes = new Int32Array(opens.length).fill(-1);
  const stack: number[] = []; // box index for a box's brace, -1 for any other brace
  let next = 0; // next box whose brace is still ahead
  while (next < opens.length && opens[next]! < 0) next++;
  if (next === opens.length) return closes;
  for (let index = opens[next]!; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (code === 92 /* \ */) index++;
    else if (code === 123 /* { */) {
      if (next < opens.length && opens[next] === index) {
        stack.push(next);
        next++;
        while (next < opens.length && opens[next]! < 0) next++;
      } else stack.push(-1);
    } else if (code === 125 /* } */) {
      const box = stack.pop();
      if (box !== undefined && box >= 0) closes[box] = index;
    }
  }
  return closes;
}

/**
 * The last `maxBoxes` outermost boxes of `text`, in order. A box nested in another counts once
 * (as the outer one); an unclosed box runs to the end of the text (so it contains every later box)
 * and is marked `terminated: false`. `\boxed 5` (no brace) takes one token.
 */
export function findBoxes(text: string, maxBoxes: number): BoxSpan[] {
  const offsets = commandOffsets(text);
  if (offsets.length === 0) return [];
  const opens = offsets.map((start) => {
    const cursor = afterCommand(text, start);
    return text.charCodeAt(cursor) === 123 ? cursor : -1;
  });
  const closes = matchBraces(text, opens);
  const ends = offsets.map((start, index) => {
    if (opens[index]! >= 0) return closes[index]! >= 0 ? closes[index]! + 1 : text.length;
    let end = afterCommand(text, start);
    while (end < text.length && !/[\s$]/.test(text[end]!)) end++;
    return end;
  });
  // Boxes are properly nested or disjoint: a box is outermost when it ends after every box that
  // started before it.
  const outer: number[] = [];
  let furthest = -1;
  for (let index = 0; index < offsets.length; index++) {
    if (ends[index]! > furthest) {
      outer.push(index);
      furthest = ends[index]!;
    }
  }
  return outer.slice(-maxBoxes).map((index) => {
    const start = offsets[index]!;
    const open = opens[index]!;
    const end = ends[index]!;
    if (open >= 0) {
      const terminated = closes[index]! >= 0;
      return { start, end, content: text.slice(open + 1, terminated ? end - 1 : end), terminated };
    }
    const cursor = afterCommand(text, start);
    return { start, end, content: text.slice(cursor, end), terminated: end > cursor };
  });
}
