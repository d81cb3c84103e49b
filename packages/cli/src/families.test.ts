import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  buildFamilyTokenizer,
  createRandomCheckpoint,
  parseModelConfig,
  readGguf,
  saveCheckpoint,
  TOKENIZER_FAMILIES,
} from '@rlvr/model';
import { TINY_FAMILY_CONFIGS } from '@rlvr/model/test';
import { describe, expect, it } from 'vitest';
import { runCli } from './run-cli.js';

async function cli(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(argv, {
    stdout: (text) => {
      stdout += text;
    },
    stderr: (text) => {
      stderr += text;
    },
  });
  return { code, stdout, stderr };
}

// A tiny random checkpoint of each family, saved as a Hugging Face folder with a tokenizer in the
// family's format: the commands that load checkpoints without training (generate, export) run it.
const root = mkdtempSync(join(tmpdir(), 'rlvr-cli-families-'));
const ARCHITECTURE = { qwen3: 'qwen3', llama3: 'llama', smollm3: 'smollm3', gemma3: 'gemma3' };
const TEMPLATE =
  '{{ bos_token }}{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}{% if add_generation_prompt %}[assistant] {% endif %}';
const dataset = join(root, 'prompts.jsonl');
writeFileSync(
  dataset,
  ['12+30=', '7*6=', 'What is 40+2?'].map((prompt) => JSON.stringify({ prompt })).join('\n'),
);
// Chat-message prompts with gold answers: grpo and distill render them with the family's template.
const chat = join(root, 'chat.jsonl');
writeFileSync(
  chat,
  ['12+30=', '7*6=', '40+2=', '50-8=']
    .map((content) => JSON.stringify({ prompt: [{ role: 'user', content }], answer: '42' }))
    .join('\n'),
);
const jsonl = (path: string) =>
  readFileSync(path, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { step: number; metrics: Record<string, number> });

describe('rlvr on a checkpoint of each model family', () => {
  it.each(TOKENIZER_FAMILIES)('%s: generate samples and export GGUF', async (family) => {
    const tokenizer = buildFamilyTokenizer({
      family,
      corpus: ['12+30=42', '7*6=42', 'What is 40+2? 42.'],
      merges: 40,
      chatTemplate: TEMPLATE,
    });
    const vocab = tokenizer.json as { added_tokens: { id: number }[]; model: { vocab: object } };
    const config = parseModelConfig({
      ...TINY_FAMILY_CONFIGS[family],
      vocab_size: Object.keys(vocab.model.vocab).length + vocab.added_tokens.length,
    });
    const model = join(root, family);
    await saveCheckpoint(model, { ...createRandomCheckpoint(config, { seed: 1 }), tokenizer });
    const out = join(root, `${family}.jsonl`);
    const generate = await cli(
      'generate',
      '--set',
      `model=${model}`,
      '--set',
      `dataset=${dataset}`,
      '--set',
      `out=${out}`,
      '--set',
      'n=2',
      '--set',
      'maxNewTokens=4',
      '--set',
      'sampler={workers: 0}',
    );
    expect(generate.code, generate.stderr).toBe(0);
    const lines = readFileSync(out, 'utf8').trim().split('\n');
    expect(lines).toHaveLength(3);
    const exported = join(root, `${family}-gguf`);
    const exportRun = await cli('export', model, '--out', exported);
    expect(exportRun.code, exportRun.stderr).toBe(0);
    const gguf = await readGguf(join(exported, 'model.gguf'));
    expect(gguf.metadata['general.architecture']).toBe(ARCHITECTURE[family]);
  });

  it.each(TOKENIZER_FAMILIES)('%s: grpo (LoRA) and distill train it', async (family) => {
    const model = join(root, family);
    const grpoDir = join(root, `${family}-grpo`);
    const grpo = await cli(
      'grpo',
      ...[`model=${model}`, `dataset=${chat}`, 'rewards=[math]', `outputDir=${grpoDir}`]
        .concat(['maxSteps=2', 'promptsPerStep=2', 'groupSize=2', 'maxNewTokens=3', 'seed=0'])
        .concat(['sampler={workers: 0}', 'lora={r: 4, targetModules: all-linear}'])
        .flatMap((value) => ['--set', value]),
    );
    expect(grpo.code, grpo.stderr).toBe(0);
    const steps = jsonl(join(grpoDir, 'metrics.jsonl'));
    expect(steps.map((row) => row.step)).toEqual([1, 2]);
    expect(steps.every((row) => Number.isFinite(row.metrics['reward/mean']))).toBe(true);
    expect(
      JSON.parse(readFileSync(join(grpoDir, 'adapter', 'adapter_config.json'), 'utf8')),
    ).toMatchObject({ peft_type: 'LORA', r: 4 });
    const distillDir = join(root, `${family}-distill`);
    const distill = await cli(
      'distill',
      ...[`teacher=${model}`, `student=${model}`, `dataset=${chat}`, 'rewards=[math]']
        .concat([`outputDir=${distillDir}`, 'epochs=1', 'batchSize=2'])
        .concat(['traces={k: 2, acceptThreshold: 0, sampling: {maxNewTokens: 3}}'])
        .concat(['filter={dropTruncated: false}', 'sampler={workers: 0}'])
        .flatMap((value) => ['--set', value]),
    );
    expect(distill.code, distill.stderr).toBe(0);
    // a header line, then 2 traces of each of the 4 prompts
    const traces = readFileSync(join(distillDir, 'traces.jsonl'), 'utf8').trim().split('\n');
    expect(JSON.parse(traces[0]!)).toMatchObject({ type: 'header' });
    expect(traces.slice(1).map((line) => JSON.parse(line).promptId)).toHaveLength(8);
    const losses = jsonl(join(distillDir, 'metrics.jsonl')).map((row) => row.metrics.loss);
    expect(losses.length).toBeGreaterThan(0);
    expect(losses.every(Number.isFinite)).toBe(true);
  });
});
