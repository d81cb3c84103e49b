import { jsonSchema, tool } from 'ai';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { fromAiSdkTools } from './ai-sdk.js';
import { createToolEnvironment } from './tool-environment.js';

const INPUT = { prompt: 'p', promptIndex: 0, sampleIndex: 0, trajectoryId: 't-0-0' };

describe('fromAiSdkTools', () => {
  it('takes zod and jsonSchema tools as they are', async () => {
    const seen: unknown[] = [];
    const tools = await fromAiSdkTools({
      weather: tool({
        description: 'Weather in a city',
        inputSchema: z.object({ city: z.string(), unit: z.enum(['C', 'F']).default('C') }),
        execute: async ({ city, unit }, options) => {
          seen.push(options.toolCallId, options.abortSignal instanceof AbortSignal);
          return { city, unit, degrees: 21 };
        },
      }),
      add: tool({
        description: 'Adds two numbers',
        inputSchema: jsonSchema<{ a: number; b: number }>({
          type: 'object',
          properties: { a: { type: 'number' }, b: { type: 'number' } },
          required: ['a', 'b'],
        }),
        execute: ({ a, b }) => a + b,
      }),
    });
    expect(tools.map((entry) => entry.name)).toEqual(['weather', 'add']);
    expect(tools[0]!.inputSchema).toMatchObject({
      type: 'object',
      properties: { city: { type: 'string' } },
    });
    const environment = await createToolEnvironment({ setup: () => ({ tools }) })(INPUT);
    const step = await environment.step({
      index: 0,
      text: '',
      toolCalls: [
        { name: 'weather', arguments: { city: 'Oslo' } },
        { name: 'add', arguments: { a: 2, b: 3 } },
        { name: 'weather', arguments: { city: 7 } },
      ],
      malformedToolCalls: [],
      finishReason: 'tool-call',
    });
    expect(step.messages.map((message) => message.content)).toEqual([
      '{"city":"Oslo","unit":"C","degrees":21}',
      '5',
      expect.stringMatching(/invalid arguments for 'weather'/),
    ]);
    expect(step.toolResults?.map((record) => record.status)).toEqual(['ok', 'ok', 'invalid-input']);
    expect(seen).toEqual(['t-0-0-1', true]);
  });

  it('refuses a tool without execute, naming it', async () => {
    await expect(
      fromAiSdkTools({ ask: tool({ description: 'x', inputSchema: z.object({}) }) }),
    ).rejects.toThrow(/tools\.ask\.execute/);
  });
});
