import { SAMPLE_REQUEST_KEYS } from '@rlvr/core';
import {
  DISTILL_STUDENT_OPTION_KEYS,
  FILTER_TRACES_OPTION_KEYS,
  GENERATE_TRACES_OPTION_KEYS,
} from '@rlvr/distill';
import { ONNX_SAMPLER_OPTION_KEYS } from '@rlvr/rollout';
import { POLICY_TRAINER_OPTION_KEYS } from '@rlvr/trainer';
import { describe, expect, it } from 'vitest';
import { SAMPLER_KEYS, SAMPLER_KEYS_SET_BY_CLI } from '../model/resolve-model.js';
import { FILTER_KEYS, TRACES_KEYS, TRACES_KEYS_SET_BY_CLI } from './distill.js';
import { SAMPLING_KEYS, SAMPLING_KEYS_NOT_IN_CONFIG, samplingOf } from './sampling.js';
import {
  DISTILL_STUDENT_KEYS,
  DISTILL_STUDENT_KEYS_NOT_IN_CONFIG,
  POLICY_TRAINER_KEYS,
  POLICY_TRAINER_KEYS_NOT_IN_CONFIG,
  studentOptions,
  trainerOptions,
} from './train-student.js';

/** A config that sets every key of `keys` (each to a value naming it). */
const everyKey = (keys: readonly string[]) =>
  Object.fromEntries(keys.map((key) => [key, `value of ${key}`]));

/**
 * Each row: the package's own key list, the keys the CLI deliberately does not take from a config,
 * and the keys a config may set. Every package key must be one or the other: a key a package
 * adds is passed through unless it is named in the CLI's list of omitted keys.
 */
const LISTS = [
  ['createOnnxSampler (sampler)', ONNX_SAMPLER_OPTION_KEYS, SAMPLER_KEYS_SET_BY_CLI, SAMPLER_KEYS],
  [
    'SampleRequest (generate, eval)',
    SAMPLE_REQUEST_KEYS,
    SAMPLING_KEYS_NOT_IN_CONFIG,
    SAMPLING_KEYS,
  ],
  [
    'createPolicyTrainer (sft, distill)',
    POLICY_TRAINER_OPTION_KEYS,
    POLICY_TRAINER_KEYS_NOT_IN_CONFIG,
    POLICY_TRAINER_KEYS,
  ],
  [
    'distillStudent (sft, distill)',
    DISTILL_STUDENT_OPTION_KEYS,
    DISTILL_STUDENT_KEYS_NOT_IN_CONFIG,
    DISTILL_STUDENT_KEYS,
  ],
  [
    'generateTraces (distill traces)',
    GENERATE_TRACES_OPTION_KEYS,
    TRACES_KEYS_SET_BY_CLI,
    TRACES_KEYS,
  ],
  ['filterTraces (distill filter)', FILTER_TRACES_OPTION_KEYS, [], FILTER_KEYS],
] as const satisfies readonly (readonly [
  string,
  readonly string[],
  readonly string[],
  readonly string[],
])[];

describe('CLI option key lists', () => {
  it.each(LISTS)(
    '%s: every package key is passed through or deliberately omitted',
    (_, pkg, omitted, cli) => {
      const packageKeys: readonly string[] = pkg;
      for (const key of omitted) expect(packageKeys).toContain(key);
      expect([...cli].sort()).toEqual(
        packageKeys.filter((key) => !omitted.includes(key as never)).sort(),
      );
    },
  );

  it('should forward every key a config may set to the package call', () => {
    // SampleRequest fields of generate / eval
    const sampling = samplingOf(everyKey(SAMPLE_REQUEST_KEYS));
    const expectedSampling = SAMPLE_REQUEST_KEYS.filter(
      (key) => !(SAMPLING_KEYS_NOT_IN_CONFIG as readonly string[]).includes(key),
    );
    expect(Object.keys(sampling).sort()).toEqual([...expectedSampling].sort());
    // createPolicyTrainer options of sft / distill
    const trainer = trainerOptions(everyKey(POLICY_TRAINER_OPTION_KEYS), 10);
    const expectedTrainer = POLICY_TRAINER_OPTION_KEYS.filter(
      (key) => !(POLICY_TRAINER_KEYS_NOT_IN_CONFIG as readonly string[]).includes(key),
    );
    expect(Object.keys(trainer).sort()).toEqual([...expectedTrainer].sort());
    // distillStudent options of sft / distill
    const student = studentOptions(everyKey(DISTILL_STUDENT_OPTION_KEYS), {
      epochs: 2,
      batchSize: 4,
    });
    const expectedStudent = DISTILL_STUDENT_OPTION_KEYS.filter(
      (key) => !(DISTILL_STUDENT_KEYS_NOT_IN_CONFIG as readonly string[]).includes(key),
    );
    expect(Object.keys(student).sort()).toEqual([...expectedStudent].sort());
    expect(student).toMatchObject({ epochs: 2, batchSize: 4, seed: 'value of seed' });
  });

  it('should keep the lists the CLI documents (a new package key needs a README / --help line)', () => {
    expect(SAMPLER_KEYS).toEqual([
      'promptFormat',
      'executionProviders',
      'threads',
      'workers',
      'eosTokenIds',
      'modelId',
      'allowSpinning',
      'engine',
      'stepsPerRun',
      'weightSync',
    ]);
    expect(SAMPLING_KEYS).toEqual([
      'maxNewTokens',
      'temperature',
      'topP',
      'topK',
      'minP',
      'repetitionPenalty',
      'stop',
      'seed',
    ]);
    expect(POLICY_TRAINER_KEYS).toEqual([
      'schedule',
      'optimizer',
      'maxGradNorm',
      'microBatchSize',
      'microBatchTokens',
      'gradientCheckpointing',
      'memoryLimitBytes',
      'lora',
      'onNonFinite',
      'maxConsecutiveSkips',
    ]);
    expect(DISTILL_STUDENT_KEYS).toEqual(['epochs', 'batchSize', 'pack', 'seed']);
    expect(TRACES_KEYS).toEqual(['k', 'sampling', 'acceptThreshold', 'batchSize', 'keepLogprobs']);
    expect(FILTER_KEYS).toEqual([
      'maxPerPrompt',
      'prefer',
      'seed',
      'maxTokens',
      'dropTruncated',
      'dedupeThreshold',
    ]);
  });
});
