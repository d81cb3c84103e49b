import { POLICY_TRAINER_OPTIONS } from './train/trainer-options.js';

/**
 * Every key of {@link PolicyTrainerOptions}: the keys `createPolicyTrainer` accepts (any other is
 * an `UNKNOWN_OPTION` error), from its schema (`POLICY_TRAINER_OPTIONS`). Exported so that layers
 * passing options through (apps, CLIs) check against the same list instead of a copy.
 */
export const POLICY_TRAINER_OPTION_KEYS = POLICY_TRAINER_OPTIONS.keys;
