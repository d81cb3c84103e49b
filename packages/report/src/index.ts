export { findChromium, type RenderInChromiumOptions, renderInChromium } from './page/chromium.js';
export { CHART_CHECK_SCRIPT, escapeHtml, htmlTable } from './page/html.js';
export {
  CHART_COLORS,
  type ChartSeries,
  formatTick,
  type LineChartOptions,
  lineChart,
  niceTicks,
  smooth,
} from './page/line-chart.js';
export { PAGE_CSS } from './page/page-shell.js';
export {
  type CheckpointInfo,
  type CompletionRow,
  type RunFolder,
  readRunFolder,
  type TraceRow,
} from './page/read-run.js';
export {
  type RunReportOptions,
  renderRunReport,
  type WriteRunReportOptions,
  writeRunReport,
} from './page/run-report.js';
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
