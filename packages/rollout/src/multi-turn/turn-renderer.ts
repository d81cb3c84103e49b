import { type ChatMessage, InvalidArgumentError, type ToolSpec } from '@rlvr/core';
import type { RolloutTokenizer } from '../tokenizer/rollout-tokenizer.js';

/** Stands in for the assistant turn when rendering what follows it (never in real text). */
const SENTINEL = '\u2063rlvr-assistant-turn\u2063';

/** Tools in the shape chat templates render (OpenAI's function tools). @internal */
export function templateTools(tools: readonly ToolSpec[] | undefined): object[] | undefined {
  return tools?.map(({ name, description, inputSchema }) => ({
    type: 'function',
    function: { name, description, parameters: inputSchema },
  }));
}

/**
 * Renders a conversation with the chat template into tokens, turn by turn, so that the tokens of a
 * trajectory are exactly the policy's plus what the template puts between turns:
 * - `prompt(messages, tools)`: the first messages with the generation prompt;
 * - `after(conversation, messages, endedWithEos)`: the tokens after an assistant turn, up to the
 *   next generation prompt — the template's end of the assistant turn, the environment's messages
 *   (tool results wrapped as the template wraps them) and the next generation prompt. It renders the
 *   conversation with the turn replaced by a sentinel and keeps the text after it, so the
 *   assistant's own tokens are never re-encoded; when the turn ended with EOS (the template's turn
 *   end) the leading copy of it is dropped.
 * @internal
 */
export class TurnRenderer {
  private readonly tools: object[] | undefined;

  constructor(
    private readonly tokenizer: RolloutTokenizer,
    tools: readonly ToolSpec[] | undefined,
    private readonly functionName: string,
  ) {
    if (!tokenizer.hasChatTemplate) {
      throw new InvalidArgumentError({
        parameter: 'options.tokenizer',
        functionName,
        value: 'no chat_template',
        expected:
          'a tokenizer whose tokenizer_config.json has a chat_template (multi-turn rollouts render every turn with it)',
      });
    }
    this.tools = templateTools(tools);
  }

  prompt(messages: readonly ChatMessage[]): number[] {
    const text = this.tokenizer.renderChat(messages, {
      tools: this.tools,
      addGenerationPrompt: true,
    });
    return this.tokenizer.encodeRendered(text);
  }

  after(
    conversation: readonly ChatMessage[],
    messages: readonly ChatMessage[],
    lastPolicyToken: number | undefined,
  ): number[] {
    const text = this.tokenizer.renderChat(
      [...conversation, { role: 'assistant', content: SENTINEL }, ...messages],
      { tools: this.tools, addGenerationPrompt: true },
    );
    const at = text.lastIndexOf(SENTINEL);
    if (at < 0) {
      throw new InvalidArgumentError({
        parameter: 'options.tokenizer.chat_template',
        functionName: this.functionName,
        value: 'a template that drops assistant content',
        expected: 'a chat template that renders assistant messages (their content verbatim)',
      });
    }
    const ids = this.tokenizer.encodeRendered(text.slice(at + SENTINEL.length));
    if (
      lastPolicyToken !== undefined &&
      this.tokenizer.eosTokenIds.includes(lastPolicyToken) &&
      ids[0] === lastPolicyToken
    ) {
      ids.shift();
    }
    return ids;
  }
}
