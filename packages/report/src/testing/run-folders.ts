import '@tensorflow/tfjs-core/dist/register_all_gradients';
import { join } from 'node:path';
import { distillStudent, filterTraces, generateTraces, readTraces } from '@rlvr/distill';
import {
  buildCharTokenizer,
  type Checkpoint,
  createRandomCheckpoint,
  createTokenizer,
  parseLlamaConfig,
} from '@rlvr/model';
import { createOnnxSampler } from '@rlvr/rollout';
import {
  createGrpoTrainer,
  createLlamaModel,
  createPolicyTrainer,
  selectBackend,
} from '@rlvr/trainer';

/**
 * Real run folders for the report's tests (test-only): a tiny random-weight Llama with a character
 * tokenizer, GRPO through GrpoTrainer with an ONNX sampler, and distillation through generateTraces
 * and distillStudent. Prompts are `372>` (the answer is the largest digit): the `>` tests escaping.
 */
const CHARACTERS = '0123456789><';

function tinyCheckpoint(seed: number): Checkpoint {
  const config = parseLlamaConfig({
    hidden_size: 16,
    num_hidden_layers: 1,
    num_attention_heads: 2,
    num_key_value_heads: 1,
    intermediate_size: 32,
    vocab_size: 4 + CHARACTERS.length,
    max_position_embeddings: 16,
    tie_word_embeddings: true,
  });
  return {
    ...createRandomCheckpoint(config, { seed, std: 0.1 }),
    tokenizer: buildCharTokenizer({ characters: CHARACTERS }),
  };
}

const prompts = Array.from({ length: 8 }, (_, index) => {
  const digits = String((index * 137 + 41) % 1000).padStart(3, '0');
  return {
    id: `q${index}`,
    prompt: `${digits}>`,
    answer: String(Math.max(...[...digits].map(Number))),
  };
});

const correct = ({ completion, answer }: { completion: string; answer?: unknown }) =>
  completion.trim().startsWith(String(answer)) ? 1 : 0;
const short = ({ completion }: { completion: string }) => (completion.length <= 2 ? 1 : 0);

/**
 * A GrpoTrainer over the tiny model writing into `outputDir` (`maxSteps` steps, completions logged
 * every step, a checkpoint at the end); `close()` releases the model and the sampler.
 */
export async function tinyGrpoTrainer(outputDir: string, maxSteps: number) {
  await selectBackend();
  const checkpoint = tinyCheckpoint(1);
  const model = await createLlamaModel(checkpoint);
  const sampler = await createOnnxSampler({ checkpoint, workers: 0 });
  const grpo = await createGrpoTrainer({
    model,
    sampler,
    dataset: prompts,
    rewards: [
      { name: 'correct', fn: correct },
      { name: 'short', fn: short, weight: 0.1 },
    ],
    config: {
      maxSteps,
      promptsPerStep: 2,
      groupSize: 4,
      maxNewTokens: 3,
      seed: 3,
      schedule: { learningRate: 1e-2 },
      logCompletionsEvery: 1,
      saveEvery: maxSteps,
      outputDir,
      quiet: true,
    },
  });
  return {
    grpo,
    async close() {
      grpo.dispose();
      model.dispose();
      await sampler.close();
    },
  };
}

/** Three GRPO steps into `outputDir` (metrics.jsonl, completions.jsonl, checkpoints/). */
export async function grpoRunFolder(outputDir: string): Promise<void> {
  const { grpo, close } = await tinyGrpoTrainer(outputDir, 3);
  try {
    await grpo.train();
  } finally {
    await close();
  }
}

/** Traces from a teacher and two distillation steps of a student into `dir`. */
export async function distillRunFolder(dir: string): Promise<void> {
  await selectBackend();
  const teacher = tinyCheckpoint(1);
  const sampler = await createOnnxSampler({ checkpoint: teacher, workers: 0 });
  const outPath = join(dir, 'traces.jsonl');
  let fingerprint: string;
  try {
    ({ fingerprint } = await generateTraces({
      sampler,
      prompts,
      k: 2,
      sampling: { maxNewTokens: 3, temperature: 1, seed: 5 },
      reward: ({ completion }) => (completion.length > 0 ? 1 : 0),
      outPath,
      teacher: { weights: teacher },
      progress: false,
    }));
  } finally {
    await sampler.close();
  }
  const { kept } = filterTraces(await readTraces(outPath, { fingerprint }), {
    maxPerPrompt: 1,
    dropTruncated: false,
  });
  const tokenizer = createTokenizer(teacher.tokenizer!);
  const student = await createLlamaModel(tinyCheckpoint(2));
  try {
    const trainer = await createPolicyTrainer(student, { schedule: { learningRate: 1e-2 } });
    await distillStudent({
      trainer,
      traces: kept,
      encodePrompt: (prompt) => tokenizer.encode(prompt, { addSpecialTokens: false }),
      epochs: 1,
      batchSize: 4,
      seed: 1,
      checkpoint: { dir: join(dir, 'checkpoint'), every: 1 },
      progress: false,
    });
  } finally {
    student.dispose();
  }
}
