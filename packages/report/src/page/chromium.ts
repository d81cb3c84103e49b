import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/** The Chromium binary on PATH (`chromium` on Debian; CI installs it), or undefined. */
export function findChromium(): string | undefined {
  for (const name of ['chromium', 'chromium-browser', 'google-chrome']) {
    const found = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' });
    if (found.status === 0 && found.stdout.trim()) return found.stdout.trim();
  }
  return undefined;
}

/** Options of {@link renderInChromium}. */
export type RenderInChromiumOptions = {
  /** Kill Chromium after this long. Default 90 000 ms. */
  timeoutMs?: number;
  /** The window's CSS size `[width, height]`. Default Chromium's (800 × 600). */
  windowSize?: readonly [number, number];
};

/**
 * Loads an HTML file in headless Chromium (fresh profile, no network features) and returns the
 * serialized DOM after scripts ran, plus the console messages Chromium logged. For tests of
 * report pages (see `CHART_CHECK_SCRIPT`); `binary` from {@link findChromium}.
 */
export async function renderInChromium(
  binary: string,
  htmlPath: string,
  options: RenderInChromiumOptions = {},
): Promise<{ dom: string; console: string[]; exitCode: number | null }> {
  const { timeoutMs = 90_000, windowSize } = options;
  const profile = mkdtempSync(join(tmpdir(), 'rlvr-chromium-'));
  try {
    const args = [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      `--user-data-dir=${profile}`,
      '--enable-logging=stderr',
      '--v=0',
      '--virtual-time-budget=5000',
      ...(windowSize ? [`--window-size=${windowSize[0]},${windowSize[1]}`] : []),
      '--dump-dom',
      pathToFileURL(htmlPath).href,
    ];
    return await new Promise((resolve, reject) => {
      const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
      });
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
      });
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`chromium did not finish within ${timeoutMs} ms`));
      }, timeoutMs);
      child.on('error', reject);
      child.on('close', (exitCode) => {
        clearTimeout(timer);
        const consoleLines = stderr
          .split('\n')
          .filter((line) => /CONSOLE|Uncaught|SyntaxError/.test(line));
        resolve({ dom: stdout, console: consoleLines, exitCode });
      });
    });
  } finally {
    rmSync(profile, { recursive: true, force: true });
  }
}
