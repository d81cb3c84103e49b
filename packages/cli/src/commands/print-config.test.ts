import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SAMPLE_REQUEST_DEFAULTS } from '@rlvr/core';
import {
  DISTILL_LOSS_DEFAULTS,
  DISTILL_STUDENT_DEFAULTS,
  FILTER_TRACES_DEFAULTS,
  GENERATE_TRACES_DEFAULTS,
} from '@rlvr/distill';
import {
  ADAMW_DEFAULTS,
  effectiveGrpoConfig,
  GRPO_CONFIG_KEYS,
  type GrpoConfig,
  SCHEDULE_DEFAULTS,
  TRAINER_DEFAULTS,
} from '@rlvr/trainer';
import { describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { cli } from '../test/run-captured.js';
import { CLI_TRACES_DEFAULTS } from './distill.js';
import { CLI_SAMPLING_DEFAULTS } from './sampling.js';
import { STUDENT_DEFAULTS, STUDENT_LOOP_DEFAULTS, trainerOptions } from './train-student.js';

const dir = mkdtempSync(join(tmpdir(), 'rlvr-grpo-print-'));
const trainerKeys = {
  outputDir: 'runs/grpo',
  maxSteps: 30,
  maxNewTokens: 8,
  beta: 0.04,
  groupSize: 4,
};
const configPath = join(dir, 'grpo.yaml');
writeFileSync(
  configPath,
  YAML.stringify({ model: 'model', dataset: 'data.jsonl', rewards: ['math'], ...trainerKeys }),
);

/** The GrpoConfig keys of a printed config. */
const grpoPart = (printed: Record<string, unknown>) =>
  Object.fromEntries(
    Object.entries(printed).filter(([key]) => GRPO_CONFIG_KEYS.includes(key as never)),
  );

describe('rlvr grpo --print-config', () => {
  it("should show every GrpoConfig setting as @rlvr/trainer's effectiveGrpoConfig resolves it", async () => {
    const { code, stdout } = await cli(
      'grpo',
      '--config',
      configPath,
      '--set',
      'lossAggregation=seq-mean-token-sum-norm',
      '--print-config',
    );
    expect(code).toBe(0);
    const printed = YAML.parse(stdout) as Record<string, unknown>;
    const expected = effectiveGrpoConfig({
      ...trainerKeys,
      lossAggregation: 'seq-mean-token-sum-norm',
    } as GrpoConfig);
    expect(grpoPart(printed)).toEqual(expected);
    // the trainer's defaults, including the ones that apply only in this combination
    expect(printed).toMatchObject({
      epsilonLow: TRAINER_DEFAULTS.epsilonLow,
      epsilonHigh: TRAINER_DEFAULTS.epsilonLow,
      klEstimator: TRAINER_DEFAULTS.klEstimator,
      schedule: { learningRate: TRAINER_DEFAULTS.learningRate, schedule: 'constant' },
      saveEvery: 3,
      normalizer: 8,
      // and the CLI's own keys
      model: 'model',
      reportTo: ['jsonl'],
      backend: 'auto',
    });
  });

  it("should show the trainer's defaults before the required keys are set", async () => {
    const { code, stdout } = await cli('grpo', '--print-config');
    expect(code).toBe(0);
    const printed = YAML.parse(stdout) as Record<string, unknown>;
    const { maxSteps, maxNewTokens, outputDir, saveEvery, ...expected } = effectiveGrpoConfig({
      maxSteps: 1,
      maxNewTokens: 1,
      outputDir: 'x',
    });
    expect(grpoPart(printed)).toEqual(expected);
    expect(printed).not.toHaveProperty('klEstimator'); // β = 0
    expect(printed.groupSize).toBe(TRAINER_DEFAULTS.groupSize);
  });

  it('should reject a value the run would reject, naming the key and where it was set', async () => {
    const { code, stderr } = await cli(
      'grpo',
      '--config',
      configPath,
      '--set',
      'beta=-1',
      '--print-config',
    );
    expect(code).toBe(2);
    expect(stderr).toMatch(
      /config key 'beta' \(in --set\): .*expected a finite number >= 0, got -1/,
    );
  });
});

describe('rlvr grpo with the loss variants (issue #33)', () => {
  it('should show a SAPO run as the trainer resolves it (its temperatures, no ε)', async () => {
    const { code, stdout } = await cli(
      'grpo',
      '--config',
      configPath,
      '--set',
      'lossMode=sapo',
      '--set',
      'topEntropyQuantile=0.2',
      '--set',
      'offPolicyMaskThreshold=0.5',
      '--set',
      'useBiasCorrectionKl=true',
      '--print-config',
    );
    expect(code).toBe(0);
    const printed = YAML.parse(stdout) as Record<string, unknown>;
    const expected = effectiveGrpoConfig({
      ...trainerKeys,
      lossMode: 'sapo',
      topEntropyQuantile: 0.2,
      offPolicyMaskThreshold: 0.5,
      useBiasCorrectionKl: true,
    } as GrpoConfig);
    expect(grpoPart(printed)).toEqual(expected);
    expect(printed).toMatchObject({
      lossMode: 'sapo',
      sapoTemperaturePos: TRAINER_DEFAULTS.sapoTemperaturePos,
      sapoTemperatureNeg: TRAINER_DEFAULTS.sapoTemperatureNeg,
      topEntropyQuantile: 0.2,
    });
    expect(printed).not.toHaveProperty('epsilonLow');
  });

  it('should refuse a combination that does nothing, and point TRL names to ours', async () => {
    const dual = await cli(
      'grpo',
      '--config',
      configPath,
      '--set',
      'lossMode=cispo',
      '--set',
      'dualClip=3',
      '--print-config',
    );
    expect(dual.code).toBe(2);
    expect(dual.stderr).toMatch(/config key 'dualClip' \(in --set\): .*lossMode 'cispo'/);
    const trl = await cli(
      'grpo',
      '--config',
      configPath,
      '--set',
      'top_entropy_quantile=0.2',
      '--print-config',
    );
    expect(trl.code).toBe(2);
    expect(trl.stderr).toMatch(/unknown key \(did you mean 'topEntropyQuantile'\?\)/);
  });
});

describe('rlvr sft / distill --print-config', () => {
  it("should show the packages' defaults, the same student settings in both", async () => {
    const sft = YAML.parse((await cli('sft', '--print-config')).stdout) as Record<string, unknown>;
    const student = {
      epochs: STUDENT_LOOP_DEFAULTS.epochs,
      batchSize: STUDENT_LOOP_DEFAULTS.batchSize,
      seed: DISTILL_STUDENT_DEFAULTS.seed,
      pack: DISTILL_STUDENT_DEFAULTS.pack,
      maxGradNorm: TRAINER_DEFAULTS.maxGradNorm,
      schedule: { ...SCHEDULE_DEFAULTS },
      optimizer: { ...ADAMW_DEFAULTS, betas: [...ADAMW_DEFAULTS.betas] },
    };
    expect(sft).toMatchObject(student);
    const distill = YAML.parse((await cli('distill', '--print-config')).stdout) as Record<
      string,
      unknown
    >;
    expect(distill).toMatchObject(student);
    expect(distill).toMatchObject({
      traces: {
        k: CLI_TRACES_DEFAULTS.k,
        acceptThreshold: GENERATE_TRACES_DEFAULTS.acceptThreshold,
        batchSize: GENERATE_TRACES_DEFAULTS.batchSize,
        keepLogprobs: GENERATE_TRACES_DEFAULTS.keepLogprobs,
        sampling: { ...GENERATE_TRACES_DEFAULTS.sampling },
      },
      filter: {
        prefer: FILTER_TRACES_DEFAULTS.prefer,
        dropTruncated: FILTER_TRACES_DEFAULTS.dropTruncated,
        dedupeThreshold: FILTER_TRACES_DEFAULTS.dedupeThreshold,
      },
    });
    // filterTraces keeps every accepted trace by default: the CLI adds no cap of its own.
    expect(distill.filter).not.toHaveProperty('maxPerPrompt');
  });

  it('should pass the shown student defaults as the packages apply them', () => {
    // What createPolicyTrainer gets from the defaults alone is what it fills in by itself.
    const fromDefaults = trainerOptions(structuredClone({ ...STUDENT_DEFAULTS }), 10);
    const filled = effectiveGrpoConfig({ maxSteps: 1, maxNewTokens: 1 }); // the trainer's fill
    expect(fromDefaults).toEqual({
      schedule: filled.schedule,
      optimizer: filled.optimizer,
      maxGradNorm: filled.maxGradNorm,
    });
  });

  it("should document the CLI's own defaults with their values in the README", () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8').replace(
      /\s+/g,
      ' ',
    );
    expect(readme).toContain(`\`epochs\` ${STUDENT_LOOP_DEFAULTS.epochs}`);
    expect(readme).toContain(`\`batchSize\` ${STUDENT_LOOP_DEFAULTS.batchSize}`);
    expect(readme).toContain(`\`traces.k\` ${CLI_TRACES_DEFAULTS.k}`);
    expect(readme).toContain(
      `\`traces.sampling.temperature\` is ${GENERATE_TRACES_DEFAULTS.sampling.temperature}`,
    );
  });
});

describe('rlvr distill --print-config with a logits loss', () => {
  it("should show @rlvr/distill's loss defaults for what the loss does not give", async () => {
    const shown = async (loss: string) =>
      YAML.parse((await cli('distill', '--print-config', '--set', `loss=${loss}`)).stdout) as {
        loss: Record<string, unknown>;
      };
    expect((await shown('{type: logits, divergence: jsd}')).loss).toEqual({
      type: 'logits',
      divergence: 'jsd',
      beta: DISTILL_LOSS_DEFAULTS.beta,
      temperature: DISTILL_LOSS_DEFAULTS.temperature,
      sftWeight: DISTILL_LOSS_DEFAULTS.sftWeight,
    });
    expect((await shown('{type: logits, divergence: forward-kl, temperature: 2}')).loss).toEqual({
      type: 'logits',
      divergence: 'forward-kl',
      temperature: 2,
      sftWeight: DISTILL_LOSS_DEFAULTS.sftWeight,
    });
    expect((await shown('{type: sft}')).loss).toEqual({ type: 'sft' });
  });
});

describe('rlvr generate / eval defaults', () => {
  it("should show the CLI's n, batchSize, seed and core's temperature in --print-config and --help", async () => {
    for (const command of ['generate', 'eval']) {
      const printed = YAML.parse((await cli(command, '--print-config')).stdout) as Record<
        string,
        unknown
      >;
      expect(printed).toMatchObject({
        ...CLI_SAMPLING_DEFAULTS,
        temperature: SAMPLE_REQUEST_DEFAULTS.temperature,
      });
      const help = (await cli(command, '--help')).stdout.replace(/\s+/g, ' ');
      expect(help).toContain(
        `Defaults: n ${CLI_SAMPLING_DEFAULTS.n}, batchSize ${CLI_SAMPLING_DEFAULTS.batchSize}, seed ${CLI_SAMPLING_DEFAULTS.seed} are the CLI's; temperature ${SAMPLE_REQUEST_DEFAULTS.temperature} is core's`,
      );
    }
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8').replace(
      /\s+/g,
      ' ',
    );
    expect(readme).toContain(`\`n\` ${CLI_SAMPLING_DEFAULTS.n} completions per prompt`);
    expect(readme).toContain(
      `\`batchSize\` ${CLI_SAMPLING_DEFAULTS.batchSize} prompts per sampler`,
    );
    expect(readme).toContain(`base \`seed\` ${CLI_SAMPLING_DEFAULTS.seed}`);
    expect(readme).toContain(`\`temperature\` is ${SAMPLE_REQUEST_DEFAULTS.temperature}, core's`);
  });
});
