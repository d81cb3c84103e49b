import { fieldSummary } from '@rlvr/options';
import { describe, expect, it } from 'vitest';
import { helpOf } from '../commands/parse-command.js';
import { CONFIG_KEYS_TITLE } from './config-keys.js';
import { CONFIG_COMMANDS } from './config-schemas.js';

const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The keys listed under the "Config keys" heading of a `--help` text. */
function listedKeys(help: string): string[] {
  const lines = help.split('\n');
  const start = lines.indexOf(`${CONFIG_KEYS_TITLE}:`);
  expect(start).toBeGreaterThanOrEqual(0);
  const out: string[] = [];
  for (const line of lines.slice(start + 1)) {
    if (line.startsWith('      ')) continue; // a key's description
    const match = /^ {2}(\S+) /.exec(line);
    if (match === null) break;
    out.push(match[1]!);
  }
  return out;
}

describe('config key declarations', () => {
  it.each(Object.entries(CONFIG_COMMANDS))(
    '%s: every key of the config is declared, and every declaration is a key',
    (_, command) => {
      const spec = command.spec!;
      expect(Object.keys(spec.schemas ?? {})).toEqual([...spec.known]);
      const used = [
        ...spec.required,
        ...Object.keys(spec.defaults),
        ...Object.keys(spec.nested ?? {}),
      ];
      for (const key of used) expect(spec.known, key).toContain(key);
      const help = helpOf(command);
      for (const key of spec.known) {
        const { takes, description } = fieldSummary(spec.schemas![key]!);
        expect(takes, `${key}: what it takes`).not.toBe('');
        expect(description, `${key}: its description`).not.toBe('');
        expect(help, `${key} in --help`).toMatch(new RegExp(`\\n {2}${key} +${escaped(takes)}`));
      }
      for (const key of listedKeys(help)) expect(spec.known, key).toContain(key);
    },
  );

  it("should show each key's default, the CLI's ones marked, and the required keys", () => {
    const help = (name: string) => helpOf(CONFIG_COMMANDS[name]!);
    expect(help('grpo')).toMatch(
      /\n {2}reportTo +a list of jsonl, csv, tensorboard, console, none; default \["jsonl"\] \(the CLI's\)\n {6}The metrics sinks/,
    );
    expect(help('grpo')).toMatch(/\n {2}model +a checkpoint folder or a run folder; required\n/);
    expect(help('generate')).toMatch(/\n {2}n +an integer >= 1; default 4\n {6}Completions/);
    expect(help('generate')).toMatch(/\n {2}out +a file path; required\n/);
    expect(help('eval')).toMatch(/\n {2}ks +integers in \[1, n\]; default 1, 2, 4, … n\n/);
    expect(help('sft')).toMatch(/\n {2}saveEvery +an integer >= 1; default the run's step count\n/);
    expect(help('vote')).not.toMatch(/\n {2}out /);
  });
});
