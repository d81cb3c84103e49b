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
});
