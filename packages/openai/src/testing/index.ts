export type {
  OpenAICompatibleServer,
  OpenAICompatibleServerOptions,
  ServedDialect,
  ServerFault,
  ServerLogEntry,
  ServerTokenizer,
} from './openai-compatible-server.js';
export { startOpenAICompatibleServer } from './openai-compatible-server.js';
