import { existsSync, readdirSync, statSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createRng, ErrorCode, OverwriteRefusedError } from '@rlvr/core';
import {
  buildCharTokenizer,
  countParameters,
  createRandomCheckpoint,
  createTokenizer,
  parseLlamaConfig,
  saveCheckpoint,
} from '@rlvr/model';
import { SCHEMAS_DIR, writeConfigSchemas } from '../config/config-schemas.js';
import { ConfigError } from '../errors/config-error.js';
import type { Command } from './command.js';

/** The files `rlvr init` writes (relative to the project folder). */
export const INIT_FILES = [
  'README.md',
  'sft.yaml',
  'grpo.yaml',
  'eval.yaml',
  'data/train.jsonl',
  'data/test.jsonl',
  'model',
  SCHEMAS_DIR,
] as const;

/** The first line of a config `rlvr init` writes: editors with the YAML language server check it. */
export function schemaModeline(command: string): string {
  return `# yaml-language-server: $schema=${SCHEMAS_DIR}/${command}.schema.json`;
}

const SFT_YAML = `${schemaModeline('sft')}
# rlvr sft --config sft.yaml   (supervised warm-up: learn the answer format)
model: model
dataset:
  path: data/train.jsonl
  columns: { prompt: question, completion: solution }
outputDir: runs/sft
epochs: 30
batchSize: 16
seed: 0
schedule: { learningRate: 0.01, schedule: cosine, warmupSteps: 2 }
reportTo: [jsonl, csv, tensorboard]
`;

const GRPO_YAML = `${schemaModeline('grpo')}
# rlvr grpo --config grpo.yaml   (GRPO on the math verifier, from the SFT model)
model: runs/sft
dataset:
  path: data/train.jsonl
  columns: { prompt: question, answer: solution }
rewards:
  - { name: math, weight: 1 }
outputDir: runs/grpo
maxSteps: 8
promptsPerStep: 4
groupSize: 4
maxNewTokens: 3
temperature: 1
schedule: { learningRate: 0.002 }
seed: 0
sampler: { workers: 0 }
reportTo: [jsonl, csv, tensorboard]
`;

const EVAL_YAML = `${schemaModeline('eval')}
# rlvr eval --config eval.yaml   (pass@k / maj@k on held-out prompts)
model: runs/grpo
dataset:
  path: data/test.jsonl
  columns: { prompt: question, answer: solution }
rewards: [math]
n: 4
maxNewTokens: 3
temperature: 1
seed: 0
sampler: { workers: 0 }
outputDir: runs/grpo
`;

const README = `# An rlvr example project

A tiny Llama model (random weights, character tokenizer) learns one-digit addition:

\`\`\`sh
rlvr sft  --config sft.yaml      # supervised warm-up on data/train.jsonl -> runs/sft
rlvr grpo --config grpo.yaml     # GRPO with the math verifier            -> runs/grpo
rlvr eval --config eval.yaml     # pass@k / maj@k on data/test.jsonl      -> runs/grpo/eval-results.json
rlvr report runs/grpo            # the run page                           -> runs/grpo/report.html
\`\`\`

Change any key with \`--set key=value\` (e.g. \`--set maxSteps=20\`), see every key with its default
with \`--print-config\`, and \`rlvr <command> --help\` for the rest. Metrics go to
\`metrics.jsonl\`, \`metrics.csv\` and \`tensorboard/\` in each run folder
(\`tensorboard --logdir runs\`).
`;

/** `{question, solution}` rows of one-digit additions, shuffled with a seed. */
function additionRows(): { id: string; question: string; solution: string }[] {
  const rows = [];
  for (let a = 0; a < 10; a++) {
    for (let b = 0; b < 10; b++)
      rows.push({ id: `add-${a}-${b}`, question: `${a}+${b}=`, solution: String(a + b) });
  }
  createRng(7).shuffle(rows);
  return rows;
}

function tinyModel() {
  const tokenizer = buildCharTokenizer({
    characters: '0123456789+=',
    chatTemplate: '{% for message in messages %}{{ message.content }}{% endfor %}',
  });
  const vocab = createTokenizer(tokenizer);
  const config = parseLlamaConfig({
    model_type: 'llama',
    vocab_size: vocab.vocabSize,
    hidden_size: 32,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    intermediate_size: 64,
    tie_word_embeddings: true,
    max_position_embeddings: 32,
    rope_theta: 10000,
  });
  return {
    ...createRandomCheckpoint(config, { seed: 1 }),
    tokenizer,
    generationConfig: {
      eos_token_id: vocab.eosTokenId,
      pad_token_id: vocab.padTokenId,
      bos_token_id: vocab.bosTokenId,
    },
  };
}

export const initCommand: Command = {
  name: 'init',
  summary: 'write a small working example project (configs, a tiny dataset, a tiny random model)',
  usage: 'DIR [--force] [--overwrite]',
  positionals: { names: 'DIR', min: 1, max: 1 },
  flags: {
    force: {
      type: 'boolean',
      help: '     write into a non-empty DIR (existing files still need --overwrite)',
    },
  },
  details: `Writes ${INIT_FILES.join(', ')} (the JSON Schema of every command's config: the configs
name theirs on their first line, so an editor with the YAML language server completes and checks
the keys). The first rlvr sft + rlvr grpo take about a minute on
two CPU cores. A non-empty DIR is refused without --force; a file of the same name is never
replaced without --overwrite.`,
  example: `rlvr init my-project && cd my-project
rlvr sft --config sft.yaml && rlvr grpo --config grpo.yaml && rlvr eval --config eval.yaml
rlvr report runs/grpo`,
  async run(context) {
    const dir = context.positionals[0]!;
    if (existsSync(dir)) {
      if (!statSync(dir).isDirectory()) {
        throw new ConfigError({
          key: 'DIR',
          message: `'${dir}' exists and is not a folder`,
          code: ErrorCode.INVALID_ARGUMENT,
        });
      }
      if (readdirSync(dir).length > 0 && context.flags.force !== true) {
        throw new OverwriteRefusedError({
          path: dir,
          reason: 'the folder is not empty',
          allowWith: '--force',
        });
      }
    }
    if (!context.overwrite) {
      for (const name of INIT_FILES) {
        if (existsSync(join(dir, name))) {
          throw new OverwriteRefusedError({
            path: join(dir, name),
            reason: 'the file exists',
            allowWith: '--overwrite',
          });
        }
      }
    }
    const rows = additionRows();
    const test = rows.slice(0, 12);
    const train = rows.slice(12);
    await mkdir(join(dir, 'data'), { recursive: true });
    const jsonl = (items: readonly object[]) =>
      `${items.map((item) => JSON.stringify(item)).join('\n')}\n`;
    await writeFile(join(dir, 'data/train.jsonl'), jsonl(train));
    await writeFile(join(dir, 'data/test.jsonl'), jsonl(test));
    await writeFile(join(dir, 'sft.yaml'), SFT_YAML);
    await writeFile(join(dir, 'grpo.yaml'), GRPO_YAML);
    await writeFile(join(dir, 'eval.yaml'), EVAL_YAML);
    await writeFile(join(dir, 'README.md'), README);
    await writeConfigSchemas(join(dir, SCHEMAS_DIR));
    const model = tinyModel();
    await saveCheckpoint(join(dir, 'model'), model);
    context.io.stdout(
      `init: wrote an example project to ${dir} (${train.length} training and ${test.length} test prompts, a ${countParameters(model.config).toLocaleString('en-US')}-parameter model)\nnext: cd ${dir} && rlvr sft --config sft.yaml\n`,
    );
    return 0;
  },
};
