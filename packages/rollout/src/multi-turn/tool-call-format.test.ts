import { describe, expect, it } from 'vitest';
import { parseToolCalls } from './tool-call-format.js';

describe('parseToolCalls', () => {
  it('parses Hermes / Qwen tool calls, several per turn', () => {
    const text =
      'Let me compute.\n<tool_call>\n{"name": "calculator", "arguments": {"expression": "12 * 34"}}\n</tool_call>\n<tool_call>\n{"name": "now"}\n</tool_call>';
    expect(parseToolCalls(text)).toEqual({
      toolCalls: [
        { name: 'calculator', arguments: { expression: '12 * 34' } },
        { name: 'now', arguments: {} },
      ],
      malformedToolCalls: [],
    });
  });

  it('keeps every malformed block with its reason', () => {
    const cases: [string, string][] = [
      ['<tool_call>{"name": "f", "arguments": {</tool_call>', 'not JSON'],
      ['<tool_call>[1, 2]</tool_call>', 'not a JSON object'],
      ['<tool_call>{"arguments": {}}</tool_call>', 'no "name" string'],
      ['<tool_call>{"name": "f", "arguments": 3}</tool_call>', '"arguments" is not an object'],
      ['<tool_call>{"name": "f"}', 'no closing </tool_call>'],
      ['just text</tool_call>', 'no opening <tool_call>'],
    ];
    for (const [text, error] of cases) {
      const parsed = parseToolCalls(text);
      expect(parsed.toolCalls, text).toEqual([]);
      expect(
        parsed.malformedToolCalls.map((call) => call.error),
        text,
      ).toEqual([error]);
    }
    expect(parseToolCalls('no calls here')).toEqual({ toolCalls: [], malformedToolCalls: [] });
  });
});
