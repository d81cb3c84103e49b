import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { validateOptions } from '../validation/options.js';

/**
 * One chat message as chat templates render it. `tool` messages carry a tool's result (Qwen /
 * Hermes templates wrap them in `<tool_response>`); `system` and `user` messages come from the
 * environment too.
 */
export type ChatMessage = { role: 'system' | 'user' | 'assistant' | 'tool'; content: string };

/** The roles of {@link ChatMessage}, for validation. */
export const CHAT_ROLES = ['system', 'user', 'assistant', 'tool'] as const;

/** A JSON Schema (draft 2020-12 or draft-07) as plain data: a tool's input shape. */
export type JsonSchema = { readonly [key: string]: unknown };

/**
 * What the model is told about a tool: plain data, rendered by the chat template's `tools`
 * variable in the OpenAI function shape (`{ type: 'function', function: { name, description,
 * parameters } }`).
 */
export type ToolSpec = {
  /** Name the model calls the tool by (`[A-Za-z0-9_-]{1,64}`). */
  name: string;
  /** What the tool does, for the model. */
  description: string;
  /** JSON Schema of the tool's `arguments` object. */
  inputSchema: JsonSchema;
};

/** What a tool's `execute` gets besides its input. */
export type ToolExecutionContext = {
  /** Aborted when the call passes its time limit or the trajectory is aborted. */
  signal: AbortSignal;
  /** Which trajectory the call belongs to (a tool may keep per-trajectory state, e.g. a workspace). */
  trajectoryId: string;
};

/**
 * A tool: its {@link ToolSpec} plus `execute`. The result is any JSON-serializable value (a string
 * is passed to the model as is, anything else as JSON). Limits are per call; a tool environment
 * turns a throw, a hang past `timeoutMs`, an output over `maxOutputBytes`, an unknown name or
 * input that fails `inputSchema` into a typed {@link ToolResultRecord} the model sees as an error
 * message, never a crashed run.
 */
export type ToolDefinition<Input = unknown> = ToolSpec & {
  execute(input: Input, context: ToolExecutionContext): unknown | Promise<unknown>;
  /** Wall-clock limit per call in milliseconds (the tool environment's default when omitted). */
  timeoutMs?: number;
  /** Largest result per call in bytes of UTF-8 (the tool environment's default when omitted). */
  maxOutputBytes?: number;
};

/** A tool call the model made: `<tool_call>{"name": …, "arguments": {…}}</tool_call>`. */
export type ToolCall = { name: string; arguments: unknown };

/** A tool-call block that could not be parsed (not JSON, no `name`, no closing tag). */
export type MalformedToolCall = { text: string; error: string };

/**
 * How a tool call ended. `ok`: it returned; `error`: it threw; `timeout`: it ran past its limit
 * (its late result, if any, is dropped); `output-limit`: its result was larger than allowed;
 * `unknown-tool`: no tool has that name; `invalid-input`: its arguments fail the tool's schema;
 * `malformed`: the call itself could not be parsed.
 */
export type ToolResultStatus =
  | 'ok'
  | 'error'
  | 'timeout'
  | 'output-limit'
  | 'unknown-tool'
  | 'invalid-input'
  | 'malformed';

/** Every {@link ToolResultStatus}, for validation and metric names (`tools/status/<status>`). */
export const TOOL_RESULT_STATUSES = [
  'ok',
  'error',
  'timeout',
  'output-limit',
  'unknown-tool',
  'invalid-input',
  'malformed',
] as const satisfies readonly ToolResultStatus[];

/** The record of one tool call (for metrics and transcripts). */
export type ToolResultRecord = { name: string; status: ToolResultStatus; durationMs: number };

/**
 * Why an assistant turn ended. `tool-call`: it closed a tool call (the template's tool-call end,
 * e.g. `</tool_call>`); `stop`: the model ended its turn (EOS or a stop string); `length`: the
 * turn hit its token limit or the trajectory's; `abort`: cancelled.
 */
export type TurnFinishReason = 'tool-call' | 'stop' | 'length' | 'abort';

/** One assistant turn, as {@link Environment.step} receives it. */
export type AssistantTurn = {
  /** 0-based index of the turn in its trajectory. */
  index: number;
  /** The turn's decoded text (special tokens skipped), tool-call blocks included. */
  text: string;
  /** The tool calls parsed from `text`, in order. */
  toolCalls: ToolCall[];
  /** Tool-call blocks that could not be parsed. */
  malformedToolCalls: MalformedToolCall[];
  finishReason: TurnFinishReason;
};

/** What an environment is reset with: one prompt of the dataset and one sample of its group. */
export type EnvironmentInput = {
  prompt: string;
  answer?: unknown;
  /** The dataset record's other fields. */
  metadata?: Readonly<Record<string, unknown>>;
  promptIndex: number;
  sampleIndex: number;
  /** Unique per trajectory of a call (`<seed>-<promptIndex>-<sampleIndex>`). */
  trajectoryId: string;
};

/** What {@link Environment.reset} returns: the first messages and the tools the model may call. */
export type EnvironmentReset = {
  /** At least one message; the last is usually the user's. Rendered with the chat template. */
  messages: ChatMessage[];
  /** Tools rendered into the template's `tools` variable (none: no tool section). */
  tools?: ToolSpec[];
};

/** What {@link Environment.step} returns after an assistant turn. */
export type EnvironmentStep = {
  /** Messages appended after the turn (tool results, a new user message); empty when `done`. */
  messages: ChatMessage[];
  /** True: the trajectory ends after this turn (no `messages` are appended). */
  done: boolean;
  /** A reward for the turn (the trajectory's environment reward is the sum of the turns'). */
  reward?: number;
  /** The tool calls this step ran (for metrics: `tools/status/*`). */
  toolResults?: ToolResultRecord[];
};

/**
 * One trajectory's world: created per trajectory by an {@link EnvironmentFactory}, reset with the
 * prompt, then stepped with every assistant turn until it says `done` or a limit ends the
 * trajectory (see {@link TrajectoryRequest}). Methods may be async. A sampler calls `close()`
 * exactly once per environment it created, whatever happened (done, truncated, aborted, an error).
 *
 * @example
 * ```ts
 * const environment: Environment = {
 *   reset: ({ prompt }) => ({ messages: [{ role: 'user', content: prompt }] }),
 *   step: (turn) => ({ messages: [], done: true, reward: turn.text.includes('42') ? 1 : 0 }),
 * };
 * ```
 */
export interface Environment {
  reset(input: EnvironmentInput): EnvironmentReset | Promise<EnvironmentReset>;
  step(turn: AssistantTurn): EnvironmentStep | Promise<EnvironmentStep>;
  /** Frees what the environment holds (a sandbox workspace); called once. */
  close?(): void | Promise<void>;
}

/** Creates the environment of one trajectory (called once per trajectory). */
export type EnvironmentFactory = (input: EnvironmentInput) => Environment | Promise<Environment>;

function checkMessages(value: unknown, parameter: string, functionName: string): ChatMessage[] {
  if (!Array.isArray(value)) {
    throw new InvalidArgumentError({
      parameter,
      functionName,
      value,
      expected: 'an array of { role, content } messages',
    });
  }
  value.forEach((message, index) => {
    const ok =
      message !== null &&
      typeof message === 'object' &&
      (CHAT_ROLES as readonly unknown[]).includes(message.role) &&
      typeof message.content === 'string';
    if (!ok) {
      throw new InvalidArgumentError({
        parameter: `${parameter}[${index}]`,
        functionName,
        value: message,
        expected: `a message { role: ${CHAT_ROLES.map((role) => `'${role}'`).join(' | ')}, content: string }`,
      });
    }
  });
  return value as ChatMessage[];
}

function checkToolSpecs(value: unknown, parameter: string, functionName: string): ToolSpec[] {
  if (!Array.isArray(value)) {
    throw new InvalidArgumentError({
      parameter,
      functionName,
      value,
      expected: 'an array of { name, description, inputSchema }',
    });
  }
  value.forEach((tool, index) => {
    const where = `${parameter}[${index}]`;
    if (tool === null || typeof tool !== 'object') {
      throw new InvalidArgumentError({
        parameter: where,
        functionName,
        value: tool,
        expected: 'a tool { name, description, inputSchema }',
      });
    }
    if (typeof tool.name !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(tool.name)) {
      throw new InvalidArgumentError({
        parameter: `${where}.name`,
        functionName,
        value: tool.name,
        expected: 'a name of 1-64 letters, digits, _ or -',
      });
    }
    if (typeof tool.description !== 'string') {
      throw new InvalidArgumentError({
        parameter: `${where}.description`,
        functionName,
        value: tool.description,
        expected: 'a string',
      });
    }
    if (tool.inputSchema === null || typeof tool.inputSchema !== 'object') {
      throw new InvalidArgumentError({
        parameter: `${where}.inputSchema`,
        functionName,
        value: tool.inputSchema,
        expected: 'a JSON Schema object',
      });
    }
  });
  return value as ToolSpec[];
}

/**
 * Checks what {@link Environment.reset} returned.
 * @throws {InvalidArgumentError} naming `reset() result.messages[i]`, `.tools[i].name`, …
 */
export function validateEnvironmentReset(value: unknown, functionName: string): EnvironmentReset {
  const parameter = 'environment.reset() result';
  const reset = validateOptions<EnvironmentReset>(value ?? null, {
    parameter,
    functionName,
    known: ['messages', 'tools'],
  });
  const messages = checkMessages(reset.messages, `${parameter}.messages`, functionName);
  if (messages.length === 0) {
    throw new InvalidArgumentError({
      parameter: `${parameter}.messages`,
      functionName,
      value: messages,
      expected: 'at least one message',
    });
  }
  if (reset.tools === undefined) return { messages };
  return { messages, tools: checkToolSpecs(reset.tools, `${parameter}.tools`, functionName) };
}

/**
 * Checks what {@link Environment.step} returned.
 * @throws {InvalidArgumentError} naming `step() result.done`, `.reward`, `.messages[i]`, …
 */
export function validateEnvironmentStep(value: unknown, functionName: string): EnvironmentStep {
  const parameter = 'environment.step() result';
  const step = validateOptions<EnvironmentStep>(value ?? null, {
    parameter,
    functionName,
    known: ['messages', 'done', 'reward', 'toolResults'],
  });
  if (typeof step.done !== 'boolean') {
    throw new InvalidArgumentError({
      parameter: `${parameter}.done`,
      functionName,
      value: step.done,
      expected: 'a boolean',
    });
  }
  const messages = checkMessages(step.messages ?? [], `${parameter}.messages`, functionName);
  if (!step.done && messages.length === 0) {
    throw new InvalidArgumentError({
      parameter: `${parameter}.messages`,
      functionName,
      value: messages,
      expected: 'at least one message when done is false (the model needs something to answer)',
    });
  }
  if (
    step.reward !== undefined &&
    (typeof step.reward !== 'number' || !Number.isFinite(step.reward))
  ) {
    throw new InvalidArgumentError({
      parameter: `${parameter}.reward`,
      functionName,
      value: step.reward,
      expected: 'a finite number or undefined',
    });
  }
  const toolResults = step.toolResults ?? [];
  if (
    !Array.isArray(toolResults) ||
    !toolResults.every(
      (record) =>
        record !== null &&
        typeof record === 'object' &&
        typeof record.name === 'string' &&
        (TOOL_RESULT_STATUSES as readonly unknown[]).includes(record.status) &&
        typeof record.durationMs === 'number',
    )
  ) {
    throw new InvalidArgumentError({
      parameter: `${parameter}.toolResults`,
      functionName,
      value: step.toolResults,
      expected: `an array of { name, status: ${TOOL_RESULT_STATUSES.join(' | ')}, durationMs }`,
    });
  }
  return {
    messages,
    done: step.done,
    ...(step.reward === undefined ? {} : { reward: step.reward }),
    toolResults,
  };
}

/**
 * Checks that `value` is an {@link Environment} (an object with `reset` and `step` functions).
 * @throws {InvalidArgumentError}
 */
export function assertEnvironment(
  value: unknown,
  parameter: string,
  functionName: string,
): asserts value is Environment {
  if (
    value === null ||
    typeof value !== 'object' ||
    typeof (value as Environment).reset !== 'function' ||
    typeof (value as Environment).step !== 'function'
  ) {
    throw new InvalidArgumentError({
      parameter,
      functionName,
      value,
      expected: 'an Environment (an object with reset() and step() methods)',
    });
  }
}
