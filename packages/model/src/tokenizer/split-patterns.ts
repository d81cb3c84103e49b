/**
 * The pre-tokenizer regexes of Qwen2/Qwen3 and Llama 3 as their `tokenizer.json` files write them
 * (Rust `regex` syntax), and the same in JavaScript syntax for training. @internal
 */
export const SPLIT_PATTERNS = {
  qwen: {
    hf: "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    digits: '\\p{N}',
  },
  llama3: {
    hf: "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    digits: '\\p{N}{1,3}',
  },
} as const;
