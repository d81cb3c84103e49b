import type { ToolCall, ToolDefinition, ToolResultStatus } from '@rlvr/core';
import { Ajv, type ValidateFunction } from 'ajv';
import { ToolFault } from './tool-fault.js';

/** Limits of one tool call (a tool's own `timeoutMs` / `maxOutputBytes` win). */
export type ToolCallLimits = { timeoutMs: number; maxOutputBytes: number };

/** What one tool call produced: the text the model sees and its status. */
export type ToolCallOutcome = {
  name: string;
  status: ToolResultStatus;
  /** The result (a string as is, anything else as JSON), or the error text the model sees. */
  content: string;
  durationMs: number;
};

const ajv = new Ajv({ allErrors: true, strict: false });
const compiled = new WeakMap<object, ValidateFunction>();

function validatorOf(tool: ToolDefinition): ValidateFunction {
  let validate = compiled.get(tool.inputSchema);
  if (!validate) {
    validate = ajv.compile(tool.inputSchema);
    compiled.set(tool.inputSchema, validate);
  }
  return validate;
}

/** Compiles a tool's input schema once (a schema Ajv rejects is a bad tool, found at setup). @internal */
export function compileInputSchema(tool: ToolDefinition): void {
  validatorOf(tool);
}

function serialize(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === undefined) return '';
  return JSON.stringify(value) ?? String(value);
}

/**
 * Runs one tool call under its limits and never throws: an unknown name, arguments that fail the
 * schema, a throw (or rejection), a run past `timeoutMs` (its signal is aborted and a late result
 * is dropped) and a result over `maxOutputBytes` each come back as a typed outcome whose `content`
 * tells the model what happened.
 * @internal
 */
export async function runToolCall(
  tools: ReadonlyMap<string, ToolDefinition>,
  call: ToolCall,
  limits: ToolCallLimits,
  trajectoryId: string,
  outer?: AbortSignal,
): Promise<ToolCallOutcome> {
  const started = performance.now();
  const done = (status: ToolResultStatus, content: string): ToolCallOutcome => ({
    name: call.name,
    status,
    content,
    durationMs: performance.now() - started,
  });
  const tool = tools.get(call.name);
  if (!tool) {
    const known = [...tools.keys()].join(', ');
    return done('unknown-tool', `Error: unknown tool '${call.name}' (tools: ${known || 'none'})`);
  }
  const validate = validatorOf(tool);
  if (!validate(call.arguments)) {
    const errors = (validate.errors ?? [])
      .map((error) => `${error.instancePath || '(arguments)'} ${error.message ?? 'is invalid'}`)
      .join('; ');
    return done('invalid-input', `Error: invalid arguments for '${tool.name}': ${errors}`);
  }
  const timeoutMs = tool.timeoutMs ?? limits.timeoutMs;
  const maxOutputBytes = tool.maxOutputBytes ?? limits.maxOutputBytes;
  const controller = new AbortController();
  const onOuter = () => controller.abort(outer?.reason);
  outer?.addEventListener('abort', onOuter, { once: true });
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), timeoutMs);
  });
  try {
    const running = Promise.resolve().then(() =>
      tool.execute(call.arguments, { signal: controller.signal, trajectoryId }),
    );
    running.catch(() => {}); // a late rejection after a timeout is dropped, not unhandled
    const settled = await Promise.race([
      running.then(
        (value) => ({ value }),
        (error: unknown) => ({ error }),
      ),
      timeout,
    ]);
    if (settled === 'timeout') {
      controller.abort(new Error(`tool '${tool.name}' ran past ${timeoutMs} ms`));
      return done('timeout', `Error: tool '${tool.name}' did not finish within ${timeoutMs} ms`);
    }
    if ('error' in settled) {
      const message =
        settled.error instanceof Error ? settled.error.message : String(settled.error);
      if (ToolFault.isInstance(settled.error)) {
        return done(settled.error.status, `Error: tool '${tool.name}': ${message.slice(0, 2000)}`);
      }
      return done('error', `Error: tool '${tool.name}' failed: ${message.slice(0, 2000)}`);
    }
    let content: string;
    try {
      content = serialize(settled.value);
    } catch (error) {
      return done(
        'error',
        `Error: tool '${tool.name}' returned a value that is not JSON (${String(error)})`,
      );
    }
    const bytes = Buffer.byteLength(content, 'utf8');
    if (bytes > maxOutputBytes) {
      return done(
        'output-limit',
        `Error: tool '${tool.name}' returned ${bytes} bytes, more than the limit of ${maxOutputBytes}`,
      );
    }
    return done('ok', content);
  } finally {
    clearTimeout(timer);
    outer?.removeEventListener('abort', onOuter);
  }
}
