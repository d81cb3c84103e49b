import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fieldSummary, shapeOf } from '@rlvr/options';
import { GRPO_CONFIG, GRPO_CONFIG_KEYS, POLICY_TRAINER_OPTIONS } from '@rlvr/trainer';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { configJsonSchemas } from '../config/config-schemas.js';
import { cli } from '../test/run-captured.js';
import { grpoCommand } from './grpo.js';
import { POLICY_TRAINER_KEYS } from './train-student.js';

const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const ajv = new Ajv2020({ strict: true, allErrors: true });
const schemas = configJsonSchemas();
const validGrpo = ajv.compile(schemas.grpo!);
const validSft = ajv.compile(schemas.sft!);

describe("the CLI's trainer keys, from @rlvr/trainer's schemas", () => {
  it('should list every GrpoConfig key in grpo --help with what it takes and its default', async () => {
    const help = (await cli('grpo', '--help')).stdout;
    const shape = shapeOf(GRPO_CONFIG.schema)!;
    for (const key of GRPO_CONFIG_KEYS) {
      const { takes } = fieldSummary(shape[key]!);
      expect(help, key).toMatch(new RegExp(`\\n  ${key} +${escaped(takes)}`));
    }
    expect(help).toMatch(/\n {2}groupSize +an integer >= 2; default 8\n/);
    expect(help).toMatch(/\n {2}maxSteps +an integer >= 1; required\n/);
  });

  it('should list every createPolicyTrainer key a student config takes in sft --help', async () => {
    const help = (await cli('sft', '--help')).stdout;
    const shape = shapeOf(POLICY_TRAINER_OPTIONS.schema)!;
    for (const key of POLICY_TRAINER_KEYS) {
      const { takes } = fieldSummary(shape[key]!);
      expect(help, key).toMatch(new RegExp(`\\n  ${key} +${escaped(takes)}`));
    }
  });

  it("should accept grpo's example and the settings --print-config shows for it", async () => {
    const example = grpoCommand.example.split('# grpo.yaml\n')[1]!;
    expect(validGrpo(YAML.parse(example)), JSON.stringify(validGrpo.errors)).toBe(true);
    const file = join(await mkdtemp(join(tmpdir(), 'rlvr-grpo-schema-')), 'grpo.yaml');
    await writeFile(file, example);
    const printed = YAML.parse((await cli('grpo', '--print-config', '--config', file)).stdout);
    expect(printed).toMatchObject({ groupSize: 8, beta: 0 });
    expect(validGrpo(printed), JSON.stringify(validGrpo.errors)).toBe(true);
  });

  it('should refuse in the JSON Schema what the trainer refuses: unknown keys, types, ranges, enums', () => {
    const base = YAML.parse(grpoCommand.example.split('# grpo.yaml\n')[1]!);
    for (const bad of [
      { groupSize: 1 },
      { beta: -0.1 },
      { klEstimator: 'k4' },
      { kl_coef: 0.1 },
      { schedule: { lr: 1e-5 } },
      { schedule: { learningRate: 1e-5, schedule: 'step' } },
      { dynamicSampling: { maxRounds: 0 } },
      { mismatch: { mod: 'token-mask' } },
      { shuffle: 'yes' },
    ]) {
      expect(validGrpo({ ...base, ...bad }), JSON.stringify(bad)).toBe(false);
    }
    for (const bad of [{ maxGradNorm: -1 }, { optimizer: { eps: 1e-8 } }, { lora: { rank: 4 } }]) {
      expect(
        validSft({ model: 'm', dataset: 'd', outputDir: 'o', ...bad }),
        JSON.stringify(bad),
      ).toBe(false);
    }
    expect(
      validSft({ model: 'm', dataset: 'd', outputDir: 'o', lora: { r: 16, adapter: 'a/' } }),
    ).toBe(true);
  });
});
