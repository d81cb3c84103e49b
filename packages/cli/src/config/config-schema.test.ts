import { readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DISTILL_STUDENT_OPTIONS, FILTER_TRACES_OPTIONS } from '@rlvr/distill';
import { fieldSummary, type Schema, shapeOf } from '@rlvr/options';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { distillCommand, FILTER_KEYS, TRACES_KEYS, TRACES_SCHEMA } from '../commands/distill.js';
import { schemaModeline } from '../commands/init.js';
import { DISTILL_STUDENT_KEYS } from '../commands/train-student.js';
import { cli } from '../test/run-captured.js';
import { CONFIG_COMMANDS, configJsonSchemas, SCHEMAS_DIR } from './config-schemas.js';

const ajv = new Ajv2020({ strict: true, allErrors: true });
const schemas = configJsonSchemas();
const validators = Object.fromEntries(
  Object.entries(schemas).map(([name, schema]) => [name, ajv.compile(schema)]),
);
const valid = (name: string, config: unknown) => validators[name]!(config) === true;

describe('config JSON Schemas', () => {
  it('should list exactly the keys each config takes, and compile in strict mode', () => {
    for (const [name, command] of Object.entries(CONFIG_COMMANDS)) {
      const schema = schemas[name]!;
      expect(Object.keys(schema.properties as object).sort()).toEqual(
        [...command.spec!.known].sort(),
      );
      expect(schema.additionalProperties).toBe(false);
    }
  });

  it('should accept the example configs rlvr init writes, which name their schema', async () => {
    const dir = join(await mkdtemp(join(tmpdir(), 'rlvr-schema-')), 'project');
    expect((await cli('init', dir)).code).toBe(0);
    for (const name of ['sft', 'grpo', 'eval']) {
      const text = readFileSync(join(dir, `${name}.yaml`), 'utf8');
      expect(text.split('\n')[0]).toBe(schemaModeline(name));
      const written = JSON.parse(
        readFileSync(join(dir, SCHEMAS_DIR, `${name}.schema.json`), 'utf8'),
      );
      expect(written).toEqual(schemas[name]);
      expect(valid(name, YAML.parse(text)), JSON.stringify(validators[name]!.errors)).toBe(true);
    }
    for (const name of Object.keys(CONFIG_COMMANDS)) {
      expect(
        JSON.parse(readFileSync(join(dir, SCHEMAS_DIR, `${name}.schema.json`), 'utf8')),
      ).toEqual(schemas[name]);
    }
  });

  it("should accept rlvr distill's example config and the defaults --print-config shows for it", async () => {
    const example = distillCommand.example.split('# distill.yaml\n')[1]!;
    expect(valid('distill', YAML.parse(example)), JSON.stringify(validators.distill!.errors)).toBe(
      true,
    );
    // the example with every default filled in, as the run uses it
    const file = join(await mkdtemp(join(tmpdir(), 'rlvr-schema-')), 'distill.yaml');
    writeFileSync(file, example);
    const printed = YAML.parse((await cli('distill', '--print-config', '--config', file)).stdout);
    expect(printed.filter).toMatchObject({ prefer: 'shorter' });
    expect(valid('distill', printed), JSON.stringify(validators.distill!.errors)).toBe(true);
  });

  it("should refuse what the packages' validation refuses: unknown keys, types, ranges, enums", () => {
    const base = YAML.parse(distillCommand.example.split('# distill.yaml\n')[1]!);
    const refused = [
      { teachr: 'x' },
      { traces: { k: 0 } },
      { traces: { kk: 4 } },
      { traces: { outPath: 'x.jsonl' } }, // set by the CLI
      { traces: { sampling: { maxNewTokens: 0 } } },
      { traces: { sampling: { n: 2 } } },
      { filter: { dedupeThreshold: 0 } },
      { filter: { prefer: 'longest' } },
      { loss: { type: 'kl' } },
      { loss: { type: 'logits', divergence: 'jsd', beta: 2 } },
      { loss: { type: 'logits', teacher: 'x' } }, // set by the CLI
      { epochs: 1.5 },
      { pack: 'yes' },
      { dataset: { path: 'x', colums: {} } },
    ];
    for (const patch of refused) {
      expect(valid('distill', { ...base, ...patch }), JSON.stringify(patch)).toBe(false);
    }
    expect(valid('distill', { ...base, dataset: 'data/train.jsonl' })).toBe(true);
    expect(valid('distill', { ...base, filter: { dedupeThreshold: false, maxPerPrompt: 2 } })).toBe(
      true,
    );
    // a served model: @rlvr/openai's options (each optional: --base-url may give baseURL)
    expect(valid('generate', { model: 'Qwen/Qwen3-0.6B', maxNewTokens: 8 })).toBe(true);
    expect(valid('generate', { model: { model: 'm', concurrency: 4, server: 'vllm' } })).toBe(true);
    expect(valid('generate', { model: { model: 'm', concurrency: 0 } })).toBe(false);
    expect(valid('generate', { model: { model: 'm', api: 'responses' } })).toBe(false);
    expect(valid('distill', { ...base, teacher: { baseURL: 'http://x/v1', modle: 'm' } })).toBe(
      false,
    );
    expect(valid('sft', { epochs: 0 })).toBe(false);
    expect(valid('sft', { epochs: 2, seed: 3, pack: true })).toBe(true);
  });

  it("should carry the packages' defaults and descriptions", () => {
    type Node = { properties: Record<string, Record<string, unknown>> };
    const traces = (schemas.distill as unknown as Node).properties.traces as unknown as Node;
    expect(traces.properties.k).toMatchObject({ default: 4, minimum: 1 });
    expect(traces.properties.batchSize).toMatchObject({
      default: 8,
      description: 'Prompts per sampler call.',
    });
  });

  it('should list every package key of sft and distill in --help with what it takes, from the schemas', async () => {
    const distillHelp = (await cli('distill', '--help')).stdout;
    const sftHelp = (await cli('sft', '--help')).stdout;
    const lines = (prefix: string, schema: Schema, keys: readonly string[]) =>
      keys.map((key) => {
        const { takes } = fieldSummary(shapeOf(schema)![key]!);
        return new RegExp(`\\n  ${prefix}${key} +${takes.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`);
      });
    for (const line of [
      ...lines('traces.', TRACES_SCHEMA, TRACES_KEYS),
      ...lines('filter.', FILTER_TRACES_OPTIONS.schema, FILTER_KEYS),
      ...lines('', DISTILL_STUDENT_OPTIONS.schema, DISTILL_STUDENT_KEYS),
    ]) {
      expect(distillHelp).toMatch(line);
    }
    for (const line of lines('', DISTILL_STUDENT_OPTIONS.schema, DISTILL_STUDENT_KEYS)) {
      expect(sftHelp).toMatch(line);
    }
    expect(distillHelp).toMatch(
      /\n {2}filter\.dedupeThreshold +a finite number in \(0, 1\]; default 0\.9\n/,
    );
    expect(sftHelp).toMatch(/\n {2}epochs +an integer >= 1; default 3 \(the CLI's\)\n/);
  });
});
