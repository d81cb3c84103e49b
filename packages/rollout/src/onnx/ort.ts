import { ErrorCode, InvalidArgumentError, RlvrError } from '@rlvr/core';
import type * as Ort from 'onnxruntime-node';

/** Execution providers this package knows how to request from onnxruntime-node. */
export const EXECUTION_PROVIDERS = ['cpu', 'cuda', 'webgpu', 'tensorrt', 'dml', 'coreml'] as const;

/** An onnxruntime execution provider name. `cpu` is always available; others depend on the install. */
export type ExecutionProvider = (typeof EXECUTION_PROVIDERS)[number];

/** How an ONNX Runtime session is created (the plain-data part, sent to worker threads). */
export type SessionSettings = {
  /** Execution providers in order of preference; `cpu` is appended as fallback for other ops. */
  executionProviders: ExecutionProvider[];
  /** Intra-op threads of the session. */
  threads: number;
  /** Let ORT threads spin while waiting (faster when the machine is idle, worse when shared). */
  allowSpinning: boolean;
};

let ortPromise: Promise<typeof Ort> | undefined;

/**
 * Loads onnxruntime-node lazily (importing this package never loads the native binding).
 * @throws {RlvrError} `UNAVAILABLE` when onnxruntime-node is not installed.
 */
export function loadOrt(): Promise<typeof Ort> {
  ortPromise ??= import('onnxruntime-node').then(
    (module) => ((module as { default?: typeof Ort }).default ?? module) as typeof Ort,
    (error: unknown) => {
      ortPromise = undefined;
      throw new RlvrError(
        ErrorCode.UNAVAILABLE,
        'onnxruntime-node could not be loaded: install it next to @rlvr/rollout (npm i onnxruntime-node)',
        { cause: error },
      );
    },
  );
  return ortPromise;
}

/**
 * Creates an inference session from ONNX bytes or a file path.
 * @throws {RlvrError} `UNAVAILABLE` when a requested execution provider is not available (the ORT
 * error is the `cause`); `MODEL_LOAD_FAILED` when ORT cannot load the graph.
 */
export async function createSession(
  model: Uint8Array | string,
  settings: SessionSettings,
): Promise<Ort.InferenceSession> {
  const ort = await loadOrt();
  const providers = settings.executionProviders.filter((provider) => provider !== 'cpu');
  for (const provider of providers) {
    const known = ort.listSupportedBackends?.().find((backend) => backend.name === provider);
    if (provider === 'webgpu' && known === undefined) {
      throw unavailable(provider, new Error('not listed by onnxruntime-node'));
    }
  }
  const options: Ort.InferenceSession.SessionOptions = {
    executionProviders: [...providers, 'cpu'],
    intraOpNumThreads: settings.threads,
    interOpNumThreads: 1,
    graphOptimizationLevel: 'all',
    executionMode: 'sequential',
    extra: { session: { intra_op: { allow_spinning: settings.allowSpinning ? '1' : '0' } } },
  };
  try {
    return typeof model === 'string'
      ? await ort.InferenceSession.create(model, options)
      : await ort.InferenceSession.create(model, options);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const provider = providers.find((name) => message.toLowerCase().includes(name));
    if (provider !== undefined || (providers.length > 0 && /provider|EP|\.so/i.test(message))) {
      throw unavailable(provider ?? providers[0]!, error);
    }
    throw new RlvrError(
      ErrorCode.MODEL_LOAD_FAILED,
      `onnxruntime could not create a session for ${typeof model === 'string' ? model : 'the in-memory model'}: ${message}`,
      { cause: error },
    );
  }
}

function unavailable(provider: string, cause: unknown): RlvrError {
  const hint =
    provider === 'cuda'
      ? " onnxruntime-node ships CPU binaries only; fetch the CUDA 12 provider with `ONNXRUNTIME_NODE_INSTALL=cuda12 node node_modules/onnxruntime-node/script/install.js` (needs CUDA 12 and cuDNN 9 on the machine), or allow onnxruntime-node's install script with that variable set."
      : '';
  return new RlvrError(
    ErrorCode.UNAVAILABLE,
    `execution provider '${provider}' is not available in this onnxruntime-node installation.${hint}`,
    { cause },
  );
}

/**
 * Checks `executionProviders` (a non-empty list of known names).
 * @throws {InvalidArgumentError} `INVALID_ARGUMENT` naming the parameter.
 */
export function validateExecutionProviders(
  value: unknown,
  functionName: string,
): ExecutionProvider[] {
  if (value === undefined) return ['cpu'];
  const list = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(list) || list.length === 0) {
    throw new InvalidArgumentError({
      parameter: 'options.executionProviders',
      functionName,
      value,
      expected: `a non-empty array of ${EXECUTION_PROVIDERS.map((name) => `'${name}'`).join(', ')}`,
    });
  }
  list.forEach((provider, index) => {
    if (!(EXECUTION_PROVIDERS as readonly unknown[]).includes(provider)) {
      throw new InvalidArgumentError({
        parameter: `options.executionProviders[${index}]`,
        functionName,
        value: provider,
        expected: `one of ${EXECUTION_PROVIDERS.map((name) => `'${name}'`).join(', ')}`,
      });
    }
  });
  return list as ExecutionProvider[];
}

/** A `MODEL_LOAD_FAILED` error for a graph ORT loaded but that does not fit. @internal */
export function graphError(message: string, cause?: unknown): RlvrError {
  return new RlvrError(ErrorCode.MODEL_LOAD_FAILED, message, { cause });
}

/**
 * Creates a session and wraps it (e.g. in a decoder), releasing the session when wrapping throws
 * (a graph whose layout does not fit). @internal
 */
export async function openWrapped<T>(
  model: Uint8Array | string,
  settings: SessionSettings,
  wrap: (ort: typeof Ort, session: Ort.InferenceSession) => T,
): Promise<T> {
  const ort = await loadOrt();
  const session = await createSession(model, settings);
  try {
    return wrap(ort, session);
  } catch (error) {
    await session.release();
    throw error;
  }
}

/**
 * Creates a session for a new graph (after a weight update) and checks that its layout equals the
 * current one, releasing it otherwise. @internal
 */
export async function createMatchingSession<L>(
  model: Uint8Array | string,
  settings: SessionSettings,
  readLayout: (session: Ort.InferenceSession) => L,
  expected: L,
  what: string,
): Promise<Ort.InferenceSession> {
  const session = await createSession(model, settings);
  const layout = readLayout(session);
  if (JSON.stringify(layout) !== JSON.stringify(expected)) {
    await session.release();
    throw graphError(
      `the new ${what} has a different layout: ${JSON.stringify(layout)} vs ${JSON.stringify(expected)}`,
    );
  }
  return session;
}
