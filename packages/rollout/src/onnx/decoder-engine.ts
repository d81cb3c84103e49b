import {
  type GenerationSettings,
  generateBatch,
  type IndexedCompletion,
  type SequenceJob,
  type TokenEvent,
} from '../engine/generate-batch.js';
import { generateChunked } from '../engine/generate-chunked.js';
import { generateTurns, type TurnHooks, type TurnSettings } from '../engine/generate-turns.js';
import { loopStepper, optimumStepper } from '../engine/turn-steppers.js';
import { type BoundWeights, LoopDecoder } from '../loop/loop-decoder.js';
import { OnnxDecoder } from './onnx-decoder.js';
import type { SessionSettings } from './ort.js';

/**
 * Which decoding engine runs a graph: `loop` (the in-graph sampling loop built from a checkpoint,
 * `stepsPerRun` tokens per `session.run`) or `optimum` (any Optimum-style decoder, one token per
 * `session.run`, sampled in JavaScript).
 * @internal
 */
export type EngineKind = { type: 'loop'; stepsPerRun: number } | { type: 'optimum' };

/** Hooks of one generation call. @internal */
export type GenerateHooks = {
  decode?: (tokenIds: number[]) => string;
  shouldAbort?: () => boolean;
  /** Awaited between steps (lets the caller's event loop deliver an abort). */
  pause?: () => Promise<void>;
  onToken?: (event: TokenEvent) => void;
};

/** A decoder of either engine behind one interface. @internal */
export type DecoderEngine = {
  readonly vocabSize: number;
  generate(
    jobs: readonly SequenceJob[],
    settings: GenerationSettings,
    hooks: GenerateHooks,
  ): Promise<IndexedCompletion[]>;
  /** Multi-turn generation (see `generateTurns`). */
  generateTurns(
    jobs: readonly SequenceJob[],
    settings: TurnSettings,
    hooks: TurnHooks,
  ): Promise<void>;
  /** Opens a new graph (`weights`: the values of a loop graph built with weight inputs). */
  replaceSession(
    model: Uint8Array | string,
    settings: SessionSettings,
    weights?: BoundWeights,
  ): Promise<void>;
  /** Overwrites the weights in place (loop graphs built with weight inputs only). */
  writeWeights(data: Float32Array): void;
  release(): Promise<void>;
};

/**
 * Creates the decoder of `kind` for the graph `model` (`weights`: the values of a loop graph built
 * with weight inputs). @internal
 */
export async function createDecoderEngine(
  kind: EngineKind,
  model: Uint8Array | string,
  session: SessionSettings,
  weights?: BoundWeights,
): Promise<DecoderEngine> {
  if (kind.type === 'loop') {
    const decoder = await LoopDecoder.create(model, session, weights);
    return {
      vocabSize: decoder.vocabSize,
      generate: (jobs, settings, hooks) =>
        generateChunked(decoder, jobs, settings, kind.stepsPerRun, hooks),
      generateTurns: (jobs, settings, hooks) =>
        generateTurns(
          loopStepper(decoder, settings.sampling, kind.stepsPerRun),
          jobs,
          settings,
          hooks,
        ),
      replaceSession: (next, settings, nextWeights) =>
        decoder.replaceSession(next, settings, nextWeights),
      writeWeights: (data) => decoder.writeWeights(data),
      release: () => decoder.release(),
    };
  }
  const decoder = await OnnxDecoder.create(model, session);
  return {
    vocabSize: decoder.vocabSize,
    generate: (jobs, settings, hooks) => generateBatch(decoder, jobs, settings, hooks),
    generateTurns: (jobs, settings, hooks) =>
      generateTurns(optimumStepper(decoder, settings.sampling), jobs, settings, hooks),
    replaceSession: (next, settings, nextWeights) => {
      if (nextWeights) throw new Error('the optimum engine has its weights built into the graph');
      return decoder.replaceSession(next, settings);
    },
    writeWeights: () => {
      throw new Error('the optimum engine has its weights built into the graph');
    },
    release: () => decoder.release(),
  };
}
