// The page's first render with 1,000 pending questions in headless chromium, from the start of
// navigation (median of 5 fresh tabs): until the first batches are on screen with the count in
// the title, and until the page's window of the list (its first 30 batches; the rest on "Show
// more", docs/reference.md §19) is drawn.
// `node bench.js` prints the figure; `node bench.js --check` renders 50 once and checks only.

import { Server, launch } from './harness.js';

const check = process.argv.includes('--check');
const count = check ? 50 : Number(process.env.UQ_BENCH_PENDING || 1000);
const runs = check ? 1 : 5;

const server = await Server.start();
const browser = await launch();
try {
  for (let i = 0; i < count; i++) {
    server.ask(`b${i}`, {
      questions: [
        {
          id: 'q',
          header: 'Bench',
          question: `Question ${i}: which option?`,
          detail: 'Some supporting detail for the question.',
          options: [{ label: 'A (Recommended)', description: 'The first choice.' }, { label: 'B' }, { label: 'C' }],
        },
      ],
    });
  }
  const token = new URL(server.url).searchParams.get('token');
  for (;;) {
    const response = await fetch(`${server.base}/api/v1/questions`, { headers: { Authorization: `Bearer ${token}` } });
    if ((await response.json()).pending.length === count) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const times = [];
  const firstTimes = [];
  for (let run = 0; run < runs; run++) {
    const context = await browser.newContext();
    const page = await context.newPage();
    const problems = [];
    page.on('pageerror', (e) => problems.push(e.message));
    await page.goto(server.url, { waitUntil: 'commit' });
    await page.waitForFunction((n) => document.title === `(${n}) user-questions` && document.querySelector('section.batch'), count, { polling: 'raf', timeout: 60000 });
    firstTimes.push(await page.evaluate(() => performance.now()));
    const window = Math.min(count, 30);
    await page.waitForFunction((n) => document.querySelectorAll('section.batch').length === n, window, { polling: 100, timeout: 120000 });
    times.push(await page.evaluate(() => performance.now()));
    if (await page.title() !== `(${count}) user-questions`) throw new Error(`title: ${await page.title()}`);
    if (problems.length) throw new Error(problems.join('\n'));
    await context.close();
  }
  times.sort((a, b) => a - b);
  firstTimes.sort((a, b) => a - b);
  if (check) console.log(`web page bench self-check: ok (${count} pending, the window of ${Math.min(count, 30)} drawn)`);
  else {
    const mid = Math.floor(runs / 2);
    console.log(`  page, ${count} pending, headless chromium (median of ${runs}): first screen ${firstTimes[mid].toFixed(0)} ms, the window of 30 drawn ${times[mid].toFixed(0)} ms`);
  }
} finally {
  await browser.close();
  await server.stop();
}
