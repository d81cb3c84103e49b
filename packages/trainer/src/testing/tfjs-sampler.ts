import {
  type Completion,
  createRng,
  type SampleRequest,
  type Sampler,
  type WeightSnapshot,
} from '@rlvr/core';
import type { ModelConfig } from '@rlvr/model';
import { createLlamaModel, type LlamaModel } from '../model/llama-model.js';

/** Text ↔ ids for {@link TfjsSampler}. */
export type SamplerTokenizer = {
  encode(text: string): number[];
  decode(ids: readonly number[]): string;
  eosTokenId: number;
};

/**
 * A real (test-only) `Sampler` that samples from its own copy of a tfjs {@link LlamaModel}:
 * temperature sampling with core's seeded `createRng`, full re-forward per token (no KV cache;
 * fine for tiny models), behaviour logprobs of the tempered distribution and `modelLogprobs` of the
 * raw one, EOS ends a completion (and is part of its token ids). `updateWeights` rebuilds its
 * model from the snapshot, so the trainer's weight push is what moves it.
 */
export class TfjsSampler implements Sampler {
  readonly specificationVersion = 'v1' as const;
  readonly modelId = 'tfjs-test-sampler';
  /** Steps of the snapshots received. */
  readonly updates: number[] = [];
  private model: LlamaModel;
  private readonly config: ModelConfig;
  private readonly tokenizer: SamplerTokenizer;

  private constructor(model: LlamaModel, tokenizer: SamplerTokenizer) {
    this.model = model;
    this.config = model.config;
    this.tokenizer = tokenizer;
  }

  /** A sampler holding a copy of `model`'s current weights. */
  static async fromModel(model: LlamaModel, tokenizer: SamplerTokenizer): Promise<TfjsSampler> {
    return new TfjsSampler(await createLlamaModel(model.toCheckpoint()), tokenizer);
  }

  async sample(request: SampleRequest): Promise<Completion[][]> {
    const rng = createRng(request.seed ?? 0);
    const temperature = request.temperature ?? 1;
    const vocab = this.config.vocab_size;
    type Row = {
      prompt: number[];
      tokens: number[];
      logprobs: number[];
      modelLogprobs: number[];
      done: Completion['finishReason'] | undefined;
    };
    const groups: Row[][] = request.prompts.map((prompt) => {
      const ids = typeof prompt === 'string' ? this.tokenizer.encode(prompt) : [...prompt];
      return Array.from({ length: request.n }, () => ({
        prompt: ids,
        tokens: [],
        logprobs: [],
        modelLogprobs: [],
        done: undefined,
      }));
    });
    const rows = groups.flat();
    for (let position = 0; position < request.maxNewTokens; position++) {
      const active = rows.filter((row) => row.done === undefined);
      if (active.length === 0) break;
      const sequences = active.map((row) => [...row.prompt, ...row.tokens]);
      const width = Math.max(...sequences.map((s) => s.length));
      const logits = this.model.logits({
        inputIds: sequences.map((s) => [...s, ...new Array(width - s.length).fill(0)]),
        attentionMask: sequences.map((s) =>
          s.map(() => 1).concat(new Array(width - s.length).fill(0)),
        ),
      });
      active.forEach((row, index) => {
        const last = logits[index]![sequences[index]!.length - 1]!;
        const raw = logSoftmax(last);
        let token: number;
        let logprob: number;
        if (temperature === 0) {
          token = raw.indexOf(Math.max(...raw));
          logprob = 0;
        } else {
          const scaled = logSoftmax(Float64Array.from(last, (v) => v / temperature));
          token = rng.categorical(scaled.map((v) => Math.exp(v)));
          logprob = scaled[token]!;
        }
        if (token >= vocab) throw new Error('sampled token outside the vocabulary');
        row.tokens.push(token);
        row.logprobs.push(logprob);
        row.modelLogprobs.push(raw[token]!);
        if (token === this.tokenizer.eosTokenId) row.done = 'stop';
        else if (row.tokens.length >= request.maxNewTokens) row.done = 'length';
      });
    }
    return groups.map((group) =>
      group.map((row) => {
        const body = row.done === 'stop' ? row.tokens.slice(0, -1) : row.tokens;
        return {
          text: this.tokenizer.decode(body),
          tokenIds: row.tokens,
          logprobs: row.logprobs,
          ...(request.returnModelLogprobs ? { modelLogprobs: row.modelLogprobs } : {}),
          promptTokenIds: row.prompt,
          finishReason: row.done ?? 'length',
        };
      }),
    );
  }

  async updateWeights(snapshot: WeightSnapshot): Promise<void> {
    const next = await createLlamaModel({ config: this.config, tensors: snapshot.tensors });
    this.model.dispose();
    this.model = next;
    this.updates.push(snapshot.step);
  }

  async close(): Promise<void> {
    this.model.dispose();
  }
}

function logSoftmax(values: ArrayLike<number>): number[] {
  let max = -Infinity;
  for (let i = 0; i < values.length; i++) max = Math.max(max, values[i]!);
  let sum = 0;
  for (let i = 0; i < values.length; i++) sum += Math.exp(values[i]! - max);
  const log = max + Math.log(sum);
  return Array.from(values, (v) => v - log);
}
