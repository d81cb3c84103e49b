import { createCalculatorTool, createToolEnvironment } from '@rlvr/tools';

// One environment per trajectory: the calculator as its tool, reward 1 for the right answer.
export const environment = createToolEnvironment({
  setup: ({ answer }) => ({
    tools: [createCalculatorTool()],
    reward: ({ turns }) => (turns.at(-1)?.text.includes(String(answer)) ? 1 : 0),
  }),
});

// What a sampler does with it (sampleTrajectories runs this loop for every trajectory):
export async function demo(): Promise<{ toolResult: string; reward: number | undefined }> {
  const input = {
    prompt: 'What is 1234 * 5678?',
    answer: 7006652,
    promptIndex: 0,
    sampleIndex: 0,
    trajectoryId: 'demo',
  };
  const env = await environment(input);
  await env.reset(input);
  const call = await env.step({
    index: 0,
    text: '<tool_call>\n{"name": "calculator", "arguments": {"expression": "1234 * 5678"}}\n</tool_call>',
    toolCalls: [{ name: 'calculator', arguments: { expression: '1234 * 5678' } }],
    malformedToolCalls: [],
    finishReason: 'tool-call',
  });
  const answer = await env.step({
    index: 1,
    text: 'The answer is 7006652.',
    toolCalls: [],
    malformedToolCalls: [],
    finishReason: 'stop',
  });
  await env.close?.();
  return { toolResult: call.messages[0]!.content, reward: answer.reward };
}
