import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Template } from '@huggingface/jinja';
import { Tokenizer as HfTokenizer } from '@huggingface/tokenizers';
import { InvalidArgumentError, validateOptions } from '@rlvr/core';
import type { TokenizerFiles } from '../checkpoint/checkpoint.js';
import { ModelLoadError } from '../errors/model-load-error.js';

/** One chat message for {@link Tokenizer.applyChatTemplate}. */
export type ChatMessage = { role: string; content: string };

/** Options of {@link Tokenizer.applyChatTemplate}. */
export type ChatTemplateOptions = {
  /** Append the assistant-turn header so the model continues as the assistant (default true). */
  addGenerationPrompt?: boolean;
  /** Extra variables passed to the template (e.g. `tools`, `enable_thinking`). */
  variables?: Record<string, unknown>;
};

/** A loaded tokenizer: `@huggingface/tokenizers` plus special tokens and the chat template. */
export interface Tokenizer {
  /** The files it was built from (save them with a checkpoint). */
  readonly files: TokenizerFiles;
  /** One more than the largest token id (may be below the model's padded `vocab_size`). */
  readonly vocabSize: number;
  readonly bosTokenId: number | undefined;
  readonly eosTokenId: number | undefined;
  readonly padTokenId: number | undefined;
  readonly unkTokenId: number | undefined;
  /** Ids of every special token (added tokens marked `special`). */
  readonly specialTokenIds: readonly number[];
  /** The Jinja chat template from `tokenizer_config.json`, if any. */
  readonly chatTemplate: string | undefined;
  /**
   * Token ids of `text`. `addSpecialTokens` (default true, as in Hugging Face) runs the tokenizer's
   * post-processor (e.g. Llama's BOS); special tokens written in the text are always recognized.
   */
  encode(text: string, options?: { addSpecialTokens?: boolean }): number[];
  /** Text of `ids`; `skipSpecialTokens` drops special tokens (default false). */
  decode(ids: readonly number[], options?: { skipSpecialTokens?: boolean }): string;
  /** Id of a token string, or undefined. */
  tokenToId(token: string): number | undefined;
  /** Token string of an id, or undefined. */
  idToToken(id: number): string | undefined;
  /**
   * Renders `messages` with the chat template (`@huggingface/jinja`), passing `bos_token`,
   * `eos_token`, `add_generation_prompt` and `options.variables`.
   * @throws {InvalidArgumentError} when the tokenizer has no chat template or a message is malformed.
   */
  applyChatTemplate(messages: readonly ChatMessage[], options?: ChatTemplateOptions): string;
}

function tokenContent(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (
    value !== null &&
    typeof value === 'object' &&
    typeof (value as { content?: unknown }).content === 'string'
  ) {
    return (value as { content: string }).content;
  }
  return undefined;
}

function pickChatTemplate(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) {
    const named = value as { name?: unknown; template?: unknown }[];
    const chosen = named.find((item) => item?.name === 'default') ?? named[0];
    return typeof chosen?.template === 'string' ? chosen.template : undefined;
  }
  return undefined;
}

/** The keys of {@link TokenizerFiles}. @internal */
export const TOKENIZER_FILES_KEYS = ['json', 'config'] as const;

/**
 * Builds a {@link Tokenizer} from in-memory `tokenizer.json` (+ `tokenizer_config.json`) objects.
 *
 * @example
 * ```ts
 * const tokenizer = createTokenizer(buildCharTokenizer({ characters: '0123456789+=' }));
 * tokenizer.encode('1+1=', { addSpecialTokens: false }); // [5, 15, 5, 16]
 * ```
 * @throws {ModelLoadError} `MODEL_LOAD_FAILED` when `@huggingface/tokenizers` rejects the files.
 */
export function createTokenizer(files: TokenizerFiles): Tokenizer {
  const functionName = 'createTokenizer';
  if (
    files === null ||
    typeof files !== 'object' ||
    files.json === null ||
    typeof files.json !== 'object'
  ) {
    throw new InvalidArgumentError({
      parameter: 'files',
      functionName,
      value: files,
      expected: '{ json: tokenizer.json object, config?: tokenizer_config.json object }',
    });
  }
  validateOptions(files, { parameter: 'files', functionName, known: TOKENIZER_FILES_KEYS });
  const config = (files.config ?? {}) as Record<string, unknown>;
  if (config === null || typeof config !== 'object') {
    throw new InvalidArgumentError({
      parameter: 'files.config',
      functionName,
      value: files.config,
      expected: 'a tokenizer_config.json object',
    });
  }
  let inner: HfTokenizer;
  try {
    inner = new HfTokenizer(files.json, config);
  } catch (error) {
    throw new ModelLoadError({
      path: 'tokenizer.json',
      reason: `@huggingface/tokenizers could not build it: ${error instanceof Error ? error.message : String(error)}`,
      cause: error,
    });
  }
  const added = Array.isArray((files.json as { added_tokens?: unknown }).added_tokens)
    ? (files.json as { added_tokens: { id?: unknown; content?: unknown; special?: unknown }[] })
        .added_tokens
    : [];
  const specialTokenIds = added
    .filter((token) => token?.special === true && typeof token.id === 'number')
    .map((token) => token.id as number);
  const vocab = inner.get_vocab(true);
  let maxId = -1;
  for (const id of vocab.values()) if (id > maxId) maxId = id;
  const idOf = (field: string): number | undefined => {
    const content = tokenContent(config[field]);
    return content === undefined ? undefined : inner.token_to_id(content);
  };
  const chatTemplate = pickChatTemplate(config.chat_template);
  let compiled: Template | undefined;
  const bosToken = tokenContent(config.bos_token);
  const eosToken = tokenContent(config.eos_token);

  return {
    files,
    vocabSize: maxId + 1,
    bosTokenId: idOf('bos_token'),
    eosTokenId: idOf('eos_token'),
    padTokenId: idOf('pad_token'),
    unkTokenId: idOf('unk_token'),
    specialTokenIds,
    chatTemplate,
    encode(text, options) {
      if (typeof text !== 'string') {
        throw new InvalidArgumentError({
          parameter: 'text',
          functionName: 'encode',
          value: text,
          expected: 'a string',
        });
      }
      if (options !== undefined) {
        validateOptions(options, {
          parameter: 'options',
          functionName: 'encode',
          known: ['addSpecialTokens'],
        });
      }
      const ids = inner.encode(text, { add_special_tokens: options?.addSpecialTokens ?? true }).ids;
      for (const [index, id] of ids.entries()) {
        if (id === undefined) {
          throw new InvalidArgumentError({
            parameter: 'text',
            functionName: 'encode',
            value: text,
            expected: `text the tokenizer can encode (token ${index} has no id and there is no unk token)`,
          });
        }
      }
      return ids;
    },
    decode(ids, options) {
      if (!Array.isArray(ids) || !ids.every((id) => Number.isInteger(id) && id >= 0)) {
        throw new InvalidArgumentError({
          parameter: 'ids',
          functionName: 'decode',
          value: ids,
          expected: 'an array of non-negative integer token ids',
        });
      }
      if (options !== undefined) {
        validateOptions(options, {
          parameter: 'options',
          functionName: 'decode',
          known: ['skipSpecialTokens'],
        });
      }
      if (ids.length === 0) return '';
      return inner.decode(ids as number[], {
        skip_special_tokens: options?.skipSpecialTokens ?? false,
      });
    },
    tokenToId: (token) => inner.token_to_id(token),
    idToToken: (id) => inner.id_to_token(id),
    applyChatTemplate(messages, options) {
      const name = 'applyChatTemplate';
      if (chatTemplate === undefined) {
        throw new InvalidArgumentError({
          parameter: 'tokenizer',
          functionName: name,
          value: config.chat_template,
          expected: 'a tokenizer whose tokenizer_config.json has a chat_template',
        });
      }
      if (
        !Array.isArray(messages) ||
        !messages.every(
          (message) =>
            message !== null &&
            typeof message === 'object' &&
            typeof message.role === 'string' &&
            typeof message.content === 'string',
        )
      ) {
        throw new InvalidArgumentError({
          parameter: 'messages',
          functionName: name,
          value: messages,
          expected: 'an array of { role: string, content: string }',
        });
      }
      const opts = validateOptions<ChatTemplateOptions>(options, {
        parameter: 'options',
        functionName: name,
        known: ['addGenerationPrompt', 'variables'],
      });
      compiled ??= new Template(chatTemplate);
      return compiled.render({
        ...(opts.variables ?? {}),
        messages,
        bos_token: bosToken ?? '',
        eos_token: eosToken ?? '',
        add_generation_prompt: opts.addGenerationPrompt ?? true,
      });
    },
  };
}

/**
 * Loads a tokenizer from a checkpoint folder (`tokenizer.json` + optional
 * `tokenizer_config.json`) or from in-memory files (e.g. `checkpoint.tokenizer`).
 *
 * @example
 * ```ts
 * const tokenizer = await loadTokenizer('models/SmolLM2-135M-Instruct');
 * const prompt = tokenizer.applyChatTemplate([{ role: 'user', content: 'What is 2+2?' }]);
 * const ids = tokenizer.encode(prompt, { addSpecialTokens: false });
 * ```
 * @throws {ModelLoadError} `MODEL_LOAD_FAILED` for a missing or malformed file.
 */
export async function loadTokenizer(dirOrFiles: string | TokenizerFiles): Promise<Tokenizer> {
  if (typeof dirOrFiles !== 'string') return createTokenizer(dirOrFiles);
  const readJson = async (file: string, required: boolean): Promise<object | undefined> => {
    const path = join(dirOrFiles, file);
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (error) {
      if (!required && (error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw new ModelLoadError({ path, reason: 'cannot read the file', cause: error });
    }
    try {
      const value = JSON.parse(text) as unknown;
      if (value === null || typeof value !== 'object' || Array.isArray(value)) {
        throw new Error('not a JSON object');
      }
      return value;
    } catch (error) {
      throw new ModelLoadError({ path, reason: 'not a valid JSON object', cause: error });
    }
  };
  const json = (await readJson('tokenizer.json', true)) as object;
  const config = await readJson('tokenizer_config.json', false);
  return createTokenizer(config ? { json, config } : { json });
}
