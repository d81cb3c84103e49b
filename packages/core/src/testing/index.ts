export type { MockSampleScript } from './mock-sampler.js';
export { MockSampler, mockCompletion } from './mock-sampler.js';
