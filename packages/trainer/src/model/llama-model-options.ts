import { custom, defineOptions, type OptionsInput, oneOf, withDefault } from '@rlvr/options';
import { nullAsUnset } from '../null-as-unset.js';

/**
 * The options of `createLlamaModel`, declared once: {@link CreateLlamaModelOptions}, the keys,
 * defaults, validation and README table come from it.
 */
export const CREATE_LLAMA_MODEL_OPTIONS = defineOptions(
  {
    checkFinite: nullAsUnset(
      withDefault(
        custom<boolean>(() => true, 'a boolean'),
        true,
        'Reject a checkpoint whose tensors hold NaN/Inf. Names and shapes are always checked; this flag only skips the finite-value scan.',
      ),
    ),
    engine: nullAsUnset(
      withDefault(
        oneOf(['auto', 'native', 'tfjs']),
        'auto',
        "The model's engine: `auto` is `native` where `selectBackend()` routed the wasm backend's matrix products to onnxruntime-node (its default when that package is installed), else `tfjs` on the active backend; `native` needs onnxruntime-node (`UNAVAILABLE` otherwise) and no tfjs backend.",
      ),
    ),
  },
  { parameter: 'options', functionName: 'createLlamaModel' },
);

/** Options of `createLlamaModel` (see {@link CREATE_LLAMA_MODEL_OPTIONS}). */
export type CreateLlamaModelOptions = OptionsInput<typeof CREATE_LLAMA_MODEL_OPTIONS.schema>;
