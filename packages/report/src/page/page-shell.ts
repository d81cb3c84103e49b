import { escapeHtml } from './html.js';

/** The page's inline CSS: readable from 600 px wide up (charts keep their natural size and wrap). */
export const PAGE_CSS = `
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px auto; max-width: 1200px; color: #222; padding: 0 12px; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 28px; border-bottom: 1px solid #ddd; }
h3 { font-size: 15px; margin: 16px 0 6px; } h3 small { color: #777; font-weight: normal; }
div.table { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; margin: 8px 0; font-size: 13px; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: right; vertical-align: top; }
th:first-child, td:first-child { text-align: left; }
code { font-size: 12px; word-break: break-all; }
pre { background: #f6f8fa; padding: 8px; overflow-x: auto; font-size: 12px; }
.text { text-align: left; white-space: pre-wrap; word-break: break-word; max-width: 420px; max-height: 12em; overflow-y: auto; font: 12px/1.35 ui-monospace, monospace; }
.charts { display: flex; flex-wrap: wrap; gap: 8px; }
.charts svg { background: #fff; border: 1px solid #eee; max-width: 100%; height: auto; }
.ok { color: #1a7f37; font-weight: 600; } .no { color: #cf222e; font-weight: 600; }
`;

/** A self-contained HTML document (inline CSS, optional inline script, no external resources). @internal */
export function page(options: {
  title: string;
  body: string;
  script?: string;
  css?: string;
}): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(options.title)}</title>
<style>${options.css ?? PAGE_CSS}</style>
</head>
<body>
${options.body}
${options.script === undefined ? '' : `<script>${options.script}</script>`}
</body>
</html>
`;
}
