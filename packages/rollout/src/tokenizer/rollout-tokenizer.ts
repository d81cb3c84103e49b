import { InvalidArgumentError } from '@rlvr/core';
import { createTokenizer, type TokenizerFiles } from '@rlvr/model';

export type { TokenizerFiles };

/** What the sampler needs from a tokenizer. @internal */
export interface RolloutTokenizer {
  /** Token ids of `text` (with the tokenizer's special tokens, e.g. BOS, as Hugging Face adds them). */
  encode(text: string): number[];
  /** Text of `tokenIds`, skipping special tokens (EOS, padding). */
  decode(tokenIds: number[]): string;
  /** Renders `text` as one user message with the chat template (generation prompt added). */
  applyChatTemplate(text: string): number[];
  /** Id of the tokenizer's EOS token, if it has one. */
  eosTokenIds: number[];
  /** Token ids of `text` without added special tokens (text a chat template rendered). */
  encodeRendered(text: string): number[];
  /** Whether the tokenizer has a chat template (multi-turn rollouts need one). */
  hasChatTemplate: boolean;
  /** Renders chat messages with the template (`tools` in the OpenAI function shape). */
  renderChat(
    messages: readonly { role: string; content: string }[],
    options: { tools?: readonly object[]; addGenerationPrompt: boolean },
  ): string;
}

/**
 * Builds the sampler's tokenizer from checkpoint tokenizer files with `@rlvr/model`'s
 * `createTokenizer` (plain data, so every worker thread can rebuild it).
 * @throws {InvalidArgumentError} when the files are not `{ json, config? }`; `MODEL_LOAD_FAILED`
 * when `@huggingface/tokenizers` rejects them.
 * @internal
 */
export async function createRolloutTokenizer(files: TokenizerFiles): Promise<RolloutTokenizer> {
  if (
    files === null ||
    typeof files !== 'object' ||
    files.json === null ||
    typeof files.json !== 'object'
  ) {
    throw new InvalidArgumentError({
      parameter: 'options.tokenizer',
      functionName: 'createOnnxSampler',
      value: files,
      expected:
        'tokenizer files { json: <parsed tokenizer.json>, config?: <parsed tokenizer_config.json> }',
    });
  }
  const tokenizer = createTokenizer(files);
  return {
    encode: (text) => tokenizer.encode(text),
    decode: (tokenIds) => tokenizer.decode(tokenIds, { skipSpecialTokens: true }),
    applyChatTemplate(text) {
      if (tokenizer.chatTemplate === undefined) {
        throw new InvalidArgumentError({
          parameter: 'options.promptFormat',
          functionName: 'OnnxSampler.sample',
          value: 'chat',
          expected:
            "a tokenizer whose tokenizer_config.json has a chat_template (or promptFormat 'raw')",
        });
      }
      const rendered = tokenizer.applyChatTemplate([{ role: 'user', content: text }], {
        addGenerationPrompt: true,
      });
      return tokenizer.encode(rendered, { addSpecialTokens: false });
    },
    eosTokenIds: tokenizer.eosTokenId === undefined ? [] : [tokenizer.eosTokenId],
    encodeRendered: (text) => tokenizer.encode(text, { addSpecialTokens: false }),
    hasChatTemplate: tokenizer.chatTemplate !== undefined,
    renderChat: (messages, { tools, addGenerationPrompt }) =>
      tokenizer.applyChatTemplate(messages, {
        addGenerationPrompt,
        ...(tools && tools.length > 0 ? { variables: { tools } } : {}),
      }),
  };
}
