import {
  type AssistantTurn,
  type ChatMessage,
  type Environment,
  type EnvironmentFactory,
  type EnvironmentInput,
  InvalidArgumentError,
  type ToolDefinition,
  type ToolResultRecord,
  validateInteger,
  validateOneOf,
  validateOptions,
} from '@rlvr/core';
import { compileInputSchema, runToolCall } from './run-tool-call.js';

const FN = 'createToolEnvironment';

/** The state a tool environment's `reward` scores when the model ends the trajectory. */
export type ToolEpisode = {
  input: EnvironmentInput;
  /** Every assistant turn, in order (the last one is the answer). */
  turns: AssistantTurn[];
  /** Every tool call's record, in order. */
  toolResults: ToolResultRecord[];
};

/** What one trajectory's tools and hooks are: built per trajectory by `setup`. */
export type ToolSession = {
  tools: readonly ToolDefinition<never>[];
  /** The first messages (default: one user message with the prompt). */
  messages?: ChatMessage[];
  /** Reward when the model answers without a tool call (default: none). */
  reward?: (episode: ToolEpisode) => number | null | Promise<number | null>;
  /** Frees what the session holds (e.g. its sandbox workspace). */
  close?: () => void | Promise<void>;
};

/** Options of {@link createToolEnvironment}. */
export type ToolEnvironmentOptions = {
  /** Builds a trajectory's tools (and first messages, reward, close): once per trajectory. */
  setup: (input: EnvironmentInput) => ToolSession | Promise<ToolSession>;
  /** A system message placed first (default: none). */
  system?: string;
  /** Default wall-clock limit per tool call, ms (default 10,000; a tool's own `timeoutMs` wins). */
  timeoutMs?: number;
  /** Default result size limit per call, bytes (default 65,536; a tool's `maxOutputBytes` wins). */
  maxOutputBytes?: number;
  /** Most tool calls run per turn; the rest get an error result (default 4). */
  maxToolCallsPerTurn?: number;
  /**
   * What a malformed tool call gets: `error-message` (default) answers it with an error the model
   * sees and goes on; `end` ends the trajectory (reward as for an answer).
   */
  malformedToolCall?: 'error-message' | 'end';
};

/**
 * An {@link EnvironmentFactory} over tools: each assistant turn's tool calls run (one after the
 * other, each under its limits) and their results come back as `tool` messages; a turn without
 * tool calls ends the trajectory and is scored by the session's `reward`. Every fault — unknown
 * tool, arguments that fail the JSON schema, a throw, a run past its limit, an oversized result, a
 * malformed call — is a typed {@link ToolResultRecord} and an error message, never a thrown error.
 * (A tool that blocks the event loop cannot be interrupted in-process: run such code in the
 * sandbox tool, which is a separate process.)
 *
 * @example
 * ```ts
 * const environment = createToolEnvironment({
 *   setup: ({ answer }) => ({
 *     tools: [createCalculatorTool()],
 *     reward: ({ turns }) => (turns.at(-1)!.text.includes(String(answer)) ? 1 : 0),
 *   }),
 * });
 * ```
 */
export function createToolEnvironment(options: ToolEnvironmentOptions): EnvironmentFactory {
  const input = validateOptions<ToolEnvironmentOptions>(options ?? null, {
    parameter: 'options',
    functionName: FN,
    known: [
      'setup',
      'system',
      'timeoutMs',
      'maxOutputBytes',
      'maxToolCallsPerTurn',
      'malformedToolCall',
    ],
  });
  if (typeof input.setup !== 'function') {
    throw new InvalidArgumentError({
      parameter: 'options.setup',
      functionName: FN,
      value: input.setup,
      expected: 'a function (input) => { tools, messages?, reward?, close? }',
    });
  }
  const setup = input.setup;
  const limits = {
    timeoutMs: validateInteger(input.timeoutMs ?? 10_000, {
      parameter: 'options.timeoutMs',
      functionName: FN,
      min: 1,
    }),
    maxOutputBytes: validateInteger(input.maxOutputBytes ?? 65_536, {
      parameter: 'options.maxOutputBytes',
      functionName: FN,
      min: 1,
    }),
  };
  const maxCalls = validateInteger(input.maxToolCallsPerTurn ?? 4, {
    parameter: 'options.maxToolCallsPerTurn',
    functionName: FN,
    min: 1,
  });
  const malformed = validateOneOf(
    input.malformedToolCall ?? 'error-message',
    ['error-message', 'end'],
    {
      parameter: 'options.malformedToolCall',
      functionName: FN,
    },
  );
  if (input.system !== undefined && typeof input.system !== 'string') {
    throw new InvalidArgumentError({
      parameter: 'options.system',
      functionName: FN,
      value: input.system,
      expected: 'a string',
    });
  }
  return async (environmentInput) => {
    const session = await setup(environmentInput);
    const tools = new Map<string, ToolDefinition>();
    for (const [index, tool] of (session?.tools ?? []).entries()) {
      if (tool === null || typeof tool !== 'object' || typeof tool.execute !== 'function') {
        throw new InvalidArgumentError({
          parameter: `setup() result.tools[${index}]`,
          functionName: FN,
          value: tool,
          expected: 'a ToolDefinition { name, description, inputSchema, execute }',
        });
      }
      compileInputSchema(tool as ToolDefinition);
      tools.set(tool.name, tool as ToolDefinition);
    }
    const episode: ToolEpisode = { input: environmentInput, turns: [], toolResults: [] };
    const finish = async () => {
      const reward = session.reward ? await session.reward(episode) : null;
      return { messages: [], done: true, ...(reward === null ? {} : { reward }) };
    };
    const environment: Environment = {
      reset: () => ({
        messages: [
          ...(input.system === undefined
            ? []
            : [{ role: 'system' as const, content: input.system }]),
          ...(session.messages ?? [{ role: 'user' as const, content: environmentInput.prompt }]),
        ],
        tools: [...tools.values()].map(({ name, description, inputSchema }) => ({
          name,
          description,
          inputSchema,
        })),
      }),
      async step(turn) {
        episode.turns.push(turn);
        if (turn.toolCalls.length === 0 && turn.malformedToolCalls.length === 0) return finish();
        const records: ToolResultRecord[] = [];
        const messages: ChatMessage[] = [];
        for (const bad of turn.malformedToolCalls) {
          records.push({ name: '', status: 'malformed', durationMs: 0 });
          messages.push({ role: 'tool', content: `Error: malformed tool call (${bad.error})` });
        }
        if (malformed === 'end' && turn.malformedToolCalls.length > 0) {
          episode.toolResults.push(...records);
          return { ...(await finish()), toolResults: records };
        }
        for (const [index, call] of turn.toolCalls.entries()) {
          if (index >= maxCalls) {
            records.push({ name: call.name, status: 'error', durationMs: 0 });
            messages.push({
              role: 'tool',
              content: `Error: at most ${maxCalls} tool calls per turn`,
            });
            continue;
          }
          const outcome = await runToolCall(tools, call, limits, environmentInput.trajectoryId);
          records.push({
            name: outcome.name,
            status: outcome.status,
            durationMs: outcome.durationMs,
          });
          messages.push({ role: 'tool', content: outcome.content });
        }
        episode.toolResults.push(...records);
        return { messages, done: false, toolResults: records };
      },
      close: () => session.close?.(),
    };
    return environment;
  };
}
