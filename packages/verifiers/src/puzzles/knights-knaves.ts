import { InvalidArgumentError, type Rng, type VerifyResult, validateOptions } from '@rlvr/core';
import { readGeneratorOptions } from './generator-options.js';

/** Role of an inhabitant: knights always tell the truth, knaves always lie. */
export type Role = 'knight' | 'knave';

/** A statement about the inhabitants (indexes into `names`). */
export type Claim =
  | { kind: 'is'; person: number; role: Role }
  | { kind: 'and'; left: Claim; right: Claim }
  | { kind: 'or'; left: Claim; right: Claim }
  | { kind: 'same'; a: number; b: number }
  | { kind: 'different'; a: number; b: number };

/** A Knights-and-Knaves puzzle with a unique solution. */
export type KnightsKnavesTask = {
  names: string[];
  /** `statements[i]` is what `names[i]` says. */
  statements: Claim[];
  /** The unique consistent assignment. */
  solution: Record<string, Role>;
  difficulty: number;
  /** The puzzle in English, with answer-format instructions. */
  prompt: string;
};

const NAMES = [
  'Alice',
  'Bob',
  'Carol',
  'Dave',
  'Eve',
  'Frank',
  'Grace',
  'Heidi',
  'Ivan',
  'Judy',
  'Mallory',
  'Niaj',
  'Olivia',
  'Peggy',
  'Rupert',
  'Sybil',
  'Trent',
  'Victor',
  'Walter',
  'Zoe',
];

function holds(claim: Claim, knights: readonly boolean[]): boolean {
  switch (claim.kind) {
    case 'is':
      return knights[claim.person] === (claim.role === 'knight');
    case 'and':
      return holds(claim.left, knights) && holds(claim.right, knights);
    case 'or':
      return holds(claim.left, knights) || holds(claim.right, knights);
    case 'same':
      return knights[claim.a] === knights[claim.b];
    case 'different':
      return knights[claim.a] !== knights[claim.b];
  }
}

/** Every assignment (as knight flags) consistent with the statements. */
export function solveKnightsKnaves(statements: readonly Claim[]): boolean[][] {
  const count = statements.length;
  const solutions: boolean[][] = [];
  for (let mask = 0; mask < 1 << count; mask++) {
    const knights = Array.from({ length: count }, (_, index) => ((mask >> index) & 1) === 1);
    if (statements.every((claim, index) => holds(claim, knights) === knights[index]))
      solutions.push(knights);
  }
  return solutions;
}

function render(claim: Claim, names: readonly string[], speaker: number): string {
  const who = (person: number) => (person === speaker ? 'I' : names[person]!);
  const be = (person: number) => (person === speaker ? 'am' : 'is');
  switch (claim.kind) {
    case 'is':
      return `${who(claim.person)} ${be(claim.person)} a ${claim.role}`;
    case 'and':
      return `${render(claim.left, names, speaker)} and ${render(claim.right, names, speaker)}`;
    case 'or':
      return `${render(claim.left, names, speaker)} or ${render(claim.right, names, speaker)}`;
    case 'same':
    case 'different': {
      // "Bob and I", never "I and Bob"
      const [first, second] = claim.a === speaker ? [claim.b, claim.a] : [claim.a, claim.b];
      const kind = claim.kind === 'same' ? 'the same kind' : 'different kinds';
      return `${who(first)} and ${who(second)} are ${kind}`;
    }
  }
}

function randomClaim(rng: Rng, count: number, speaker: number, compound: boolean): Claim {
  const other = () => {
    if (count === 1) return speaker;
    let person = rng.nextInt(count - 1);
    if (person >= speaker) person++;
    return person;
  };
  const atom = (): Claim => ({
    kind: 'is',
    person: rng.next() < 0.8 ? other() : speaker,
    role: rng.next() < 0.5 ? 'knight' : 'knave',
  });
  const choice = rng.nextInt(compound ? 5 : 3);
  if (choice <= 1 || count < 2) return atom();
  if (choice === 2) {
    const a = other();
    return rng.next() < 0.5
      ? { kind: 'same', a: speaker, b: a }
      : { kind: 'different', a: speaker, b: a };
  }
  const left = atom();
  let right = atom();
  for (
    let guard = 0;
    guard < 4 && right.kind === 'is' && left.kind === 'is' && right.person === left.person;
    guard++
  ) {
    right = atom();
  }
  return { kind: choice === 3 ? 'and' : 'or', left, right };
}

/**
 * Generates a Knights-and-Knaves puzzle with a unique solution (checked by enumerating all 2^n
 * assignments). Difficulty 1–5 sets the number of inhabitants (2–6) and, from 3 on, allows
 * compound statements (and/or).
 *
 * @example
 * ```ts
 * const task = generateKnightsKnaves({ seed: 1, difficulty: 2 });
 * task.prompt;   // "A very special island is inhabited only by knights and knaves. …"
 * task.solution; // { Alice: 'knave', Bob: 'knight', Carol: 'knight' }
 * ```
 * @throws {InvalidArgumentError} for a bad seed or difficulty.
 */
export function generateKnightsKnaves(options: {
  seed: number | string | Rng;
  difficulty?: number;
}): KnightsKnavesTask {
  const { difficulty, rng } = readGeneratorOptions(options, 'generateKnightsKnaves', 2);
  const count = difficulty + 1;
  const names = rng.shuffle([...NAMES]).slice(0, count);
  for (;;) {
    const statements = names.map((_, speaker) => randomClaim(rng, count, speaker, difficulty >= 3));
    const solutions = solveKnightsKnaves(statements);
    if (solutions.length !== 1) continue;
    const knights = solutions[0]!;
    const solution: Record<string, Role> = {};
    names.forEach((name, index) => {
      solution[name] = knights[index] ? 'knight' : 'knave';
    });
    const lines = statements.map(
      (claim, speaker) => `${names[speaker]} says: "${capitalize(render(claim, names, speaker))}."`,
    );
    const prompt =
      `A very special island is inhabited only by knights and knaves. Knights always tell the truth, and knaves always lie. You meet ${count} inhabitants: ${names.join(', ')}.\n` +
      `${lines.join('\n')}\n` +
      'Who is a knight and who is a knave? Finish with one line per inhabitant inside <answer></answer>, e.g. "Alice is a knight".';
    return { names, statements, solution, difficulty, prompt };
  }
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** Result of {@link verifyKnightsKnaves}. */
export type KnightsKnavesResult = VerifyResult & {
  score: number;
  correct: boolean;
  /** The role the response gives each inhabitant (null when not stated). */
  claimed: Record<string, Role | null>;
  violations: string[];
};

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Verifies a Knights-and-Knaves answer. Reads the last `<answer>…</answer>` (else the text after the
 * last "conclusion"/"answer" marker, else the last 2000 characters) and, for each name, the roles
 * it is given there (`Alice is a knight`, `Alice: knave`, `Alice - knight`). A name given both roles
 * is a hedge. Score 1 when every inhabitant is named with the right role; with
 * `partialCredit`, the fraction right (a hedge counts as wrong).
 *
 * @example
 * ```ts
 * verifyKnightsKnaves('<answer>Alice is a knight\nBob is a knave</answer>', task).correct;
 * ```
 * @throws {InvalidArgumentError} for a malformed task (never for the response).
 */
export function verifyKnightsKnaves(
  response: string,
  task: Pick<KnightsKnavesTask, 'names' | 'solution'>,
  options: { partialCredit?: boolean } = {},
): KnightsKnavesResult {
  const start = performance.now();
  const functionName = 'verifyKnightsKnaves';
  validateOptions(options, { parameter: 'options', functionName, known: ['partialCredit'] });
  if (typeof response !== 'string') {
    throw new InvalidArgumentError({
      parameter: 'response',
      functionName,
      value: response,
      expected: 'a string',
    });
  }
  if (
    !task ||
    !Array.isArray(task.names) ||
    task.names.length === 0 ||
    typeof task.solution !== 'object'
  ) {
    throw new InvalidArgumentError({
      parameter: 'task',
      functionName,
      value: task,
      expected: 'a task with names and solution',
    });
  }
  for (const name of task.names) {
    if (task.solution[name] !== 'knight' && task.solution[name] !== 'knave') {
      throw new InvalidArgumentError({
        parameter: `task.solution.${name}`,
        functionName,
        value: task.solution[name],
        expected: "'knight' or 'knave'",
      });
    }
  }
  const close = response.lastIndexOf('</answer>');
  const open = close >= 0 ? response.lastIndexOf('<answer>', close) : -1;
  const region = open >= 0 ? response.slice(open + 8, close) : response.slice(-2000);
  const claimed: Record<string, Role | null> = {};
  const violations: string[] = [];
  let right = 0;
  for (const name of task.names) {
    const pattern = new RegExp(
      `\\b${escapeRegExp(name)}\\b[^\\n.;,]{0,24}?\\b(knights?|knaves?|truth-teller|liar)\\b`,
      'gi',
    );
    const roles = new Set<Role>();
    for (const match of region.matchAll(pattern)) {
      const word = match[1]!.toLowerCase();
      const negated = /\b(?:not|n't|never)\b/i.test(match[0]);
      let role: Role = word.startsWith('knight') || word === 'truth-teller' ? 'knight' : 'knave';
      if (negated) role = role === 'knight' ? 'knave' : 'knight';
      roles.add(role);
      // "Alice is a knight or a knave": a second role in the same clause is a hedge.
      const after = match.index + match[0].length;
      const clause = /^[^\n.;]{0,40}/.exec(region.slice(after, after + 40))![0];
      const other = /\b(knights?|knaves?|truth-teller|liar)\b/i.exec(clause);
      if (other && !task.names.some((other) => clause.includes(other))) {
        const otherWord = other[1]!.toLowerCase();
        roles.add(
          otherWord.startsWith('knight') || otherWord === 'truth-teller' ? 'knight' : 'knave',
        );
      }
    }
    if (roles.size === 2) {
      violations.push(`hedged:${name}`);
      claimed[name] = null;
      continue;
    }
    const role = roles.size === 1 ? [...roles][0]! : null;
    claimed[name] = role;
    if (role === null) violations.push(`missing:${name}`);
    else if (role === task.solution[name]) right++;
  }
  const total = task.names.length;
  const correct = right === total;
  const score = correct ? 1 : options.partialCredit ? right / total : 0;
  return {
    score,
    correct,
    claimed,
    extracted: task.names.map((name) => `${name}: ${claimed[name] ?? '?'}`).join(', '),
    reason: `${right}/${total} inhabitants identified correctly`,
    violations,
    timings: { totalMs: performance.now() - start },
  };
}
