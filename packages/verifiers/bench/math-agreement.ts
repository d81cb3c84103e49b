/**
 * Math-verifier agreement: `npx tsx bench/math-agreement.ts [--verbose]` (from packages/verifiers).
 *
 * Prints, per family, how many conformance cases `verifyMath` decides as expected and how many
 * should-not cases it pays (hacks), for the issue-35 / issue-32 corpus and the older corpora, and
 * its agreement with Hugging Face Math-Verify 0.8.0's own test suite (transcribed in
 * `src/math/__fixtures__/math-verify-suite.json`; gold and response passed as they are).
 * `--protocol=extracted-gold` passes `extractAnswer(gold)` instead of the raw gold (how issue 35's
 * "before" numbers were measured, with the two Math-Verify cases that need a non-default option
 * left out).
 */
import { readFileSync } from 'node:fs';
import { CORPUS, type CorpusCase } from '../src/math/__fixtures__/conformance-corpus.js';
import { FAMILY_CORPUS } from '../src/math/__fixtures__/conformance-families.js';
import { ISSUE35_CORPUS } from '../src/math/__fixtures__/conformance-issue35.js';
import { extractAnswer, verifyMath } from '../src/math/index.js';

const verbose = process.argv.includes('--verbose');
const extractedGold = process.argv.includes('--protocol=extracted-gold');

type Tally = { right: number; total: number; hacks: number; shouldNot: number };

function tallyCorpus(name: string, corpus: readonly CorpusCase[]): void {
  const families = new Map<string, Tally>();
  const misses: string[] = [];
  for (const [family, response, gold, expected] of corpus) {
    const tally = families.get(family) ?? { right: 0, total: 0, hacks: 0, shouldNot: 0 };
    const score = verifyMath(response, gold).score;
    tally.total++;
    if (score === expected) tally.right++;
    else misses.push(`  ${family}: ${JSON.stringify(response).slice(0, 90)} | ${gold} → ${score}`);
    if (expected === 0) {
      tally.shouldNot++;
      if (score === 1) tally.hacks++;
    }
    families.set(family, tally);
  }
  let right = 0;
  let total = 0;
  let hacks = 0;
  console.log(`\n${name}`);
  for (const [family, tally] of families) {
    right += tally.right;
    total += tally.total;
    hacks += tally.hacks;
    console.log(
      `  ${family.padEnd(22)} ${`${tally.right}/${tally.total}`.padStart(7)}   hacks ${tally.hacks}/${tally.shouldNot}`,
    );
  }
  console.log(`  ${'total'.padEnd(22)} ${`${right}/${total}`.padStart(7)}   hacks ${hacks}`);
  if (verbose && misses.length > 0) console.log(misses.join('\n'));
}

type SuiteCase = {
  source: string;
  gold: string;
  response: string;
  expected: 0 | 1;
  options?: Record<string, unknown>;
  ours?: 0 | 1 | null;
  convention?: string;
};

function mathVerifySuite(): void {
  const { cases } = JSON.parse(
    readFileSync(
      new URL('../src/math/__fixtures__/math-verify-suite.json', import.meta.url),
      'utf8',
    ),
  ) as { cases: SuiteCase[] };
  let agree = 0;
  let total = 0;
  let falsePositives = 0;
  let nulls = 0;
  const byFile = new Map<string, [number, number]>();
  const misses: string[] = [];
  for (const item of cases) {
    const needsOption =
      item.options?.strict === false || item.options?.allow_set_relation_comp === true;
    if (extractedGold && needsOption) continue;
    let gold = item.gold;
    if (extractedGold) gold = extractAnswer(gold, { fallback: 'none' }).answer ?? gold;
    const score = verifyMath(item.response, gold).score;
    total++;
    if (score === null) nulls++;
    const same = (score ?? 0) === item.expected;
    if (same) agree++;
    else misses.push(`  ${item.source}: Math-Verify ${item.expected}, verifyMath ${score}`);
    if (score === 1 && item.expected === 0) falsePositives++;
    const file = item.source.split('::')[1]!.split('[')[0]!;
    const entry = byFile.get(file) ?? [0, 0];
    entry[1]++;
    if (same) entry[0]++;
    byFile.set(file, entry);
  }
  console.log(
    `\nMath-Verify 0.8.0 test suite (${extractedGold ? 'extracted gold' : 'raw gold'}): agreement ${agree}/${total} = ${((100 * agree) / total).toFixed(1)}%, verifyMath 1 where Math-Verify 0: ${falsePositives}, gold null: ${nulls}`,
  );
  for (const [file, [same, count]] of byFile) console.log(`  ${file.padEnd(40)} ${same}/${count}`);
  if (verbose) console.log(misses.join('\n'));
}

tallyCorpus('issue-35 / issue-32.2 families', ISSUE35_CORPUS);
tallyCorpus('conformance corpus (312)', CORPUS);
tallyCorpus('issue-12 families', FAMILY_CORPUS);
mathVerifySuite();
