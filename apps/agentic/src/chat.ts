import type { ChatMessage, ToolSpec } from '@rlvr/core';
import {
  buildFamilyTokenizer,
  createTokenizer,
  type Tokenizer,
  type TokenizerFiles,
} from '@rlvr/model';
import type { TokenSequence } from '@rlvr/trainer';

/**
 * A compact chat template in Qwen's layout (ChatML turns, `<tool_call>` JSON calls, tool results
 * in a user turn of `<tool_response>` blocks) that lists tools by name only: a small model's
 * context stays short. Rollout renders every turn with it, as it would a checkpoint's own template.
 */
export const COMPACT_TOOL_TEMPLATE = [
  "{%- if tools %}{{- '<|im_start|>system\\ntools:' }}{%- for tool in tools %}{{- ' ' + tool.function.name }}{%- endfor %}{{- '<|im_end|>\\n' }}{%- endif %}",
  '{%- for message in messages %}',
  "{%- if message.role == 'tool' %}{{- '<|im_start|>user\\n<tool_response>\\n' + message.content + '\\n</tool_response><|im_end|>\\n' }}",
  "{%- else %}{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}{%- endif %}",
  '{%- endfor %}',
  "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}",
].join('');

/** Tools as the template's `tools` variable sees them (OpenAI's function shape, as rollout passes them). */
function templateTools(tools: readonly ToolSpec[]) {
  return tools.map(({ name, description, inputSchema }) => ({
    type: 'function',
    function: { name, description, parameters: inputSchema },
  }));
}

/** A Qwen-format byte-level BPE tokenizer with merges learned from `corpus` and the compact template. */
export function buildChatTokenizer(corpus: readonly string[], merges: number): TokenizerFiles {
  return buildFamilyTokenizer({
    family: 'qwen3',
    corpus,
    merges,
    chatTemplate: COMPACT_TOOL_TEMPLATE,
  });
}

/** One demonstrated assistant turn and what the environment answers (no answer: the last turn). */
export type DemoTurn = { assistant: string; tool?: string };

/**
 * A demonstration as SFT sequences, tokenized exactly as a multi-turn rollout tokenizes it: the
 * rendered first messages as the prompt, then per turn the assistant's tokens as the completion
 * (the last turn ends with EOS) with everything before it — earlier turns and the template's text
 * and tool results between turns — as prompt, so only policy tokens carry the SFT loss.
 */
export function demonstrationSequences(
  tokenizer: Tokenizer,
  messages: readonly ChatMessage[],
  tools: readonly ToolSpec[],
  turns: readonly DemoTurn[],
): TokenSequence[] {
  const variables = tools.length > 0 ? { tools: templateTools(tools) } : undefined;
  const render = (list: ChatMessage[], addGenerationPrompt: boolean) =>
    tokenizer.applyChatTemplate(list, { addGenerationPrompt, ...(variables ? { variables } : {}) });
  const encode = (text: string) => tokenizer.encode(text, { addSpecialTokens: false });
  const conversation: ChatMessage[] = [...messages];
  let context = encode(render(conversation, true));
  const out: TokenSequence[] = [];
  turns.forEach((turn, index) => {
    const last = index === turns.length - 1;
    const completion = [...encode(turn.assistant), ...(last ? [tokenizer.eosTokenId!] : [])];
    out.push({ promptIds: context, completionIds: completion });
    if (last || turn.tool === undefined) return;
    const sentinel = '\u2063turn\u2063';
    const text = render(
      [
        ...conversation,
        { role: 'assistant', content: sentinel },
        { role: 'tool', content: turn.tool },
      ],
      true,
    );
    const between = encode(text.slice(text.lastIndexOf(sentinel) + sentinel.length));
    conversation.push(
      { role: 'assistant', content: turn.assistant },
      { role: 'tool', content: turn.tool },
    );
    context = [...context, ...completion, ...between];
  });
  return out;
}

/** The tokenizer of `files`. */
export function tokenizerOf(files: TokenizerFiles): Tokenizer {
  return createTokenizer(files);
}
