export { fanOut } from './sinks/fan-out.js';
export { createJsonlSink, type JsonlSinkOptions } from './sinks/jsonl-sink.js';
export { IF_EXISTS_VALUES, type IfExists, type MetricsSink } from './sinks/metrics-sink.js';
export { VERSION } from './version.js';
