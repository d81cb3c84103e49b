/**
 * A model on the native engine: its engine (graphs and sessions) and its {@link TrainStore}
 * (weights in WebAssembly.Memory shards; the gradient and moment regions stay untouched — no
 * resident memory — until the model is trained). What `LlamaModel` holds when its engine is
 * `native`. @internal
 */
import { availableParallelism } from 'node:os';
import type { ModelConfig } from '@rlvr/model';
import type { PreparedInput } from '../batch/prepared-input.js';
import type { TokenBatch } from '../batch/token-batch.js';
import { LoraAdapters } from './lora-adapters.js';
import { type EngineLora, type Keep, NativeEngine } from './native-engine.js';
import { loadOrtRuntime, SessionCache } from './ort-runtime.js';
import { storeSlots } from './param-store.js';
import { TrainStore } from './train-store.js';

/** The native parts of a model. @internal */
export type NativeParts = {
  engine: NativeEngine;
  store: TrainStore;
  sessions: SessionCache;
  /** Whether disposing the model frees the sessions (a clone shares its original's). */
  ownsSessions: boolean;
  /**
   * How the backward gets its activations: `cache` (kept from the forward) or `recompute`
   * (each layer's forward again from its input: checkpointing). Set by the trainer.
   */
  activations: Keep;
  /** LoRA adapters attached by a trainer (`lora` option): they train, the base is frozen. */
  lora?: LoraAdapters;
};

/** Threads of the native engine's sessions (all cores unless set). */
let sessionThreads = 0;

/** Sets the threads of native models created from now on (0: all cores). @internal */
export function setNativeThreads(threads: number): void {
  sessionThreads = threads;
}

/**
 * The native parts of a model of `config` holding `tensors` (Hugging Face names and shapes,
 * already validated). @throws when onnxruntime-node cannot be loaded. @internal
 */
export async function createNativeParts(
  config: ModelConfig,
  tensors: ReadonlyMap<string, Float32Array>,
): Promise<NativeParts> {
  const ort = await loadOrtRuntime();
  const threads = sessionThreads > 0 ? sessionThreads : availableParallelism();
  // no spinning: between runs (and while JS and the wasm kernels work) spinning pool threads took
  // the main thread's core — measured 1.2–1.6× slower steps from 300k to 40M parameters
  const sessions = new SessionCache(ort, { threads, spinning: false });
  const engine = new NativeEngine(config, sessions);
  const store = new TrainStore(storeSlots(config));
  store.weights.load(tensors);
  return { engine, store, sessions, ownsSessions: true, activations: 'cache' };
}

/** A copy of `parts` (same sessions, a new store holding the same weights): a frozen reference. */
export function cloneNativeParts(parts: NativeParts): NativeParts {
  const store = new TrainStore(parts.store.slots);
  for (const slot of parts.store.slots) {
    store.weights.get(slot.key).set(parts.store.weights.get(slot.key));
  }
  return {
    engine: parts.engine,
    store,
    sessions: parts.sessions,
    ownsSessions: false,
    activations: parts.activations,
  };
}

/**
 * The adapters of `parts` for an evaluation forward (no dropout), or undefined without LoRA.
 * @internal
 */
export function evalLora(parts: NativeParts): EngineLora | undefined {
  const { lora } = parts;
  if (!lora) return undefined;
  return {
    adapters: lora,
    weights: lora.store.weights,
    maskSeed: 0,
    layer: { ...lora.layer, dropout: false },
  };
}

/** The logits `[B·T·V]` of every position of `input` (temperature 1; adapters on). @internal */
export function nativeLogits(parts: NativeParts, input: PreparedInput): Float32Array {
  const n = input.batchSize * input.seqLen;
  const batch: TokenBatch = { input, targets: new Int32Array(n), slots: [] };
  const positions = Int32Array.from({ length: n }, (_, index) => index);
  const weights = parts.store.weights;
  const state = parts.engine.forward(batch, weights, 'none', positions, evalLora(parts));
  return parts.engine.logits(state, weights);
}

/**
 * The same model without its adapters' effect (shares the weights and sessions): LoRA's
 * reference. It runs the adapters' forward graph with zero adapters (`W + s·0·0 = W` exactly), so
 * it needs no sessions (and no working memory) of its own.
 */
export function baseParts(parts: NativeParts): NativeParts {
  const { lora } = parts;
  if (!lora) return { ...parts, ownsSessions: false };
  const zero = new LoraAdapters(lora.spec, lora.layers, { ...lora.settings, dropout: 0 }, false);
  return { ...parts, lora: zero, ownsSessions: false };
}
