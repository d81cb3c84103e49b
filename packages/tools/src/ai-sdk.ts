import { InvalidArgumentError, type JsonSchema, type ToolDefinition } from '@rlvr/core';
import { asSchema, type Tool } from 'ai';
import { ToolFault } from './tool-fault.js';

const FN = 'fromAiSdkTools';

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return (
    value !== null &&
    typeof value === 'object' &&
    typeof (value as AsyncIterable<unknown>)[Symbol.asyncIterator] === 'function'
  );
}

/**
 * Takes Vercel AI SDK tools as they are — `{ name: tool({ description, inputSchema, execute }) }`
 * with a zod or `jsonSchema()` input schema — and returns rlvr {@link ToolDefinition}s: the JSON
 * Schema the SDK derives (`asSchema(inputSchema).jsonSchema`) is what the model is shown and what
 * calls are checked against; the schema's own validation (zod's parse, with its defaults and
 * transforms) then runs on the input, and `execute` gets it with the SDK's options (`toolCallId`,
 * `messages: []`, `abortSignal`). A streaming `execute` (an async iterable) returns its last value.
 * Tools without `execute` are refused (there is nothing to run).
 *
 * `ai` is an optional peer dependency of this entry point only (`@rlvr/tools/ai-sdk`).
 *
 * @example
 * ```ts
 * import { tool } from 'ai';
 * import { z } from 'zod';
 * const tools = await fromAiSdkTools({
 *   add: tool({ description: 'Adds', inputSchema: z.object({ a: z.number(), b: z.number() }), execute: ({ a, b }) => a + b }),
 * });
 * ```
 * @throws {InvalidArgumentError} naming `tools.<name>` for a tool without `execute` or a bad name.
 */
export async function fromAiSdkTools(
  tools: Readonly<Record<string, Tool>>,
): Promise<ToolDefinition[]> {
  if (tools === null || typeof tools !== 'object' || Array.isArray(tools)) {
    throw new InvalidArgumentError({
      parameter: 'tools',
      functionName: FN,
      value: tools,
      expected: 'an object of AI SDK tools by name',
    });
  }
  const out: ToolDefinition[] = [];
  let callCount = 0;
  for (const [name, sdkTool] of Object.entries(tools)) {
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(name)) {
      throw new InvalidArgumentError({
        parameter: `tools.${name}`,
        functionName: FN,
        value: name,
        expected: 'a tool name of 1-64 letters, digits, _ or -',
      });
    }
    const execute = sdkTool?.execute;
    if (typeof execute !== 'function') {
      throw new InvalidArgumentError({
        parameter: `tools.${name}.execute`,
        functionName: FN,
        value: execute,
        expected: 'an execute function (a tool the model calls must run here)',
      });
    }
    const schema = asSchema(sdkTool.inputSchema);
    const inputSchema = (await schema.jsonSchema) as JsonSchema;
    out.push({
      name,
      description: sdkTool.description ?? '',
      inputSchema,
      async execute(input, context) {
        let value: unknown = input;
        if (schema.validate) {
          const result = await schema.validate(input);
          if (!result.success) throw new ToolFault('invalid-input', result.error.message);
          value = result.value;
        }
        callCount += 1;
        const output: unknown = await execute(value as never, {
          toolCallId: `${context.trajectoryId}-${callCount}`,
          messages: [],
          abortSignal: context.signal,
        });
        if (!isAsyncIterable(output)) return output;
        let last: unknown;
        for await (const chunk of output) last = chunk;
        return last;
      },
    });
  }
  return out;
}
