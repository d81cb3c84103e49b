import { ErrorCode, POLICY_LOSS_DEFAULTS } from '@rlvr/core';
import { describe, expect, it } from 'vitest';
import { effectiveGrpoConfig, type GrpoConfig, TRAINER_DEFAULTS } from '../index.js';
import { resolveTrainerOptions } from '../train/trainer-options.js';
import { resolveGrpoConfig } from './resolve-config.js';
import { runSettings } from './run-settings.js';

const minimal = { maxSteps: 20, maxNewTokens: 16 } as const;

/** The error `effectiveGrpoConfig(config)` throws (the checks `createGrpoTrainer` runs). */
function errorOf(config: Record<string, unknown>): {
  code: string;
  parameter: string;
  message: string;
} {
  try {
    effectiveGrpoConfig({ ...minimal, ...config } as GrpoConfig);
  } catch (error) {
    return error as { code: string; parameter: string; message: string };
  }
  throw new Error(`accepted ${JSON.stringify(config)}`);
}

describe('GrpoConfig loss variants (issue #33)', () => {
  it('should show their defaults, TRL’s, in the effective config', () => {
    const config = effectiveGrpoConfig(minimal);
    expect(config).toMatchObject({
      lossMode: 'clip',
      topEntropyQuantile: 1,
      useBiasCorrectionKl: false,
      epsilonLow: 0.2,
    });
    expect(config).not.toHaveProperty('sapoTemperaturePos');
    expect(config).not.toHaveProperty('offPolicyMaskThreshold');
    expect(TRAINER_DEFAULTS.sapoTemperatureNeg).toBe(POLICY_LOSS_DEFAULTS.sapoTemperatureNeg);
    const sapo = effectiveGrpoConfig({ ...minimal, lossMode: 'sapo' });
    expect(sapo).toMatchObject({ sapoTemperaturePos: 1, sapoTemperatureNeg: 1.05 });
    // SAPO reads no ε: they are not shown
    expect(sapo).not.toHaveProperty('epsilonLow');
    expect(sapo).not.toHaveProperty('epsilonHigh');
    const cispo = effectiveGrpoConfig({
      ...minimal,
      lossMode: 'cispo',
      epsilonLow: 1,
      epsilonHigh: 4,
    });
    expect(cispo).toMatchObject({ lossMode: 'cispo', epsilonLow: 1, epsilonHigh: 4 });
    expect(
      effectiveGrpoConfig({
        ...minimal,
        beta: 0.01,
        useBiasCorrectionKl: true,
        offPolicyMaskThreshold: 0.5,
        topEntropyQuantile: 0.2,
      }),
    ).toMatchObject({
      useBiasCorrectionKl: true,
      offPolicyMaskThreshold: 0.5,
      topEntropyQuantile: 0.2,
    });
  });

  it('should refuse the combinations that do nothing, naming the field (INEFFECTIVE_OPTION)', () => {
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [{ lossMode: 'cispo', dualClip: 3 }, 'config.dualClip', /lossMode 'cispo'/],
      [{ lossMode: 'cispo', delta: 2 }, 'config.delta', /lossMode 'cispo'/],
      [{ lossMode: 'sapo', epsilonHigh: 0.28 }, 'config.epsilonHigh', /soft gate/],
      [{ lossMode: 'sapo', epsilonLow: 0.2 }, 'config.epsilonLow', /soft gate/],
      [{ lossMode: 'sapo', dualClip: 3 }, 'config.dualClip', /soft gate/],
      [{ sapoTemperatureNeg: 1.2 }, 'config.sapoTemperatureNeg', /lossMode 'sapo'/],
      [{ lossMode: 'cispo', sapoTemperaturePos: 1 }, 'config.sapoTemperaturePos', /'cispo'/],
      [{ useBiasCorrectionKl: true }, 'config.useBiasCorrectionKl', /beta is 0/],
    ];
    for (const [config, parameter, because] of cases) {
      const error = errorOf(config);
      expect(error.code, parameter).toBe(ErrorCode.INEFFECTIVE_OPTION);
      expect(error.parameter).toBe(parameter);
      expect(error.message).toMatch(because);
    }
  });

  it('should refuse values out of range, naming the field', () => {
    expect(errorOf({ topEntropyQuantile: 1.5 }).parameter).toBe('config.topEntropyQuantile');
    expect(errorOf({ offPolicyMaskThreshold: -0.1 }).parameter).toBe(
      'config.offPolicyMaskThreshold',
    );
    expect(errorOf({ lossMode: 'vespo' }).parameter).toBe('config.lossMode');
    expect(errorOf({ lossMode: 'sapo', sapoTemperaturePos: 0 }).parameter).toBe(
      'config.sapoTemperaturePos',
    );
    expect(errorOf({ beta: 0.1, useBiasCorrectionKl: 'yes' }).parameter).toBe(
      'config.useBiasCorrectionKl',
    );
  });

  it('should point TRL’s and verl’s names to ours (the aliases table)', () => {
    const hints: [string, string][] = [
      ['top_entropy_quantile', 'topEntropyQuantile'],
      ['off_policy_mask_threshold', 'offPolicyMaskThreshold'],
      ['use_bias_correction_kl', 'useBiasCorrectionKl'],
      ['sapo_temperature_pos', 'sapoTemperaturePos'],
      ['sapo_temperature_neg', 'sapoTemperatureNeg'],
      ['tau_neg', 'sapoTemperatureNeg'],
      ['loss_mode', 'lossMode'],
      ['loss_type', 'lossAggregation'],
    ];
    for (const [name, ours] of hints) {
      const error = errorOf({ [name]: 1 });
      expect(error.code).toBe(ErrorCode.UNKNOWN_OPTION);
      expect(error.message).toContain(`did you mean '${ours}'?`);
    }
  });

  it('should say what TRL’s loss_type values are here (bnpo is token-mean)', () => {
    expect(errorOf({ lossAggregation: 'dapo' }).message).toMatch(
      /'dapo' is TRL's loss_type for 'token-mean'/,
    );
    expect(errorOf({ lossAggregation: 'bnpo' }).message).toMatch(/for 'token-mean'/);
    expect(errorOf({ lossAggregation: 'cispo' }).message).toMatch(/lossMode: 'cispo'/);
    expect(errorOf({ lossAggregation: 'sapo' }).message).toMatch(
      /'seq-mean-token-mean' with lossMode: 'sapo'/,
    );
  });

  it('should check createPolicyTrainer’s grpo options the same way, under their names', () => {
    const error = (grpo: Record<string, unknown>) => {
      try {
        resolveTrainerOptions({ grpo }, 'createPolicyTrainer');
      } catch (thrown) {
        return thrown as { code: string; parameter: string };
      }
      return undefined;
    };
    expect(error({ lossMode: 'cispo', dualClip: 3 })).toMatchObject({
      code: ErrorCode.INEFFECTIVE_OPTION,
      parameter: 'options.grpo.dualClip',
    });
    expect(error({ lossMode: 'sapo', epsilonLow: 0.2 })?.parameter).toBe('options.grpo.epsilonLow');
    expect(error({ useBiasCorrectionKl: true })?.parameter).toBe(
      'options.grpo.useBiasCorrectionKl',
    );
    expect(error({ top_entropy_quantile: 0.2 })?.code).toBe(ErrorCode.UNKNOWN_OPTION);
    const resolved = resolveTrainerOptions({ grpo: { lossMode: 'sapo' } }, 'test').grpo;
    expect(resolved).toMatchObject({
      lossMode: 'sapo',
      sapoTemperaturePos: TRAINER_DEFAULTS.sapoTemperaturePos,
      sapoTemperatureNeg: TRAINER_DEFAULTS.sapoTemperatureNeg,
      topEntropyQuantile: 1,
      useBiasCorrectionKl: false,
    });
  });

  it('should change the resume fingerprint only when a variant is set', () => {
    const settings = (config: Partial<GrpoConfig>) =>
      JSON.parse(
        JSON.stringify(
          runSettings(resolveGrpoConfig({ ...minimal, ...config }, 'test'), {} as never, [], []),
        ),
      ) as Record<string, unknown>;
    const plain = settings({});
    for (const key of [
      'lossMode',
      'sapoTemperaturePos',
      'topEntropyQuantile',
      'offPolicyMaskThreshold',
      'useBiasCorrectionKl',
    ]) {
      expect(plain).not.toHaveProperty(key);
    }
    expect(settings({ lossMode: 'sapo' })).toMatchObject({
      lossMode: 'sapo',
      sapoTemperaturePos: 1,
      sapoTemperatureNeg: 1.05,
    });
    expect(settings({ topEntropyQuantile: 0.2, offPolicyMaskThreshold: 0.5 })).toMatchObject({
      topEntropyQuantile: 0.2,
      offPolicyMaskThreshold: 0.5,
    });
  });
});
