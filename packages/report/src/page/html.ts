/** Escapes text for HTML element content and double-quoted attribute values. */
export function escapeHtml(text: string): string {
  return text
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;');
}

/**
 * An HTML table in a `<div class="table">` (style it `overflow-x: auto` so a wide table scrolls
 * instead of widening the page). Header cells are escaped here; body cells are inserted as given (they are HTML:
 * escape text with {@link escapeHtml} first).
 */
export function htmlTable(
  headers: readonly string[],
  rows: readonly (readonly string[])[],
): string {
  const head = headers.map((header) => `<th>${escapeHtml(header)}</th>`).join('');
  const body = rows.map((row) => `<tr>${row.map((cell) => `<td>${cell}</td>`).join('')}</tr>`);
  return `<div class="table"><table><thead><tr>${head}</tr></thead><tbody>${body.join('')}</tbody></table></div>`;
}

/**
 * A script for a report page: checks in the browser that every chart (`svg[data-chart]`) was laid
 * out (each line of two or more points has a non-empty box) and that no text of a chart lies outside its box (clipped
 * legends or labels), logs `console.error` for each failure, and records the counts on `<body>`
 * as `data-charts-total`, `data-charts-rendered`, `data-charts-clipped` and
 * `data-charts-overflowing` (charts wider than the window), and `data-page-scrolls-sideways`
 * (`true` when anything makes the page wider than the window); a headless-browser test reads them
 * from the DOM dump.
 */
export const CHART_CHECK_SCRIPT = `
(function () {
  var charts = document.querySelectorAll('svg[data-chart]');
  var rendered = 0;
  var clipped = 0;
  var overflowing = 0;
  charts.forEach(function (svg) {
    var name = svg.getAttribute('data-chart');
    var lines = svg.querySelectorAll('polyline');
    var ok = lines.length > 0;
    lines.forEach(function (line) {
      // A one-point series is a point (drawn as a circle): its line has an empty box.
      if (line.points.numberOfItems < 2) return;
      var box = line.getBBox();
      if (!(box.width > 0 || box.height > 0)) ok = false;
    });
    var rect = svg.getBoundingClientRect();
    if (ok && rect.width > 0) rendered++;
    else console.error('chart did not render: ' + name);
    if (rect.right > document.documentElement.clientWidth + 0.5) overflowing++;
    var view = svg.viewBox.baseVal;
    svg.querySelectorAll('text').forEach(function (text) {
      var box = text.getBBox();
      if (text.transform.baseVal.numberOfItems > 0) return; // the rotated y label
      if (box.x < view.x - 0.5 || box.y < view.y - 0.5 || box.x + box.width > view.x + view.width + 0.5 || box.y + box.height > view.y + view.height + 0.5) {
        clipped++;
        console.error('text outside chart ' + name + ': ' + text.textContent);
      }
    });
  });
  document.body.setAttribute('data-charts-total', String(charts.length));
  document.body.setAttribute('data-charts-rendered', String(rendered));
  document.body.setAttribute('data-charts-clipped', String(clipped));
  document.body.setAttribute('data-charts-overflowing', String(overflowing));
  var root = document.documentElement;
  document.body.setAttribute('data-page-scrolls-sideways', String(root.scrollWidth > root.clientWidth + 1));
})();
`;
