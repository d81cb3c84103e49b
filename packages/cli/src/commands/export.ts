import { ErrorCode } from '@rlvr/core';
import { type GgufDtype, writeGgufModel, writeOnnxModel } from '@rlvr/model';
import { ConfigError } from '../errors/config-error.js';
import { loadModel } from '../model/resolve-model.js';
import type { Command } from './command.js';

const FORMATS = ['gguf', 'onnx'] as const;

export const exportCommand: Command = {
  name: 'export',
  summary: 'export a model to GGUF (llama.cpp, Ollama, LM Studio) or ONNX (@rlvr/model)',
  usage: 'MODEL --out DIR [--format gguf|onnx] [--dtype f32|f16|bf16|q8_0] [--overwrite]',
  positionals: { names: 'MODEL (a checkpoint or run folder)', min: 1, max: 1 },
  flags: {
    out: { type: 'string', help: 'DIR  the folder to write model.gguf (or onnx/model.onnx) into' },
    format: { type: 'string', help: 'NAME  gguf (default) or onnx' },
    dtype: { type: 'string', help: 'TYPE  GGUF weight type: f32 (default), f16, bf16, q8_0' },
  },
  details:
    'MODEL is a checkpoint folder or a run folder of rlvr sft/grpo/distill (its final model).',
  example: `rlvr export runs/grpo --out exported --dtype f16
llama-cli -m exported/model.gguf -p "3+4="`,
  async run(context) {
    const format = (context.flags.format as string | undefined) ?? 'gguf';
    if (!FORMATS.includes(format as (typeof FORMATS)[number])) {
      throw new ConfigError({
        key: '--format',
        message: `expected gguf or onnx, got '${format}'`,
        code: ErrorCode.INVALID_ARGUMENT,
      });
    }
    const out = context.flags.out as string | undefined;
    if (out === undefined) {
      throw new ConfigError({
        key: '--out',
        message: 'required: the folder to write into',
        code: ErrorCode.INVALID_ARGUMENT,
      });
    }
    if (format === 'onnx' && context.flags.dtype !== undefined) {
      throw new ConfigError({
        key: '--dtype',
        message: 'only GGUF export takes a dtype',
        code: ErrorCode.INEFFECTIVE_OPTION,
      });
    }
    const { checkpoint } = await loadModel(context.positionals[0], 'MODEL', undefined);
    const path =
      format === 'gguf'
        ? await writeGgufModel(out, checkpoint, {
            ...(context.flags.dtype === undefined
              ? {}
              : { dtype: context.flags.dtype as GgufDtype }),
            overwrite: context.overwrite,
          })
        : await writeOnnxModel(out, checkpoint);
    context.io.stdout(`export: wrote ${path}\n`);
    return 0;
  },
};
