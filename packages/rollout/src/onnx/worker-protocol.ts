import type {
  GenerationSettings,
  IndexedCompletion,
  SequenceJob,
  TokenEvent,
} from '../engine/generate-batch.js';
import type { PausedRow, RowAction, TurnSettings } from '../engine/generate-turns.js';
import type { BoundWeights } from '../loop/loop-decoder.js';
import type { TokenizerFiles } from '../tokenizer/rollout-tokenizer.js';
import type { EngineKind } from './decoder-engine.js';
import type { SessionSettings } from './ort.js';

/**
 * Where a worker gets its graph: bytes (shared between workers) or a file path, and for a loop
 * graph with weight inputs the weights (a SharedArrayBuffer view, copied once by each worker).
 * @internal
 */
export type ModelSource = ({ bytes: Uint8Array } | { path: string }) & { weights?: BoundWeights };

/** Messages from the sampler to a worker. @internal */
export type WorkerRequest =
  | {
      type: 'init';
      engine: EngineKind;
      model: ModelSource;
      session: SessionSettings;
      tokenizer?: TokenizerFiles;
    }
  | {
      type: 'generate';
      jobId: number;
      jobs: SequenceJob[];
      settings: GenerationSettings;
      /** Int32 flag: set to 1 by the sampler to abort. */
      abortFlag: SharedArrayBuffer;
      stream: boolean;
    }
  | {
      type: 'turns';
      jobId: number;
      jobs: SequenceJob[];
      settings: TurnSettings;
      abortFlag: SharedArrayBuffer;
    }
  /** The environments' answer to a `pause` (handled as soon as it arrives, not queued). */
  | { type: 'resume'; jobId: number; actions: RowAction[] }
  | { type: 'update'; jobId: number; model: ModelSource; session: SessionSettings }
  /** Copy new weights (a SharedArrayBuffer view) into the session's weight inputs. */
  | { type: 'weights'; jobId: number; data: Float32Array }
  | { type: 'close' };

/** A serialized error (typed errors keep their code). @internal */
export type WorkerError = { name: string; message: string; code?: string; stack?: string };

/** Messages from a worker to the sampler. @internal */
export type WorkerResponse =
  | { type: 'ready'; vocabSize: number }
  | { type: 'init-error'; error: WorkerError }
  | { type: 'token'; jobId: number; event: TokenEvent }
  | { type: 'done'; jobId: number; completions: IndexedCompletion[]; elapsedMs: number }
  | { type: 'updated'; jobId: number; elapsedMs: number }
  /** Every row of a `turns` job ended its turn: step the environments, answer with `resume`. */
  | { type: 'pause'; jobId: number; rows: PausedRow[] }
  | { type: 'error'; jobId: number; error: WorkerError };

/** Serializes an error for postMessage. @internal */
export function serializeError(error: unknown): WorkerError {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return {
      name: error.name,
      message: error.message,
      code: typeof code === 'string' ? code : undefined,
      stack: error.stack,
    };
  }
  return { name: 'Error', message: String(error) };
}
