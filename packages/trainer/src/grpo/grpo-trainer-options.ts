import type { EnvironmentFactory, Sampler, WeightedReward } from '@rlvr/core';
import { custom, defineOptions, type OptionsInput, optional, required } from '@rlvr/options';
import type { LlamaModel } from '../model/llama-model.js';
import type { GrpoConfig } from './grpo-config.js';
import type { PromptRecord } from './prompt-dataset.js';
import type { GrpoMetricRecord } from './run-context.js';

/** A value `createGrpoTrainer` checks itself (its own error, in its own order). */
const checkedThere = <T>(expected: string) => custom<T>(() => true, expected);

/** Names other layers use → ours, for the "did you mean" hint only (never accepted). @internal */
export const GRPO_TRAINER_OPTION_ALIASES: Readonly<Record<string, string>> = {
  resumeFrom: 'resume',
  fresh: 'overwrite',
  force: 'overwrite',
  reward: 'rewards',
  rewardFunctions: 'rewards',
  verifiers: 'rewards',
  prompts: 'dataset',
  acceptChanges: 'acceptConfigChanges',
};

/**
 * The options of `createGrpoTrainer`, declared once: {@link GrpoTrainerOptions}, the keys and the
 * README table come from it. Unknown keys are `UNKNOWN_OPTION` (with the closest name); each
 * value is checked by `createGrpoTrainer` (the model, sampler, rewards, dataset, `config`: see
 * `GRPO_CONFIG`) and the run flags' combinations there too. @internal
 */
export const GRPO_TRAINER_OPTIONS = defineOptions(
  {
    model: required(checkedThere<LlamaModel>('a LlamaModel'), 'The policy (trained in place).'),
    sampler: required(
      checkedThere<Sampler>('a Sampler'),
      'Any core `Sampler`; it receives the new weights after every update, so it must implement `updateWeights` unless `config.syncWeights` is `false`.',
    ),
    dataset: required(
      checkedThere<readonly PromptRecord[] | string>('prompt records or a JSONL path'),
      'Prompt records, or the path of a JSONL file of them.',
    ),
    rewards: optional(
      checkedThere<readonly WeightedReward[]>('an array of { name, fn, weight? }'),
      {
        description:
          "Reward functions (weighted sum, or GDPO with `multiReward: 'normalize_then_sum'`); optional with `environment` (its reward is then the only column, or one beside these).",
        defaultText: 'required without `environment`',
      },
    ),
    environment: optional(checkedThere<EnvironmentFactory>('an EnvironmentFactory (a function)'), {
      description:
        "Multi-turn RL: creates each trajectory's environment (core's `Environment`). The sampler must be a `MultiTurnSampler`; rollouts are trajectories (`config.maxTurns`, `config.maxTotalTokens`), the loss covers the policy's tokens only, the environment's reward is the column `environment` beside `rewards`. Not with `maxStaleness > 0`.",
      defaultText: 'single-turn',
    }),
    config: required(
      checkedThere<GrpoConfig>('a GrpoConfig object { maxSteps, maxNewTokens, … }'),
      'The run settings (see `GrpoConfig`).',
    ),
    tokenizer: optional(
      checkedThere<{ encode(text: string): number[] }>('an object with encode(text) => number[]'),
      {
        description: 'Encodes prompts when the sampler does not report `promptTokenIds`.',
        defaultText: '—',
      },
    ),
    resume: optional(checkedThere<boolean | string>('a boolean or a checkpoint folder'), {
      description:
        "Continue from a checkpoint: `true` = the newest one under `outputDir/checkpoints` (a fresh start when there is none and the folder holds no run files), or the path of one checkpoint folder. Without it a fresh start refuses a folder holding another run's files unless `overwrite`.",
      defaultText: 'a fresh start',
    }),
    overwrite: optional(checkedThere<boolean>('a boolean'), {
      description:
        'Start fresh in an `outputDir` that holds a previous run (its `metrics.jsonl`, `completions.jsonl`, `checkpoints/` are removed first; other files are kept); without it such a folder is `WOULD_OVERWRITE`. Needs `config.outputDir`.',
      defaultText: '`false`',
    }),
    acceptConfigChanges: optional(checkedThere<boolean>('a boolean'), {
      description:
        'Resume even though the checkpoint was made with different settings (they are logged); without it a difference is `RESUME_MISMATCH`. Needs `resume`.',
      defaultText: '`false`',
    }),
    onLog: optional(checkedThere<(message: string) => void>('a function'), {
      description: 'Receives diagnostics and skip notices.',
      defaultText: 'stderr unless `quiet`',
    }),
    onStep: optional(
      checkedThere<(record: GrpoMetricRecord) => void>('a function'),
      "Called with every metrics record, after the step's files and checkpoint are written.",
    ),
  },
  {
    parameter: 'options',
    functionName: 'createGrpoTrainer',
    aliases: GRPO_TRAINER_OPTION_ALIASES,
  },
);

/** Options of `createGrpoTrainer` (see {@link GRPO_TRAINER_OPTIONS}). */
export type GrpoTrainerOptions = OptionsInput<typeof GRPO_TRAINER_OPTIONS.schema>;
