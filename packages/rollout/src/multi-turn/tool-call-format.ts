import type { MalformedToolCall, ToolCall } from '@rlvr/core';

/** Where a Hermes / Qwen tool call opens. */
export const TOOL_CALL_OPEN = '<tool_call>';
/** Where a Hermes / Qwen tool call closes: the turn pauses here for the environment. */
export const TOOL_CALL_CLOSE = '</tool_call>';

/** The tool calls of one assistant turn's text. */
export type ParsedToolCalls = { toolCalls: ToolCall[]; malformedToolCalls: MalformedToolCall[] };

/**
 * Parses the Hermes / Qwen tool-call format the families' templates render tools with:
 * `<tool_call>\n{"name": "calculator", "arguments": {"expression": "2*3"}}\n</tool_call>`, any
 * number per turn. A block that is not a JSON object with a string `name` (and an object
 * `arguments`, or none: `{}`), an opening tag without its close or a close without its opening
 * tag is malformed (kept with the
 * reason, for the environment to answer and the trainer to count).
 *
 * @example
 * ```ts
 * parseToolCalls('<tool_call>\n{"name": "f", "arguments": {"x": 1}}\n</tool_call>');
 * // { toolCalls: [{ name: 'f', arguments: { x: 1 } }], malformedToolCalls: [] }
 * ```
 */
export function parseToolCalls(text: string): ParsedToolCalls {
  const toolCalls: ToolCall[] = [];
  const malformedToolCalls: MalformedToolCall[] = [];
  let from = 0;
  for (;;) {
    const open = text.indexOf(TOOL_CALL_OPEN, from);
    const stray = text.indexOf(TOOL_CALL_CLOSE, from);
    if (stray >= 0 && (open < 0 || stray < open)) {
      malformedToolCalls.push({
        text: text.slice(from, stray),
        error: `no opening ${TOOL_CALL_OPEN}`,
      });
      from = stray + TOOL_CALL_CLOSE.length;
      continue;
    }
    if (open < 0) break;
    const start = open + TOOL_CALL_OPEN.length;
    const close = text.indexOf(TOOL_CALL_CLOSE, start);
    if (close < 0) {
      malformedToolCalls.push({ text: text.slice(open), error: `no closing ${TOOL_CALL_CLOSE}` });
      break;
    }
    const body = text.slice(start, close).trim();
    from = close + TOOL_CALL_CLOSE.length;
    let value: unknown;
    try {
      value = JSON.parse(body);
    } catch {
      malformedToolCalls.push({ text: body, error: 'not JSON' });
      continue;
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      malformedToolCalls.push({ text: body, error: 'not a JSON object' });
      continue;
    }
    const { name, arguments: args } = value as { name?: unknown; arguments?: unknown };
    if (typeof name !== 'string' || name === '') {
      malformedToolCalls.push({ text: body, error: 'no "name" string' });
      continue;
    }
    if (args !== undefined && (args === null || typeof args !== 'object' || Array.isArray(args))) {
      malformedToolCalls.push({ text: body, error: '"arguments" is not an object' });
      continue;
    }
    toolCalls.push({ name, arguments: args ?? {} });
  }
  return { toolCalls, malformedToolCalls };
}
