import { InvalidArgumentError, validateOptions } from '@rlvr/core';
import type { CodeLanguage } from './types.js';

const ALIASES: Record<CodeLanguage, readonly string[]> = {
  python: ['python', 'py', 'python3', 'py3'],
  javascript: ['javascript', 'js', 'node', 'nodejs', 'mjs', 'cjs', 'jsx'],
};

/** Options of {@link extractCode}. */
export type ExtractCodeOptions = {
  /** Prefer blocks tagged with this language (and its aliases, e.g. `py`, `js`). */
  language?: CodeLanguage;
};

/**
 * Extracts the program from a model completion: the LAST fenced block (```` ``` ```` or `~~~`)
 * tagged with the requested language (or an alias); failing that, the last untagged block; failing
 * that, `null`. Blocks tagged with another language are never chosen when `language` is given. A
 * final fence left open (a truncated completion) runs to the end of the text. Completions without
 * any fence yield `null` — raw text is not run as code. Never throws on model output.
 *
 * @example
 * ```ts
 * extractCode('Here:\n```python\nprint(1)\n```', { language: 'python' }); // 'print(1)\n'
 * ```
 * @throws {InvalidArgumentError} `INVALID_ARGUMENT` when `completion` is not a string.
 */
export function extractCode(completion: string, options?: ExtractCodeOptions): string | null {
  if (typeof completion !== 'string') {
    throw new InvalidArgumentError({
      parameter: 'completion',
      functionName: 'extractCode',
      value: completion,
      expected: 'a string',
    });
  }
  const { language } = validateOptions<ExtractCodeOptions>(options, {
    parameter: 'options',
    functionName: 'extractCode',
    known: ['language'],
  });
  if (language !== undefined && language !== 'python' && language !== 'javascript') {
    throw new InvalidArgumentError({
      parameter: 'options.language',
      functionName: 'extractCode',
      value: language,
      expected: "'python' or 'javascript'",
    });
  }
  const blocks: { tag: string; body: string }[] = [];
  const lines = completion.split('\n');
  let open: { fence: string; tag: string; body: string[] } | null = null;
  for (const line of lines) {
    if (open === null) {
      const match = /^\s{0,3}(`{3,}|~{3,})\s*([\w+#.-]*)/.exec(line);
      if (match)
        open = { fence: match[1] as string, tag: (match[2] ?? '').toLowerCase(), body: [] };
      continue;
    }
    const trimmed = line.trim();
    if (
      trimmed.startsWith(open.fence) &&
      /^(`+|~+)$/.test(trimmed) &&
      trimmed[0] === open.fence[0]
    ) {
      blocks.push({ tag: open.tag, body: open.body.length ? `${open.body.join('\n')}\n` : '' });
      open = null;
      continue;
    }
    open.body.push(line);
  }
  if (open !== null && open.body.length > 0) {
    blocks.push({ tag: open.tag, body: `${open.body.join('\n')}\n` });
  }
  const wanted = language ? ALIASES[language] : null;
  for (let index = blocks.length - 1; index >= 0; index--) {
    const block = blocks[index] as { tag: string; body: string };
    if (wanted ? wanted.includes(block.tag) : block.tag !== '') return block.body;
  }
  for (let index = blocks.length - 1; index >= 0; index--) {
    const block = blocks[index] as { tag: string; body: string };
    if (block.tag === '') return block.body;
  }
  return null;
}
