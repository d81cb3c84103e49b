import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Command } from '../commands/command.js';
import { distillCommand } from '../commands/distill.js';
import { evalCommand } from '../commands/eval.js';
import { generateCommand } from '../commands/generate.js';
import { grpoCommand } from '../commands/grpo.js';
import { sftCommand } from '../commands/sft.js';
import { voteSampleCommand } from '../commands/vote-sample.js';
import { configJsonSchema } from './config-schema.js';

/** The folder of a project (from `rlvr init`) that holds the configs' JSON Schemas. */
export const SCHEMAS_DIR = 'schemas';

/** The subcommands that read a config, by the name of their schema file (`vote`: `vote --sample`). */
export const CONFIG_COMMANDS: Readonly<Record<string, Command>> = {
  sft: sftCommand,
  grpo: grpoCommand,
  distill: distillCommand,
  generate: generateCommand,
  eval: evalCommand,
  vote: voteSampleCommand,
};

/** The JSON Schema of each config, by name (see {@link CONFIG_COMMANDS}). */
export function configJsonSchemas(): Record<string, Record<string, unknown>> {
  return Object.fromEntries(
    Object.entries(CONFIG_COMMANDS).map(([name, command]) => [
      name,
      configJsonSchema(name, command.spec!),
    ]),
  );
}

/** Writes `<name>.schema.json` for every config into `dir`. */
export async function writeConfigSchemas(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  for (const [name, schema] of Object.entries(configJsonSchemas())) {
    await writeFile(join(dir, `${name}.schema.json`), `${JSON.stringify(schema, null, 2)}\n`);
  }
}
