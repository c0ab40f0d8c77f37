// Answers the one question waiting on a page mounted in a host's web app (§25), in Debian's
// chromium: the Python (FastAPI) and Node (Express, Hono) mount tests run it.
//
//   node person/tests/page/answer_mounted.js URL LABEL [COOKIE=VALUE]
//
// Opens URL (the page under its prefix) with the host's sign-in cookie, waits for the page to
// be connected and for a question, checks LABEL, submits, and waits until the question leaves.
// Prints one JSON line: {"me": the "signed in as" text, "title": the tab title before the
// answer, "problems": page and console errors}. Exits 1 on failure.

import { launch } from './harness.js';

const [url, label, cookie] = process.argv.slice(2);
const browser = await launch();
try {
  const context = await browser.newContext({ viewport: { width: 390, height: 800 } });
  if (cookie) {
    const [name, value] = cookie.split('=');
    await context.addCookies([{ name, value, url: new URL(url).origin }]);
  }
  const page = await context.newPage();
  const problems = [];
  page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console: ${message.text()}`);
  });
  await page.goto(url);
  await page.waitForSelector('#status.ok');
  const b = page.locator('section.batch').first();
  await b.waitFor();
  const title = await page.title();
  const me = (await page.locator('#me').textContent()) ?? '';
  await b.getByLabel(label, { exact: true }).check();
  await b.getByRole('button', { name: /^Submit answer/ }).click();
  await b.waitFor({ state: 'detached' });
  process.stdout.write(`${JSON.stringify({ me, title, problems })}\n`);
} catch (error) {
  process.stderr.write(`${error.stack}\n`);
  process.exitCode = 1;
} finally {
  await browser.close();
}
