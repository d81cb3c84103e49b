export {
  type ConsoleSinkOptions,
  createConsoleSink,
  DEFAULT_CONSOLE_METRICS,
  formatMetricLine,
} from './sinks/console-sink.js';
export { type CsvSinkOptions, createCsvSink } from './sinks/csv-sink.js';
export { fanOut } from './sinks/fan-out.js';
export { createJsonlSink, type JsonlSinkOptions } from './sinks/jsonl-sink.js';
export { IF_EXISTS_VALUES, type IfExists, type MetricsSink } from './sinks/metrics-sink.js';
export {
  createTensorBoardSink,
  type TensorBoardSinkOptions,
} from './sinks/tensorboard/tensorboard-sink.js';
export { VERSION } from './version.js';
