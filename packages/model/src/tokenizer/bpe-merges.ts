/**
 * A small byte-pair-encoding trainer and encoder over pre-split words (symbol sequences), used to
 * build test tokenizers in each family's real `tokenizer.json` format. @internal
 */

/** Learns up to `count` merges from `words` (each a symbol sequence with a frequency). */
export function learnMerges(
  words: readonly (readonly string[])[],
  count: number,
): [string, string][] {
  const tally = new Map<string, { symbols: string[]; frequency: number }>();
  for (const word of words) {
    const key = word.join('\u0000');
    const entry = tally.get(key);
    if (entry) entry.frequency++;
    else tally.set(key, { symbols: [...word], frequency: 1 });
  }
  const entries = [...tally.values()];
  const merges: [string, string][] = [];
  for (let step = 0; step < count; step++) {
    // The most frequent adjacent pair; ties go to the pair seen first (deterministic).
    const pairs = new Map<string, number>();
    for (const { symbols, frequency } of entries) {
      for (let i = 0; i + 1 < symbols.length; i++) {
        const pair = `${symbols[i]}\u0000${symbols[i + 1]}`;
        pairs.set(pair, (pairs.get(pair) ?? 0) + frequency);
      }
    }
    let best: string | undefined;
    let bestCount = 0;
    for (const [pair, frequency] of pairs) {
      if (frequency > bestCount) {
        best = pair;
        bestCount = frequency;
      }
    }
    if (best === undefined) break;
    const [left, right] = best.split('\u0000') as [string, string];
    merges.push([left, right]);
    for (const entry of entries) entry.symbols = mergePair(entry.symbols, left, right);
  }
  return merges;
}

function mergePair(symbols: readonly string[], left: string, right: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < symbols.length; i++) {
    if (symbols[i] === left && symbols[i + 1] === right) {
      out.push(left + right);
      i++;
    } else {
      out.push(symbols[i] as string);
    }
  }
  return out;
}

/**
 * Encodes one word by BPE: repeatedly merges the adjacent pair with the lowest merge rank
 * (leftmost first), as Hugging Face's `BPE` model does.
 */
export function applyMerges(word: readonly string[], ranks: ReadonlyMap<string, number>): string[] {
  let symbols = [...word];
  for (;;) {
    let bestRank = Number.POSITIVE_INFINITY;
    let bestIndex = -1;
    for (let i = 0; i + 1 < symbols.length; i++) {
      const rank = ranks.get(`${symbols[i]} ${symbols[i + 1]}`);
      if (rank !== undefined && rank < bestRank) {
        bestRank = rank;
        bestIndex = i;
      }
    }
    if (bestIndex < 0) return symbols;
    const left = symbols[bestIndex] as string;
    const right = symbols[bestIndex + 1] as string;
    symbols = mergePair(symbols, left, right);
  }
}
