import { custom, defineOptions, type OptionsInput, optional, withDefault } from '@rlvr/options';
import { nullAsUnset } from '../null-as-unset.js';
import type { BackendName, MatMulEngine } from './select-backend.js';

/**
 * The options of `selectBackend`, declared once: {@link SelectBackendOptions}, the keys, defaults
 * and README table come from it; `selectBackend` checks each value after the parse (its messages
 * name the bad candidate's index).
 */
export const SELECT_BACKEND_OPTIONS = defineOptions(
  {
    candidates: optional(
      custom<readonly BackendName[]>(
        () => true,
        "a non-empty array of 'tensorflow', 'wasm', 'cpu'",
      ),
      {
        description: 'Backends to try, in order; the first that loads wins.',
        defaultText: "['tensorflow', 'wasm', 'cpu']",
      },
    ),
    matMul: nullAsUnset(
      withDefault(
        custom<'auto' | MatMulEngine>(() => true, "'auto', 'onnxruntime' or 'backend'"),
        'auto',
        "Matrix-product engine on `wasm` (ignored on the other backends): `'auto'` takes `onnxruntime` when onnxruntime-node loads and falls back to `backend`; `'onnxruntime'` fails when it does not load.",
      ),
    ),
    matMulThreads: optional(
      custom<number>(() => true, 'an integer from 1 to 1024'),
      {
        description:
          'Threads of the onnxruntime matrix products. On a machine shared with other busy processes, 1 is often faster.',
        defaultText: "onnxruntime's choice (one per core)",
      },
    ),
  },
  { parameter: 'options', functionName: 'selectBackend' },
);

/** Options of `selectBackend` (see {@link SELECT_BACKEND_OPTIONS}). */
export type SelectBackendOptions = OptionsInput<typeof SELECT_BACKEND_OPTIONS.schema>;
