/**
 * The defaults of a logit-distillation loss (`distillStudent`'s `loss: { type: 'logits' }`, and
 * `distillationLoss` / `distillationLossAndGradient` for `beta` and `temperature`): JSD
 * interpolation `beta` 0.5 (used only with `divergence: 'jsd'`), softmax `temperature` 1 applied to
 * teacher and student before comparing, and no cross-entropy term (`sftWeight` 0). The validators,
 * the loss, the checkpoint fingerprint and the CLI's `distill --print-config` read them from here.
 */
export const DISTILL_LOSS_DEFAULTS = Object.freeze({
  beta: 0.5,
  temperature: 1,
  sftWeight: 0,
} as const);
