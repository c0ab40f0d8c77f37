// The page of a team's hub (issue 30): a real `uq serve` (SQLite store, one token) holding
// 1,000, 3,000 and 10,000 pending batches, posted with keys by 20 agents; then, per scale, in
// headless chromium: the time to the first question shown (from the start of navigation;
// median of 3 fresh tabs), the main thread's long tasks (> 50 ms) in the first 20 s, the tab's
// JS heap after them (after a forced GC), and the time from typing the last batch's words in
// the filter box until that batch is on the page; and `GET /api/v1/questions` (p50 of 15) whole
// and in pages. `node bench-hub.js` prints the figures (UQ_BENCH_SCALES=1000,3000 for others);
// `node bench-hub.js --check` posts 200 and checks every step, with a 3 s window: no figures.
// The hub binary: UQ_BIN, else target/<triple>/{release,debug}/uq (cargo build -p user-questions-cli).

import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { ROOT, launch } from './harness.js';

const check = process.argv.includes('--check');
const scales = check ? [200] : (process.env.UQ_BENCH_SCALES || '1000,3000,10000').split(',').map(Number);
const WINDOW_MS = check ? 3000 : 20000;
const AGENTS = 20;
const TOKEN = 'bench-token_0123456789';

function hubBinary() {
  if (process.env.UQ_BIN) return process.env.UQ_BIN;
  const target = process.env.CARGO_TARGET_DIR ? resolve(ROOT, process.env.CARGO_TARGET_DIR) : join(ROOT, 'target');
  const dirs = [process.env.CARGO_BUILD_TARGET, ...(existsSync(target) ? readdirSync(target) : [])].filter(Boolean);
  const candidates = [];
  for (const profile of check ? ['debug', 'release'] : ['release', 'debug']) {
    for (const dir of dirs) candidates.push(join(target, dir, profile, 'uq'));
    candidates.push(join(target, profile, 'uq'));
  }
  const found = candidates.find((p) => existsSync(p));
  if (!found) throw new Error('build it first: cargo build -p user-questions-cli (or set UQ_BIN)');
  return found;
}

async function startHub(dir) {
  const child = spawn(hubBinary(), ['serve', '--listen', '127.0.0.1:0', '--store', `sqlite:${join(dir, 'hub.db')}`, '--token', TOKEN], { stdio: ['ignore', 'ignore', 'pipe'] });
  const url = await new Promise((resolveUrl, reject) => {
    child.once('exit', (code) => reject(new Error(`uq serve exited (${code})`)));
    createInterface({ input: child.stderr }).on('line', (line) => {
      const m = /^open (\S+)/.exec(line);
      if (m) resolveUrl(m[1]);
    });
  });
  return { child, url, base: new URL(url).origin };
}

const auth = { Authorization: `Bearer ${TOKEN}` };

/** Posts batches `from`..`to`-1 (8 at a time), each with its key and one of 20 agents. */
async function post(base, from, to) {
  let next = from;
  const worker = async () => {
    while (next < to) {
      const i = next++;
      const body = {
        agentId: `agent-${String(i % AGENTS).padStart(2, '0')}`,
        key: `bench-${i}`,
        questions: [
          {
            id: 'q',
            header: i % 2 ? 'Deploy' : 'Review',
            question: `Roll out build b${i}x to production?`,
            detail: 'Some supporting detail for the question.',
            options: [{ label: 'Yes (Recommended)', description: 'Roll it out now.' }, { label: 'No' }, { label: 'Later' }],
          },
        ],
      };
      const response = await fetch(`${base}/api/v1/asks`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      if (response.status !== 201) throw new Error(`POST /api/v1/asks: ${response.status} ${await response.text()}`);
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
}

async function timed(url, runs = 15) {
  const times = [];
  let body;
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    const response = await fetch(url, { headers: auth });
    body = await response.json();
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  return { ms: times[Math.floor(runs / 2)], body };
}

/** Records long tasks from the start of the document (buffered). */
function watchLongTasks() {
  window.__long = [];
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) window.__long.push([e.startTime, e.duration]);
  }).observe({ type: 'longtask', buffered: true });
}

async function firstShown(browser, url, n) {
  const context = await browser.newContext({ viewport: { width: 1000, height: 900 } });
  await context.addInitScript(watchLongTasks);
  const page = await context.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push(e.message));
  await page.goto(url, { waitUntil: 'commit' });
  await page.waitForFunction(() => document.querySelector('section.batch h2'), null, { polling: 'raf', timeout: 60000 });
  const first = await page.evaluate(() => performance.now());
  await page.waitForFunction((count) => document.title === `(${count}) user-questions`, n, { timeout: 60000 });
  return { context, page, first, problems };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const dir = mkdtempSync(join(tmpdir(), 'uq-bench-hub-'));
const hub = await startHub(dir);
const browser = await launch();
const rows = [];
try {
  let posted = 0;
  for (const n of scales) {
    await post(hub.base, posted, n);
    posted = n;
    const whole = await timed(`${hub.base}/api/v1/questions`, check ? 3 : 15);
    if (whole.body.pending.length !== n) throw new Error(`listed ${whole.body.pending.length} of ${n}`);
    const first = await timed(`${hub.base}/api/v1/questions?after=0&limit=50`, check ? 3 : 15);
    if (first.body.total !== n || first.body.pending.length !== 50 || first.body.more !== true) throw new Error('first page');
    const lastAfter = whole.body.pending[n - 1000 > 0 ? n - 1001 : 0].ticket;
    const deep = await timed(`${hub.base}/api/v1/questions?after=${lastAfter}&limit=1000`, check ? 3 : 15);
    if (deep.body.more !== false) throw new Error('last page');

    // One tab watched for the window; two more only for the first question.
    const watched = await firstShown(browser, hub.url, n);
    const firsts = [watched.first];
    const { page } = watched;
    const elapsed = await page.evaluate(() => performance.now());
    if (elapsed < WINDOW_MS) await page.waitForTimeout(WINDOW_MS - elapsed);
    const long = await page.evaluate((w) => window.__long.filter(([start]) => start < w), WINDOW_MS);
    const longMs = long.reduce((sum, [, d]) => sum + d, 0);
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('HeapProfiler.collectGarbage');
    await cdp.send('Performance.enable');
    const { metrics } = await cdp.send('Performance.getMetrics');
    const heap = metrics.find((m) => m.name === 'JSHeapUsedSize').value;
    const nodes = metrics.find((m) => m.name === 'Nodes').value;
    // The last batch posted, found by the words of its question typed in the filter box.
    const words = `b${n - 1}x`;
    const found = await page.evaluate(async (text) => {
      const filter = document.getElementById('filter');
      filter.focus();
      const t = performance.now();
      filter.value = text;
      filter.dispatchEvent(new InputEvent('input', { bubbles: true, inputType: 'insertText', data: text }));
      for (;;) {
        await new Promise((r) => requestAnimationFrame(r));
        const hit = [...document.querySelectorAll('section.batch')].filter((s) => s.textContent.includes(text));
        if (hit.length === 1 && document.querySelectorAll('section.batch').length === 1) return performance.now() - t;
        if (performance.now() - t > 30000) throw new Error(`not found: ${text}`);
      }
    }, words);
    const drawn = await page.evaluate(() => document.querySelectorAll('section.batch').length);
    if (watched.problems.length) throw new Error(watched.problems.join('\n'));
    await watched.context.close();
    for (let run = 0; run < (check ? 0 : 2); run++) {
      const again = await firstShown(browser, hub.url, n);
      firsts.push(again.first);
      if (again.problems.length) throw new Error(again.problems.join('\n'));
      await again.context.close();
    }
    rows.push({ n, first: median(firsts), firsts, longMs, longCount: long.length, heap, nodes, found, drawn, whole: whole.ms, firstPage: first.ms, deep: deep.ms });
  }
} finally {
  await browser.close();
  hub.child.kill('SIGTERM');
  await new Promise((r) => (hub.child.exitCode !== null ? r() : hub.child.once('exit', r)));
  rmSync(dir, { recursive: true, force: true });
}
if (check) {
  console.log(`hub page bench self-check: ok (${scales.join(', ')} pending; found the last by the filter)`);
} else {
  for (const r of rows) {
    console.log(
      `  hub page, ${r.n} pending (${AGENTS} agents), headless chromium: first question ${r.first.toFixed(0)} ms (median of 3: ${r.firsts.map((x) => x.toFixed(0)).join(', ')}), ` +
        `long tasks in the first 20 s ${r.longMs.toFixed(0)} ms (${r.longCount}), JS heap ${(r.heap / 1048576).toFixed(1)} MiB, DOM nodes ${r.nodes}, ` +
        `last batch found ${r.found.toFixed(0)} ms after typing; GET /api/v1/questions p50: whole ${r.whole.toFixed(1)} ms, first page of 50 ${r.firstPage.toFixed(1)} ms, last page of 1000 ${r.deep.toFixed(1)} ms`,
    );
  }
}
