import type { AssistantTurn, Environment, ToolCall, ToolDefinition } from '@rlvr/core';
import { describe, expect, it } from 'vitest';
import { createCalculatorTool } from './calculator.js';
import { createToolEnvironment } from './tool-environment.js';

const INPUT = { prompt: 'p', promptIndex: 0, sampleIndex: 0, trajectoryId: 't-0-0' };

function turn(toolCalls: ToolCall[], extra: Partial<AssistantTurn> = {}): AssistantTurn {
  return {
    index: 0,
    text: '',
    toolCalls,
    malformedToolCalls: [],
    finishReason: 'tool-call',
    ...extra,
  };
}

const object = { type: 'object' } as const;
const FAULTY: ToolDefinition<never>[] = [
  {
    name: 'thrower',
    description: 'throws',
    inputSchema: object,
    execute: () => {
      throw new Error('boom');
    },
  },
  {
    name: 'hang',
    description: 'never settles',
    inputSchema: object,
    timeoutMs: 50,
    execute: () => new Promise(() => {}),
  },
  {
    name: 'late',
    description: 'rejects after its limit',
    inputSchema: object,
    timeoutMs: 20,
    execute: () => new Promise((_, reject) => setTimeout(() => reject(new Error('late')), 60)),
  },
  {
    name: 'flood',
    description: 'returns 10 MB',
    inputSchema: object,
    execute: () => 'x'.repeat(10 * 1024 * 1024),
  },
  {
    name: 'circular',
    description: 'returns a cycle',
    inputSchema: object,
    execute: () => {
      const value: Record<string, unknown> = {};
      value.self = value;
      return value;
    },
  },
];

async function open(): Promise<Environment> {
  const factory = createToolEnvironment({
    setup: () => ({
      tools: [...FAULTY, createCalculatorTool() as ToolDefinition<never>],
      reward: ({ turns }) => (turns.at(-1)!.text.includes('42') ? 1 : 0),
    }),
  });
  return factory(INPUT);
}

describe('createToolEnvironment', () => {
  it('renders the tools and the prompt, runs calls, and scores the answer', async () => {
    const environment = await open();
    const reset = await environment.reset(INPUT);
    expect(reset.messages).toEqual([{ role: 'user', content: 'p' }]);
    expect(reset.tools?.map((tool) => tool.name)).toContain('calculator');
    const step = await environment.step(
      turn([{ name: 'calculator', arguments: { expression: '6 * 7' } }]),
    );
    expect(step).toMatchObject({ done: false, messages: [{ role: 'tool', content: '42' }] });
    expect(step.toolResults?.[0]?.status).toBe('ok');
    const end = await environment.step(turn([], { text: 'it is 42', finishReason: 'stop' }));
    expect(end).toEqual({ messages: [], done: true, reward: 1 });
  });

  it('turns every fault into a typed result the model sees', async () => {
    const environment = await open();
    const cases: [ToolCall, string, RegExp][] = [
      [{ name: 'thrower', arguments: {} }, 'error', /failed: boom/],
      [{ name: 'hang', arguments: {} }, 'timeout', /within 50 ms/],
      [{ name: 'late', arguments: {} }, 'timeout', /within 20 ms/],
      [{ name: 'flood', arguments: {} }, 'output-limit', /10485760 bytes/],
      [{ name: 'circular', arguments: {} }, 'error', /not JSON/],
      [{ name: 'nope', arguments: {} }, 'unknown-tool', /unknown tool 'nope'/],
      [{ name: 'calculator', arguments: { expr: '1' } }, 'invalid-input', /invalid arguments/],
      [{ name: 'calculator', arguments: { expression: 'import({})' } }, 'error', /failed/],
    ];
    for (const [call, status, message] of cases) {
      const step = await environment.step(turn([call]));
      expect(step.toolResults?.[0]?.status, call.name).toBe(status);
      expect(step.messages[0]?.content).toMatch(message);
      expect(step.done).toBe(false);
    }
    // the late rejection arrives after its timeout: nothing crashes
    await new Promise((resolve) => setTimeout(resolve, 80));
    const malformed = await environment.step(
      turn([], { malformedToolCalls: [{ text: '{oops', error: 'not JSON' }] }),
    );
    expect(malformed.toolResults).toEqual([{ name: '', status: 'malformed', durationMs: 0 }]);
    expect(malformed.messages[0]?.content).toMatch(/malformed tool call \(not JSON\)/);
  });

  it('ends on a malformed call when told to, and names bad options', async () => {
    const factory = createToolEnvironment({
      setup: () => ({ tools: [], reward: () => 0 }),
      malformedToolCall: 'end',
    });
    const environment = await factory(INPUT);
    const step = await environment.step(
      turn([], { malformedToolCalls: [{ text: 'x', error: 'no name' }] }),
    );
    expect(step).toMatchObject({ done: true, reward: 0 });
    expect(() =>
      createToolEnvironment({ setup: () => ({ tools: [] }), timeoutMS: 5 } as never),
    ).toThrow(/did you mean 'timeoutMs'/);
    expect(() =>
      createToolEnvironment({ setup: () => ({ tools: [] }), malformedToolCall: 'retry' } as never),
    ).toThrow(/options\.malformedToolCall/);
  });
});
