import { describe, expect, it } from 'vitest';
import { demo } from './calculator-environment.js';

describe('README example: a calculator environment', () => {
  it('runs the call and scores the answer', async () => {
    expect(await demo()).toEqual({ toolResult: '7006652', reward: 1 });
  });
});
