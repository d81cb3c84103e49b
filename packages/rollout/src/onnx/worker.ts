import { parentPort } from 'node:worker_threads';
import type { RowAction } from '../engine/generate-turns.js';
import { createRolloutTokenizer, type RolloutTokenizer } from '../tokenizer/rollout-tokenizer.js';
import { createDecoderEngine, type DecoderEngine } from './decoder-engine.js';
import {
  type ModelSource,
  serializeError,
  type WorkerRequest,
  type WorkerResponse,
} from './worker-protocol.js';

// Worker-thread entry: owns one ONNX session and generates the batches it is sent.
if (!parentPort) throw new Error('@rlvr/rollout worker must run in a worker thread');
const port = parentPort;

let decoder: DecoderEngine | undefined;
let tokenizer: RolloutTokenizer | undefined;
let queue: Promise<void> = Promise.resolve();
/** Multi-turn jobs waiting for the environments' answer, by job id. */
const waiting = new Map<number, (actions: RowAction[]) => void>();

const post = (message: WorkerResponse) => port.postMessage(message);
// onnxruntime-node only accepts bytes backed by a plain ArrayBuffer: copy shared bytes once.
const modelOf = (source: ModelSource) =>
  'bytes' in source ? new Uint8Array(source.bytes) : source.path;

async function handle(message: WorkerRequest): Promise<void> {
  switch (message.type) {
    case 'init': {
      try {
        tokenizer = message.tokenizer ? await createRolloutTokenizer(message.tokenizer) : undefined;
        decoder = await createDecoderEngine(
          message.engine,
          modelOf(message.model),
          message.session,
          message.model.weights,
        );
        post({ type: 'ready', vocabSize: decoder.vocabSize });
      } catch (error) {
        post({ type: 'init-error', error: serializeError(error) });
      }
      return;
    }
    case 'generate': {
      const started = performance.now();
      try {
        const flag = new Int32Array(message.abortFlag);
        const completions = await decoder!.generate(message.jobs, message.settings, {
          decode: tokenizer ? (ids) => tokenizer!.decode(ids) : undefined,
          shouldAbort: () => Atomics.load(flag, 0) !== 0,
          onToken: message.stream
            ? (event) => post({ type: 'token', jobId: message.jobId, event })
            : undefined,
        });
        post({
          type: 'done',
          jobId: message.jobId,
          completions,
          elapsedMs: performance.now() - started,
        });
      } catch (error) {
        post({ type: 'error', jobId: message.jobId, error: serializeError(error) });
      }
      return;
    }
    case 'turns': {
      const started = performance.now();
      try {
        const flag = new Int32Array(message.abortFlag);
        await decoder!.generateTurns(message.jobs, message.settings, {
          decode: tokenizer ? (ids) => tokenizer!.decode(ids) : undefined,
          shouldAbort: () => Atomics.load(flag, 0) !== 0,
          onPause: (rows) =>
            new Promise<RowAction[]>((resolve) => {
              waiting.set(message.jobId, resolve);
              post({ type: 'pause', jobId: message.jobId, rows });
            }),
        });
        post({
          type: 'done',
          jobId: message.jobId,
          completions: [],
          elapsedMs: performance.now() - started,
        });
      } catch (error) {
        post({ type: 'error', jobId: message.jobId, error: serializeError(error) });
      }
      return;
    }
    case 'resume':
      return;
    case 'update': {
      const started = performance.now();
      try {
        await decoder!.replaceSession(
          modelOf(message.model),
          message.session,
          message.model.weights,
        );
        post({ type: 'updated', jobId: message.jobId, elapsedMs: performance.now() - started });
      } catch (error) {
        post({ type: 'error', jobId: message.jobId, error: serializeError(error) });
      }
      return;
    }
    case 'weights': {
      const started = performance.now();
      try {
        decoder!.writeWeights(message.data);
        post({ type: 'updated', jobId: message.jobId, elapsedMs: performance.now() - started });
      } catch (error) {
        post({ type: 'error', jobId: message.jobId, error: serializeError(error) });
      }
      return;
    }
    case 'close': {
      await decoder?.release();
      decoder = undefined;
      port.close();
      return;
    }
  }
}

port.on('message', (message: WorkerRequest) => {
  if (message.type === 'resume') {
    const resolve = waiting.get(message.jobId);
    waiting.delete(message.jobId);
    resolve?.(message.actions);
    return;
  }
  queue = queue.then(() => handle(message));
});
