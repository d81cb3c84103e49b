export type {
  ServedModelFault,
  ServedRequest,
} from './errors/served-model-error.js';
export { ServedModelError } from './errors/served-model-error.js';
export type { OpenAISampler } from './openai-sampler.js';
export { createOpenAISampler } from './openai-sampler.js';
export type {
  LogprobsMode,
  NStrategy,
  OpenAIApi,
  OpenAISamplerOptions,
  ServerKind,
} from './options.js';
export {
  MANAGED_BODY_FIELDS,
  OPENAI_SAMPLER_DEFAULTS,
  OPENAI_SAMPLER_OPTION_KEYS,
  OPENAI_SAMPLER_OPTIONS,
} from './options.js';
export { promptSeed } from './request.js';
export type { TransportStats } from './transport.js';
export { VERSION } from './version.js';
