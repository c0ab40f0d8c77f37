// The question page in a real browser: every kind of question, keyboard only, hostile text,
// several tabs, questions leaving on their own, deadlines, a phone-sized screen; people of an
// access file signed in with their own tokens (§23).

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import { Server, batch, launch, open, openPage, shot } from './harness.js';

const PLAN = `# Migrate the build to Cargo workspaces

1. Move each crate under crates/.
2. Share dependency versions in [workspace.dependencies].
3. Run the whole test suite; fix what breaks.

A line that is long enough to wrap on a phone screen without any horizontal scrolling at all, really.`;

function planReview(plan = PLAN) {
  return {
    id: 'plan',
    header: 'Plan',
    question: 'Approve this plan?',
    detail: plan,
    options: [
      { label: 'Approve', description: 'Start carrying out the plan.' },
      { label: 'Revise', description: 'Keep planning, with my feedback.' },
      { label: 'Reject', description: 'Drop this plan.' },
    ],
    intent: { kind: 'plan-review', approve: 'Approve' },
  };
}

const PKG = {
  id: 'pkg',
  header: 'Package',
  question: 'Which package manager should the project use?',
  detail: 'The lock file will be committed.',
  options: [
    { label: 'pnpm (Recommended)', description: 'Fast, strict, saves disk space.' },
    { label: 'npm', description: 'Ships with Node.' },
    { label: 'yarn' },
  ],
};

const FEATURES = {
  id: 'features',
  header: 'Features',
  question: 'Which features should be enabled?',
  multiSelect: true,
  options: [
    { label: 'Logging', description: 'Structured logs to stderr.' },
    { label: 'Metrics' },
    { label: 'Tracing', description: 'OpenTelemetry spans.' },
  ],
};

const NAME = { id: 'name', question: 'What should the service be called?' };

let browser;
let server;
let n = 0;
/** A fresh ask name. */
const fresh = (prefix) => `${prefix}-${++n}`;

before(async () => {
  browser = await launch();
  server = await Server.start();
});

afterEach(async () => {
  await server.cancelAll();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

/** Waits for a batch to appear and returns its ticket. */
async function ticketOf(page, text) {
  const section = page.locator('section.batch', { hasText: text }).last();
  await section.waitFor();
  return Number(await section.getAttribute('data-ticket'));
}

function noProblems(page) {
  assert.deepEqual(page.problems, [], 'no script errors');
}

describe('the question page', () => {
  it('answers a single-select question and shows its parts as the terminal does', async () => {
    const { context, page } = await open(browser, server);
    const name = fresh('single');
    server.ask(name, { questions: [PKG] });
    const ticket = await ticketOf(page, PKG.question);
    const b = batch(page, ticket);
    assert.equal(await page.title(), '(1) user-questions');
    // A screen reader is told (in a polite live region) that a question came.
    assert.equal(await page.locator('#announce[aria-live=polite]').textContent(), `New question: Package: ${PKG.question}`);
    const box = await page.locator('#announce').boundingBox();
    assert.ok(box.width <= 1 && box.height <= 1, `not shown (${JSON.stringify(box)})`);
    assert.equal(await b.locator('.tag').textContent(), 'Package');
    assert.equal(await b.locator('.question-text').textContent(), PKG.question);
    assert.equal(await b.locator('.detail').textContent(), PKG.detail);
    assert.equal(await b.locator('input[type=radio]').count(), 5, 'three options, Other, Skip');
    const first = b.locator('.option').first();
    assert.equal(await first.locator('.label').textContent(), 'pnpm');
    assert.equal(await first.locator('.badge.recommended').textContent(), 'Recommended');
    assert.equal(await first.locator('.description').textContent(), 'Fast, strict, saves disk space.');
    // Every control has a label.
    assert.equal(await b.getByLabel('npm', { exact: true }).count(), 1);
    assert.equal(await b.getByLabel('Other', { exact: true }).count(), 1);
    assert.equal(await b.getByLabel(`Other answer for: ${PKG.question}`).count(), 1);
    assert.equal(await b.getByLabel('Skip', { exact: true }).count(), 1);
    await shot(page, 'single-select');

    await b.getByLabel('pnpm Recommended', { exact: true }).check();
    await b.getByRole('button', { name: 'Submit answer' }).click();
    const result = await server.result(name);
    assert.deepEqual(result.answer, { answers: [{ id: 'pkg', selected: ['pnpm (Recommended)'] }] });
    await b.waitFor({ state: 'detached' });
    assert.equal(await page.title(), 'user-questions');
    assert.match(await page.locator('.notice').first().textContent(), /Answer sent: Package: Which package manager/);
    assert.equal(await page.locator('#empty').isVisible(), true);
    await shot(page, 'answered');
    noProblems(page);
    await context.close();
  });

  it('answers a multi-select question with Other', async () => {
    const { context, page } = await open(browser, server);
    const name = fresh('multi');
    server.ask(name, { questions: [FEATURES] });
    const b = batch(page, await ticketOf(page, FEATURES.question));
    assert.equal(await b.locator('input[type=checkbox]').count(), 5, 'three options, Other, Skip');
    assert.equal(await b.locator('input[type=radio]').count(), 0);
    await b.getByLabel('Logging', { exact: true }).check();
    await b.getByLabel('Tracing', { exact: true }).check();
    await b.getByLabel(`Other answer for: ${FEATURES.question}`).fill('  Profiling  ');
    assert.equal(await b.getByLabel('Other', { exact: true }).isChecked(), true, 'typing chooses Other');
    await shot(page, 'multi-select');
    await b.getByRole('button', { name: 'Submit answer' }).click();
    const result = await server.result(name);
    assert.deepEqual(result.answer, {
      answers: [{ id: 'features', selected: ['Logging', 'Tracing'], custom: 'Profiling' }],
    });
    noProblems(page);
    await context.close();
  });

  it('shows a plan review with the plan in a box and the approve option marked', async () => {
    const { context, page } = await open(browser, server);
    const name = fresh('plan');
    server.ask(name, { questions: [planReview()] });
    const b = batch(page, await ticketOf(page, 'Approve this plan?'));
    assert.equal(await b.locator('pre.plan').textContent(), PLAN);
    assert.equal(await b.locator('.detail').count(), 0, 'the plan is not shown as plain detail');
    const options = await b.locator('.option .label').allTextContents();
    assert.deepEqual(options, ['Approve', 'Revise', 'Reject', 'Other', 'Skip']);
    const approve = b.locator('.option.approve-option');
    assert.equal(await approve.count(), 1);
    assert.equal(await approve.locator('.label').textContent(), 'Approve');
    assert.equal(await approve.locator('.badge.approve').textContent(), 'Approves the plan');
    await shot(page, 'plan-review');
    // Feedback as free text revises (§17).
    await b.getByLabel('Feedback or another answer for: Approve this plan?').fill('Keep crates/ flat.');
    await b.getByRole('button', { name: 'Submit answer' }).click();
    const result = await server.result(name);
    assert.deepEqual(result.answer, { answers: [{ id: 'plan', selected: [], custom: 'Keep crates/ flat.' }] });

    const approveName = fresh('plan');
    server.ask(approveName, { questions: [planReview()] });
    const again = batch(page, await ticketOf(page, 'Approve this plan?'));
    await again.getByLabel('Approve Approves the plan', { exact: true }).check();
    await again.getByRole('button', { name: 'Submit answer' }).click();
    assert.deepEqual((await server.result(approveName)).answer, { answers: [{ id: 'plan', selected: ['Approve'] }] });
    noProblems(page);
    await context.close();
  });

  it('skips questions, and asks for a choice before submitting', async () => {
    const { context, page } = await open(browser, server);
    const name = fresh('skip');
    server.ask(name, { questions: [PKG, FEATURES, NAME] });
    const b = batch(page, await ticketOf(page, PKG.question));
    // Nothing chosen for a single-select question: the page says so and sends nothing.
    await b.getByRole('button', { name: 'Submit answers' }).click();
    assert.match(await b.locator('.error').textContent(), /Choose an answer for “Which package manager/);
    assert.equal(server.settled(name), false);
    const [pkg, features] = [0, 1].map((i) => b.locator('fieldset.question').nth(i));
    // Every question with options has a Skip of its own.
    assert.equal(await b.getByLabel('Skip', { exact: true }).count(), 2);
    await pkg.getByLabel('Skip', { exact: true }).check();
    await features.getByLabel('Skip', { exact: true }).check();
    await b.getByRole('button', { name: 'Submit answers' }).click();
    const result = await server.result(name);
    assert.deepEqual(result.answer, {
      answers: [
        { id: 'pkg', selected: [] },
        { id: 'features', selected: [] },
        { id: 'name', selected: [] },
      ],
    });
    noProblems(page);
    await context.close();
  });

  it('skips a multi-select question with its Skip control, which clears and locks its choices', async () => {
    const { context, page } = await open(browser, server);
    const name = fresh('multi-skip');
    server.ask(name, { questions: [FEATURES] });
    const b = batch(page, await ticketOf(page, FEATURES.question));
    const skip = b.getByLabel('Skip', { exact: true });
    assert.equal(await skip.count(), 1, 'a labelled Skip control');
    assert.equal(await skip.getAttribute('type'), 'checkbox');
    assert.equal(await b.locator('.option.skip .description').textContent(), 'Leave this question unanswered.');
    const logging = b.getByLabel('Logging', { exact: true });
    const other = b.getByLabel('Other', { exact: true });
    const otherText = b.getByLabel(`Other answer for: ${FEATURES.question}`);
    await logging.check();
    await otherText.fill('Profiling');
    assert.equal(await other.isChecked(), true);
    // Skip clears the choices and the Other text, and locks them.
    await skip.check();
    for (const control of [logging, b.getByLabel('Metrics', { exact: true }), b.getByLabel('Tracing', { exact: true }), other]) {
      assert.equal(await control.isChecked(), false);
      assert.equal(await control.isDisabled(), true);
    }
    assert.equal(await otherText.inputValue(), '');
    assert.equal(await otherText.isDisabled(), true);
    await shot(page, 'multi-select-skipped');
    // Unchecked, the choices are back (empty).
    await skip.uncheck();
    assert.equal(await logging.isDisabled(), false);
    assert.equal(await otherText.isDisabled(), false);
    assert.equal(await logging.isChecked(), false);
    await logging.check();
    // From the keyboard: Space on Skip.
    await skip.focus();
    await page.keyboard.press('Space');
    assert.equal(await skip.isChecked(), true);
    assert.equal(await logging.isChecked(), false);
    // A submission the server refuses gives the controls back, the skipped ones still locked.
    await page.route('**/api/v1/questions/*/answer', (route) =>
      route.fulfill({ status: 422, contentType: 'application/json', body: '{"error":{"code":"BAD_ANSWER","message":"refused for the test"}}' }),
    );
    await b.getByRole('button', { name: 'Submit answer' }).click();
    await page.waitForFunction(() => document.querySelector('.batch .error').textContent === 'refused for the test');
    assert.equal(await skip.isDisabled(), false);
    assert.equal(await logging.isDisabled(), true);
    assert.equal(await otherText.isDisabled(), true);
    await page.unroute('**/api/v1/questions/*/answer');
    await b.getByRole('button', { name: 'Submit answer' }).click();
    assert.deepEqual((await server.result(name)).answer, { answers: [{ id: 'features', selected: [] }] });
    // The browser logs the refused request itself; nothing else may be logged.
    page.problems = page.problems.filter((p) => !p.includes('status of 422'));
    noProblems(page);
    await context.close();
  });

  it('answers a batch of three with one submit', async () => {
    const { context, page } = await open(browser, server);
    const name = fresh('three');
    server.ask(name, { questions: [PKG, FEATURES, NAME] });
    const b = batch(page, await ticketOf(page, PKG.question));
    assert.equal(await b.locator('fieldset.question').count(), 3);
    const unlabelled = await page.evaluate(() =>
      [...document.querySelectorAll('input, textarea, button')]
        .filter((e) => !(e.labels && e.labels.length) && !e.getAttribute('aria-label') && !(e.tagName === 'BUTTON' && e.textContent.trim()))
        .map((e) => e.outerHTML),
    );
    assert.deepEqual(unlabelled, [], 'every control is labelled');
    assert.equal(await b.getByRole('button', { name: 'Submit answers' }).count(), 1);
    await b.getByLabel('npm', { exact: true }).check();
    await b.getByLabel('Metrics', { exact: true }).check();
    await b.getByLabel('Your answer (leave empty to skip)').fill('ledger');
    await shot(page, 'batch-of-three');
    await b.getByRole('button', { name: 'Submit answers' }).click();
    assert.deepEqual((await server.result(name)).answer, {
      answers: [
        { id: 'pkg', selected: ['npm'] },
        { id: 'features', selected: ['Metrics'] },
        { id: 'name', selected: [], custom: 'ledger' },
      ],
    });
    noProblems(page);
    await context.close();
  });

  it('works with the keyboard alone', async () => {
    const { context, page } = await open(browser, server);
    const name = fresh('keys');
    server.ask(name, { questions: [PKG, FEATURES] });
    const b = batch(page, await ticketOf(page, PKG.question));
    const active = () => page.evaluate(() => {
      const e = document.activeElement;
      return e ? `${e.tagName.toLowerCase()}${e.type ? `:${e.type}` : ''}${e.labels && e.labels[0] ? `:${e.labels[0].textContent}` : ''}${e.tagName === 'BUTTON' ? `:${e.textContent}` : ''}` : '';
    });
    await page.keyboard.press('Tab');
    assert.match(await active(), /^input:radio:pnpm Recommended/);
    await page.keyboard.press('ArrowDown');
    assert.match(await active(), /^input:radio:npm/);
    assert.equal(await b.getByLabel('npm', { exact: true }).isChecked(), true, 'arrows choose in a radio group');
    await page.keyboard.press('Tab'); // the Other text
    assert.equal(await active(), 'input:text');
    await page.keyboard.press('Tab'); // Logging
    assert.match(await active(), /^input:checkbox:Logging/);
    await page.keyboard.press('Space');
    await page.keyboard.press('Tab'); // Metrics
    await page.keyboard.press('Tab'); // Tracing
    await page.keyboard.press('Space');
    await page.keyboard.press('Tab'); // Other checkbox
    await page.keyboard.press('Tab'); // Other text
    await page.keyboard.type('Audit log');
    await page.keyboard.press('Tab'); // Skip
    assert.match(await active(), /^input:checkbox:Skip/);
    await page.keyboard.press('Tab');
    assert.equal(await active(), 'button:submit:Submit answers');
    await page.keyboard.press('Enter');
    assert.deepEqual((await server.result(name)).answer, {
      answers: [
        { id: 'pkg', selected: ['npm'] },
        { id: 'features', selected: ['Logging', 'Tracing'], custom: 'Audit log' },
      ],
    });
    // The focus does not get lost when the batch leaves.
    await b.waitFor({ state: 'detached' });
    assert.equal(await page.evaluate(() => document.activeElement.id), 'title');
    noProblems(page);
    await context.close();
  });

  it('shows hostile text as text', async () => {
    const { context, page } = await open(browser, server);
    const x = (field) => `<img src=x onerror="window.__xss='${field}'"><script>window.__xss='${field}'</script><b>${field}</b>`;
    const hostile = {
      id: 'x',
      header: x('header'),
      question: x('question'),
      detail: x('detail'),
      options: [
        { label: x('label'), description: x('description') },
        { label: `${x('recommended')} (Recommended)` },
      ],
    };
    const plan = { ...planReview(x('plan')), id: 'p' };
    const free = { id: 'f', question: x('free') };
    const name = fresh('xss');
    server.ask(name, { questions: [hostile, plan, free], agentId: x('agent') });
    const b = batch(page, await ticketOf(page, 'window.__xss'));
    await page.waitForTimeout(200);
    assert.equal(await page.evaluate(() => window.__xss), undefined, 'no injected script ran');
    assert.equal(await page.locator('img').count(), 0, 'no element was injected');
    assert.equal(await page.locator('script').count(), 1, 'only the page module');
    assert.equal(await page.locator('main b').count(), 0);
    assert.equal(await b.locator('.tag').first().textContent(), x('header'));
    assert.equal(await b.locator('.question-text').first().textContent(), x('question'));
    assert.equal(await b.locator('.detail').textContent(), x('detail'));
    assert.equal(await b.locator('pre.plan').textContent(), x('plan'));
    assert.equal(await b.locator('.option .label').first().textContent(), x('label'));
    assert.equal(await b.locator('.option .description').first().textContent(), x('description'));
    assert.match(await b.locator('.meta').textContent(), /Asked by <img src=x/);
    await shot(page, 'hostile-text');
    await b.locator('fieldset.question').first().locator('input[type=radio]').first().check();
    await b.locator('fieldset.question').nth(1).getByLabel('Skip', { exact: true }).check();
    await b.getByRole('button', { name: 'Submit answers' }).click();
    const result = await server.result(name);
    assert.deepEqual(result.answer.answers[0], { id: 'x', selected: [x('label')] });
    assert.equal(await page.evaluate(() => window.__xss), undefined);
    noProblems(page);
    await context.close();
  });

  it('removes a question answered in another tab, with a notice', async () => {
    const { context, page: one } = await open(browser, server);
    const two = await openPage(context, server);
    const name = fresh('tabs');
    server.ask(name, { questions: [PKG] });
    const ticket = await ticketOf(one, PKG.question);
    await ticketOf(two, PKG.question);
    assert.equal(await two.title(), '(1) user-questions');
    await batch(one, ticket).getByLabel('yarn', { exact: true }).check();
    await batch(one, ticket).getByRole('button', { name: 'Submit answer' }).click();
    await batch(two, ticket).waitFor({ state: 'detached' });
    assert.match(await two.locator('.notice').first().textContent(), /Answered elsewhere: Package: Which package manager/);
    assert.equal(await two.title(), 'user-questions');
    await shot(two, 'answered-elsewhere');
    assert.deepEqual((await server.result(name)).answer, { answers: [{ id: 'pkg', selected: ['yarn'] }] });
    noProblems(one);
    noProblems(two);
    await context.close();
  });

  it('removes withdrawn, expired and dismissed questions with a notice', async () => {
    const { context, page } = await open(browser, server);
    const withdrawn = fresh('withdrawn');
    server.ask(withdrawn, { questions: [{ ...NAME, header: 'Withdrawn' }] });
    const w = await ticketOf(page, 'Withdrawn');
    server.withdraw(withdrawn);
    await batch(page, w).waitFor({ state: 'detached' });
    assert.match(await page.locator('.notice').first().textContent(), /Withdrawn by the asker: Withdrawn: What should/);
    assert.equal((await server.result(withdrawn)).error.code, 'ASK_ABORTED');

    const expiring = fresh('expiring');
    server.ask(expiring, { questions: [{ ...NAME, header: 'Expiring' }], timeoutMs: 1500 });
    const e = await ticketOf(page, 'Expiring');
    assert.match(await batch(page, e).locator('.countdown').textContent(), /^Expires in 0:0[12]$/);
    await batch(page, e).waitFor({ state: 'detached', timeout: 10000 });
    assert.match(await page.locator('.notice').first().textContent(), /Expired without an answer: Expiring: What should/);
    const timedOut = await server.result(expiring);
    assert.equal(timedOut.error.code, 'ASK_TIMED_OUT');
    assert.equal(timedOut.error.message, 'the user did not answer ask_user_question within 1500 ms');

    const dismissed = fresh('dismissed');
    server.ask(dismissed, { questions: [{ ...NAME, header: 'Dismiss me' }] });
    const d = await ticketOf(page, 'Dismiss me');
    await batch(page, d).getByRole('button', { name: `Dismiss question ${d} without answering` }).click();
    await batch(page, d).waitFor({ state: 'detached' });
    assert.equal((await server.result(dismissed)).error.code, 'ASK_CANCELLED');
    assert.equal(await page.locator('.notice').count(), 3);
    await shot(page, 'notices');
    noProblems(page);
    await context.close();
  });

  it('moves a deadline with "More time"', async () => {
    const { context, page } = await open(browser, server);
    const name = fresh('more');
    // Ten minutes left: five more must still move the deadline (extend keeps the later of the
    // deadline and now + ms, so the page asks for what is left plus five minutes).
    server.ask(name, { questions: [{ ...PKG, header: 'Deadline' }], timeoutMs: 600000 });
    const ticket = await ticketOf(page, 'Deadline');
    const b = batch(page, ticket);
    const countdown = b.locator('.countdown');
    assert.match(await countdown.textContent(), /^Expires in (9:59|10:00)$/);
    const expiresAt = async () =>
      page.evaluate(async (t) => (await (await fetch('/api/v1/questions')).json()).pending.find((p) => p.ticket === t).expiresAt, ticket);
    const before = await expiresAt();
    await shot(page, 'deadline');
    await b.getByRole('button', { name: `More time for question ${ticket} (5 more minutes)` }).click();
    await page.waitForFunction(
      (t) => /^Expires in (14:5\d|15:00)$/.test(document.querySelector(`section[data-ticket="${t}"] .countdown`).textContent),
      ticket,
    );
    const later = await expiresAt();
    const moved = Date.parse(later) - Date.parse(before);
    assert.ok(moved > 290000 && moved < 310000, `five more minutes: ${before} → ${later}`);
    assert.equal(await countdown.getAttribute('datetime'), later);
    assert.match(await page.locator('.notice').first().textContent(), /More time \(\+(4:5\d|5:0\d)\) for: Deadline: Which package manager/);
    // Another tab learns of it from the stream.
    const other = await openPage(context, server);
    assert.match(await batch(other, ticket).locator('.countdown').textContent(), /^Expires in (14:5\d|15:00)$/);
    await b.getByLabel('npm', { exact: true }).check();
    await b.getByRole('button', { name: 'Submit answer' }).click();
    assert.deepEqual((await server.result(name)).answer, { answers: [{ id: 'pkg', selected: ['npm'] }] });
    noProblems(page);
    noProblems(other);
    await context.close();
  });

  it('says so when "More time" did not move the deadline', async () => {
    const { context, page } = await open(browser, server);
    const name = fresh('unmoved');
    server.ask(name, { questions: [{ ...PKG, header: 'Unmoved' }], timeoutMs: 600000 });
    const ticket = await ticketOf(page, 'Unmoved');
    const b = batch(page, ticket);
    const countdown = b.locator('.countdown');
    const before = await countdown.getAttribute('datetime');
    // The server is asked for a millisecond only: it keeps the later deadline, unchanged.
    const asked = [];
    await page.route('**/api/v1/questions/*/extend', (route) => {
      asked.push(JSON.parse(route.request().postData()));
      return route.continue({ postData: JSON.stringify({ ms: 1 }) });
    });
    await b.getByRole('button', { name: `More time for question ${ticket} (5 more minutes)` }).click();
    await page.locator('.notice').first().waitFor();
    assert.match(await page.locator('.notice').first().textContent(), /The deadline did not move for: Unmoved: Which package manager/);
    assert.equal(await page.locator('.notice', { hasText: 'More time' }).count(), 0, 'no claim of more time');
    assert.equal(await countdown.getAttribute('datetime'), before);
    assert.match(await countdown.textContent(), /^Expires in (9:5\d|10:00)$/);
    // What the page asked for: what was left plus five minutes.
    assert.equal(asked.length, 1);
    assert.ok(asked[0].ms > 890000 && asked[0].ms <= 900000, `ms ${asked[0].ms}`);
    await page.unroute('**/api/v1/questions/*/extend');
    noProblems(page);
    await context.close();
  });

  it('fits a 390×844 phone screen without horizontal scrolling, light and dark', async () => {
    for (const colorScheme of ['light', 'dark']) {
      const { context, page } = await open(browser, server, {
        viewport: { width: 390, height: 844 },
        deviceScaleFactor: 2,
        isMobile: true,
        hasTouch: true,
        colorScheme,
      });
      const name = fresh('phone');
      const long = { ...PKG, id: 'long', header: 'A-very-long-unbroken-header-that-could-overflow', options: [{ label: 'x'.repeat(120) }, { label: 'npm' }] };
      server.ask(name, { questions: [planReview(`${PLAN}\n${'y'.repeat(300)}`), long], timeoutMs: 600000 });
      const b = batch(page, await ticketOf(page, 'Approve this plan?'));
      const widths = await page.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth, document.body.scrollWidth]);
      assert.ok(widths[0] <= 390 && widths[2] <= 390, `no horizontal scroll (${widths}) in ${colorScheme}`);
      const background = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
      if (colorScheme === 'dark') assert.equal(background, 'rgb(13, 17, 23)');
      else assert.equal(background, 'rgb(246, 247, 249)');
      await shot(page, `phone-${colorScheme}`);
      await shot(page, `phone-${colorScheme}-screen`, false);
      await b.getByRole('button', { name: `Dismiss question ${await b.getAttribute('data-ticket')} without answering` }).click();
      assert.equal((await server.result(name)).error.code, 'ASK_CANCELLED');
      noProblems(page);
      await context.close();
    }
  });

  it('keeps a direction override in an agent id or a question inside it', async () => {
    const { context, page } = await open(browser, server);
    const name = fresh('bidi');
    const RLO = '\u202e';
    server.ask(name, {
      questions: [{ id: 'b', header: `Head${RLO}`, question: `Bidi${RLO}?`, options: [{ label: `One${RLO}`, description: 'first' }] }],
      agentId: `agent${RLO}`,
    });
    const ticket = await ticketOf(page, 'Bidi');
    const b = batch(page, ticket);
    assert.equal(await b.locator('.meta bdi').textContent(), `agent${RLO}`);
    // The page's own text after the agent id (the time) still reads left to right: its first
    // character is drawn left of its last.
    const order = await b.locator('.meta time').evaluate((time) => {
      const text = time.firstChild;
      const at = (i) => {
        const range = document.createRange();
        range.setStart(text, i);
        range.setEnd(text, i + 1);
        return range.getBoundingClientRect().x;
      };
      return [at(0), at(text.length - 1)];
    });
    assert.ok(order[0] < order[1], `the time reads left to right (${order})`);
    for (const selector of ['.tag', '.question-text', '.option .label', '.option .description', '.meta bdi']) {
      assert.equal(await b.locator(selector).first().evaluate((e) => getComputedStyle(e).unicodeBidi), 'isolate', selector);
    }
    await b.getByRole('button', { name: `Dismiss question ${ticket} without answering` }).click();
    assert.equal((await server.result(name)).error.code, 'ASK_CANCELLED');
    assert.equal(await page.locator('.notice bdi').first().textContent(), `Head${RLO}: Bidi${RLO}?`);
    noProblems(page);
    await context.close();
  });

  it('chooses an option with a tap anywhere on its card, its description too', async () => {
    const { context, page } = await open(browser, server, { viewport: { width: 375, height: 667 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
    const name = fresh('tap');
    server.ask(name, { questions: [PKG] });
    const b = batch(page, await ticketOf(page, PKG.question));
    const radios = b.getByRole('radio');
    const tap = async (locator, where) => {
      const box = await locator.boundingBox();
      await page.touchscreen.tap(where === 'edge' ? box.x + box.width - 6 : box.x + box.width / 2, box.y + box.height / 2);
    };
    await tap(b.locator('.option .description').first(), 'middle');
    assert.equal(await radios.nth(0).isChecked(), true, 'a tap on the description chose pnpm');
    await tap(b.locator('.option').nth(1), 'edge');
    assert.equal(await radios.nth(1).isChecked(), true, "a tap on the card's edge chose npm");
    // The Other card's text box still takes the tap (and typing there chooses Other).
    await tap(b.locator('.other-text'), 'middle');
    assert.equal(await b.locator('.other-text').evaluate((e) => e === document.activeElement), true);
    await page.keyboard.type('bun');
    assert.equal(await b.getByLabel('Other', { exact: true }).isChecked(), true);
    await b.getByRole('button', { name: 'Submit answer' }).click();
    assert.deepEqual((await server.result(name)).answer, { answers: [{ id: 'pkg', selected: [], custom: 'bun' }] });
    noProblems(page);
    await context.close();
  });

  it('says an answer was not sent when the question was settled elsewhere first, and shows that', async () => {
    // A tab that missed the news (its event stream cannot connect) still shows the question.
    const name = fresh('stale');
    const { context, page, b, ticket } = await staleTab(name, { questions: [{ ...PKG, header: 'Stale' }] });
    await server.cancelAll();
    assert.equal((await server.result(name)).error.code, 'ASK_CANCELLED');
    await b.getByLabel('npm', { exact: true }).check();
    await b.getByRole('button', { name: 'Submit answer' }).click();
    await batch(page, ticket).waitFor({ state: 'detached' });
    const first = page.locator('.notice').first();
    assert.match(await first.textContent(), /Not sent — this question was already answered, dismissed or closed elsewhere: Stale: Which package manager/);
    assert.equal(await first.evaluate((e) => e === document.activeElement), true, 'the notice has the focus');
    await context.close();
  });

  it('gives a question without options a text box in a group, not a radio group', async () => {
    const { context, page } = await open(browser, server);
    const name = fresh('free');
    server.ask(name, { questions: [NAME, PKG] });
    const b = batch(page, await ticketOf(page, NAME.question));
    const lists = b.locator('.options');
    assert.equal(await lists.nth(0).getAttribute('role'), 'group');
    assert.equal(await lists.nth(0).getByRole('radio').count(), 0);
    assert.equal(await lists.nth(1).getAttribute('role'), 'radiogroup');
    await b.getByRole('button', { name: `Dismiss question ${await b.getAttribute('data-ticket')} without answering` }).click();
    assert.equal((await server.result(name)).error.code, 'ASK_CANCELLED');
    noProblems(page);
    await context.close();
  });

  it('says the server may have stopped once it has been gone a while', async () => {
    const gone = await Server.start();
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.clock.install();
    await page.goto(gone.url);
    await page.waitForSelector('#status.ok');
    await gone.stop();
    await page.waitForFunction(() => document.getElementById('status').textContent === 'Connection lost. Reconnecting…');
    await page.clock.fastForward(20000);
    await page.waitForFunction(() => /may have stopped/.test(document.getElementById('status').textContent), null, { timeout: 20000 });
    assert.equal(
      await page.locator('#status').textContent(),
      'Cannot reach the server (the program that asked, or the hub): it may have stopped. This page reconnects when it is back.',
    );
    await context.close();
  });

  it('keeps retrying a stream the browser gave up on (a proxy answering 502) and says when it has been a while', async () => {
    const own = await Server.start();
    const context = await browser.newContext();
    try {
      await retriesUntilLive(context, own);
    } finally {
      await context.close();
      await own.stop();
    }
  });

  /** The test above: a page on `own` whose event streams a proxy refuses until it stops. */
  async function retriesUntilLive(context, own) {
    const page = await context.newPage();
    await page.clock.install();
    // A proxy in front of a server that is away: the browser closes an event stream that gets
    // a 502 and never retries it by itself; the page must.
    let refused = 0;
    await page.route('**/api/v1/events', (route) => {
      refused += 1;
      return route.fulfill({ status: 502, contentType: 'text/plain', body: 'Bad Gateway' });
    });
    await page.goto(own.url);
    await page.waitForFunction(() => document.getElementById('status').textContent === 'Disconnected. Retrying…');
    await page.clock.fastForward(20000);
    await page.waitForFunction(() => /may have stopped/.test(document.getElementById('status').textContent), null, { timeout: 20000 });
    assert.ok(refused >= 2, `the page opened ${refused} stream(s): it did not retry`);
    // The server is reachable again: the next retry opens a live stream.
    await page.unroute('**/api/v1/events');
    await page.clock.fastForward(4000);
    await page.waitForSelector('#status.ok');
    assert.equal(await page.locator('#status').textContent(), 'Live: new questions appear by themselves.');
  }

  it('asks for the token when opened without it', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const response = await page.goto(`${server.base}/`);
    assert.equal(response.status(), 401);
    assert.equal(response.headers()['content-security-policy'], "default-src 'self'");
    await context.close();
  });
});

/**
 * Counts, per path, the API responses the page has read and acted on (`window.__read[path]`):
 * a task queued when a response's JSON is parsed runs after the microtasks that use it.
 */
async function countReads(page) {
  await page.addInitScript(() => {
    window.__read = {};
    const json = Response.prototype.json;
    Response.prototype.json = async function () {
      const value = await json.call(this);
      const path = new URL(this.url).pathname.replace(/\/\d+\//, '/T/');
      setTimeout(() => (window.__read[path] = (window.__read[path] || 0) + 1), 0);
      return value;
    };
  });
}

/**
 * A tab whose event stream cannot connect (it misses every change), showing the question asked
 * as `name`: drawn from the list the page fetches on load (reloaded until the ask is there).
 */
async function staleTab(name, request) {
  const context = await browser.newContext({ viewport: { width: 1000, height: 500 } });
  await context.route('**/api/v1/events', (route) => route.abort());
  const page = await context.newPage();
  await page.goto(server.url);
  server.ask(name, request);
  const text = request.questions[0].header;
  const b = page.locator('section.batch', { hasText: text });
  for (let i = 0; i < 50 && (await b.count()) === 0; i++) {
    await page.waitForTimeout(100);
    await page.reload();
  }
  return { context, page, b, ticket: Number(await b.getAttribute('data-ticket')) };
}

describe('the question page when the connection, the server or other screens get in the way', () => {
  it('keeps a question the stream brought while the list it checks against was on its way', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    page.problems = [];
    page.on('pageerror', (error) => page.problems.push(`pageerror: ${error.message}`));
    await countReads(page);
    // The list the page fetches once its stream is open is taken now and delivered later.
    let lists = 0;
    let taken;
    const listTaken = new Promise((r) => (taken = r));
    let release;
    const released = new Promise((r) => (release = r));
    await page.route(/\/api\/v1\/questions(\?.*)?$/, async (route) => {
      lists += 1;
      if (lists !== 2) return route.continue();
      const response = await route.fetch();
      taken();
      await released;
      return route.fulfill({ response });
    });
    await page.goto(server.url);
    await listTaken;
    const name = fresh('late');
    server.ask(name, { questions: [{ ...PKG, header: 'Late' }] });
    const ticket = await ticketOf(page, 'Late');
    release();
    await page.waitForFunction(() => window.__read['/api/v1/questions'] >= 2);
    assert.equal(await batch(page, ticket).count(), 1, 'the question is still shown');
    assert.equal(await page.locator('.notice').count(), 0, 'no "No longer waiting" notice');
    assert.equal(await page.title(), '(1) user-questions');
    await batch(page, ticket).getByLabel('npm', { exact: true }).check();
    await batch(page, ticket).getByRole('button', { name: 'Submit answer' }).click();
    assert.deepEqual((await server.result(name)).answer, { answers: [{ id: 'pkg', selected: ['npm'] }] });
    noProblems(page);
    await context.close();
  });

  it('shortens a long question in a notice without cutting a character or an emoji in two', async () => {
    const { context, page } = await open(browser, server);
    const FAMILY = '\u{1F469}\u200d\u{1F469}\u200d\u{1F467}';
    // The cut (79 UTF-16 units) falls inside the family's second person, then inside a surrogate pair.
    for (const [before, emoji] of [[76, FAMILY], [78, '\u{1F600}']]) {
      const question = `${'a'.repeat(before)}${emoji} and the rest of a long question?`;
      const name = fresh('emoji');
      server.ask(name, { questions: [{ id: 'e', question }] });
      const ticket = await ticketOf(page, 'and the rest');
      assert.equal(await batch(page, ticket).locator('.question-text').textContent(), question);
      await batch(page, ticket).getByRole('button', { name: `Dismiss question ${ticket} without answering` }).click();
      assert.equal((await server.result(name)).error.code, 'ASK_CANCELLED');
      await batch(page, ticket).waitFor({ state: 'detached' });
      const shown = await page.locator('.notice bdi').first().textContent();
      assert.equal(shown.isWellFormed(), true, `no lone surrogate in ${JSON.stringify(shown)}`);
      assert.equal(shown, `${'a'.repeat(before)}…`, 'the emoji is left out whole');
    }
    noProblems(page);
    await context.close();
  });

  it('takes a question off when "More time" finds it settled elsewhere (the stream missed it)', async () => {
    const name = fresh('more-stale');
    const { context, page, b, ticket } = await staleTab(name, { questions: [{ ...PKG, header: 'Late more' }], timeoutMs: 600000 });
    await server.cancelAll();
    assert.equal((await server.result(name)).error.code, 'ASK_CANCELLED');
    await b.getByRole('button', { name: `More time for question ${ticket} (5 more minutes)` }).click();
    await batch(page, ticket).waitFor({ state: 'detached' });
    const first = page.locator('.notice').first();
    assert.match(await first.textContent(), /No more time — this question was already answered, dismissed or closed elsewhere: Late more: Which package manager/);
    assert.equal(await first.evaluate((e) => e === document.activeElement), true, 'the notice has the focus');
    assert.equal(await page.title(), 'user-questions');
    await context.close();
  });

  it('claims no more time for a question that left while "More time" was on its way', async () => {
    const { context, page } = await open(browser, server);
    await countReads(page);
    await page.reload();
    await page.waitForSelector('#status.ok');
    const name = fresh('more-gone');
    server.ask(name, { questions: [{ ...PKG, header: 'Going' }], timeoutMs: 600000 });
    const ticket = await ticketOf(page, 'Going');
    const b = batch(page, ticket);
    // The server gives the time; its answer reaches the page after the asker withdrew.
    await page.route('**/api/v1/questions/*/extend', async (route) => {
      const response = await route.fetch();
      server.withdraw(name);
      await b.waitFor({ state: 'detached' });
      await route.fulfill({ response });
    });
    await b.getByRole('button', { name: `More time for question ${ticket} (5 more minutes)` }).click();
    await page.waitForFunction(() => window.__read['/api/v1/questions/T/extend'] >= 1);
    assert.equal((await server.result(name)).error.code, 'ASK_ABORTED');
    assert.deepEqual(
      (await page.locator('.notice').allTextContents()).map((t) => t.replace(/^\d{1,2}:\d{2}(\s?[AP]M)? /, '')),
      ['Withdrawn by the asker: Going: Which package manager should the project use?'],
    );
    noProblems(page);
    await context.close();
  });

  it('keeps the answer and says so when the server cannot be reached, and sends it once it can', async () => {
    const { context, page } = await open(browser, server);
    const name = fresh('offline');
    server.ask(name, { questions: [PKG] });
    const ticket = await ticketOf(page, PKG.question);
    const b = batch(page, ticket);
    await b.getByLabel('yarn', { exact: true }).check();
    await page.route('**/api/v1/questions/*/answer', (route) => route.abort('connectionrefused'));
    await b.getByRole('button', { name: 'Submit answer' }).click();
    await page.waitForFunction(() => document.querySelector('.batch .error').textContent !== '');
    assert.equal(await b.locator('.error').textContent(), 'Could not reach the server. Check the connection and try again.');
    assert.equal(await b.getByLabel('yarn', { exact: true }).isChecked(), true, 'the choice is kept');
    assert.equal(await b.getByRole('button', { name: 'Submit answer' }).isDisabled(), false);
    assert.equal(server.settled(name), false);
    await page.unroute('**/api/v1/questions/*/answer');
    await b.getByRole('button', { name: 'Submit answer' }).click();
    assert.deepEqual((await server.result(name)).answer, { answers: [{ id: 'pkg', selected: ['yarn'] }] });
    await b.waitFor({ state: 'detached' });
    assert.match(await page.locator('.notice').first().textContent(), /Answer sent: Package/);
    page.problems = page.problems.filter((p) => !p.includes('ERR_CONNECTION_REFUSED'));
    noProblems(page);
    await context.close();
  });

  it('says an answer sent as its ask was withdrawn was not used, and the asker gets ASK_ABORTED', async () => {
    const { context, page } = await open(browser, server);
    const name = fresh('withdrawn-while-sent');
    server.ask(name, { questions: [{ ...PKG, header: 'Racing' }] });
    const ticket = await ticketOf(page, 'Racing');
    const b = batch(page, ticket);
    await b.getByLabel('npm', { exact: true }).check();
    // The answer reaches the server only after the asker withdrew.
    await page.route('**/api/v1/questions/*/answer', async (route) => {
      server.withdraw(name);
      await server.result(name);
      await route.continue();
    });
    await b.getByRole('button', { name: 'Submit answer' }).click();
    await b.waitFor({ state: 'detached' });
    assert.equal((await server.result(name)).error.code, 'ASK_ABORTED');
    const first = page.locator('.notice').first();
    assert.match(await first.textContent(), /(Withdrawn by the asker|Not sent — this question was already answered, dismissed or closed elsewhere): Racing: Which/);
    assert.equal(await first.evaluate((e) => e === document.activeElement), true, 'the notice has the focus');
    assert.equal(await page.locator('.notice').count(), 1, 'one notice');
    page.problems = page.problems.filter((p) => !p.includes('status of 409'));
    noProblems(page);
    await context.close();
  });

  it('lets the first of two live tabs answer and tells the second its answer was not used', async () => {
    const { context, page: one } = await open(browser, server);
    const two = await openPage(context, server);
    const name = fresh('two-live');
    server.ask(name, { questions: [{ ...PKG, header: 'Both' }] });
    const ticket = await ticketOf(one, 'Both');
    await ticketOf(two, 'Both');
    await batch(two, ticket).getByLabel('npm', { exact: true }).check();
    // The second tab's answer reaches the server after the first tab's.
    await two.route('**/api/v1/questions/*/answer', async (route) => {
      await batch(one, ticket).getByLabel('yarn', { exact: true }).check();
      await batch(one, ticket).getByRole('button', { name: 'Submit answer' }).click();
      await server.result(name);
      await route.continue();
    });
    await batch(two, ticket).getByRole('button', { name: 'Submit answer' }).click();
    await batch(two, ticket).waitFor({ state: 'detached' });
    await batch(one, ticket).waitFor({ state: 'detached' });
    assert.deepEqual((await server.result(name)).answer, { answers: [{ id: 'pkg', selected: ['yarn'] }] });
    assert.match(await one.locator('.notice').first().textContent(), /Answer sent: Both/);
    const notice = two.locator('.notice').first();
    assert.match(await notice.textContent(), /(Answered elsewhere|Not sent — this question was already answered, dismissed or closed elsewhere): Both: Which/);
    assert.equal(await notice.evaluate((e) => e === document.activeElement), true, 'the notice has the focus');
    assert.equal(await two.locator('.notice').count(), 1);
    two.problems = two.problems.filter((p) => !p.includes('status of 409'));
    noProblems(one);
    noProblems(two);
    await context.close();
  });

  it('asks for its link again when the server came back with another token', async () => {
    const first = await Server.start(['--listen', '127.0.0.1:0']);
    const port = new URL(first.url).port;
    const context = await browser.newContext();
    const page = await openPage(context, first);
    first.ask('kept', { questions: [{ ...PKG, header: 'Kept' }] });
    const ticket = await ticketOf(page, 'Kept');
    await first.kill();
    const second = await Server.start(['--listen', `127.0.0.1:${port}`, '--token', 'another-token']);
    try {
      await page.waitForFunction(() => /needs its link/.test(document.getElementById('status').textContent), null, { timeout: 20000 });
      assert.equal(await page.locator('#status').textContent(), 'This page needs its link: open the URL with ?token=… that the program printed.');
      assert.equal(await batch(page, ticket).count(), 1, 'what was shown stays');
      // An answer cannot be taken: the page says why.
      await batch(page, ticket).getByLabel('npm', { exact: true }).check();
      await batch(page, ticket).getByRole('button', { name: 'Submit answer' }).click();
      await page.waitForFunction(() => document.querySelector('.batch .error').textContent !== '');
      assert.match(await batch(page, ticket).locator('.error').textContent(), /token|cookie|unauthori/i);
    } finally {
      await context.close();
      await second.stop();
    }
  });

  it('keeps at most five notices, the newest first', async () => {
    const { context, page } = await open(browser, server);
    const names = [];
    for (let i = 1; i <= 6; i++) {
      const name = fresh('notice');
      names.push(name);
      server.ask(name, { questions: [{ ...NAME, header: `Notice ${i}` }] });
      const ticket = await ticketOf(page, `Notice ${i}`);
      await batch(page, ticket).getByRole('button', { name: `Dismiss question ${ticket} without answering` }).click();
      await batch(page, ticket).waitFor({ state: 'detached' });
    }
    for (const name of names) assert.equal((await server.result(name)).error.code, 'ASK_CANCELLED');
    const texts = await page.locator('.notice bdi').allTextContents();
    assert.deepEqual(
      texts.map((t) => t.split(':')[0]),
      ['Notice 6', 'Notice 5', 'Notice 4', 'Notice 3', 'Notice 2'],
    );
    noProblems(page);
    await context.close();
  });

  it('wraps long unbroken text in every part of a question and its notice on a phone screen', async () => {
    const { context, page } = await open(browser, server, { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    const long = (what) => `${what}-${'w'.repeat(200)}`;
    const name = fresh('long');
    server.ask(name, {
      questions: [
        {
          id: 'l',
          header: long('header').slice(0, 60),
          question: long('question'),
          detail: long('detail'),
          options: [{ label: long('label'), description: long('description') }, { label: 'short' }],
        },
        { id: 'm', question: long('free'), multiSelect: true, options: [{ label: long('multi') }, { label: 'x' }] },
      ],
      agentId: long('agent'),
      timeoutMs: 600000,
    });
    const ticket = await ticketOf(page, 'question-www');
    const wide = () => page.evaluate(() => [document.documentElement.scrollWidth, document.body.scrollWidth]);
    assert.ok((await wide()).every((w) => w <= 390), `no horizontal scroll (${await wide()})`);
    await shot(page, 'phone-long-text');
    await batch(page, ticket).getByRole('button', { name: `Dismiss question ${ticket} without answering` }).click();
    assert.equal((await server.result(name)).error.code, 'ASK_CANCELLED');
    await batch(page, ticket).waitFor({ state: 'detached' });
    assert.ok((await wide()).every((w) => w <= 390), `no horizontal scroll with the notice (${await wide()})`);
    noProblems(page);
    await context.close();
  });

  it('moves the focus to the next question when the one being answered leaves on its own', async () => {
    const { context, page } = await open(browser, server);
    const [first, second] = [fresh('focus'), fresh('focus')];
    server.ask(first, { questions: [{ ...PKG, header: 'First' }] });
    const one = await ticketOf(page, 'First');
    server.ask(second, { questions: [{ ...PKG, header: 'Second' }] });
    const two = await ticketOf(page, 'Second');
    await batch(page, one).getByLabel(`Other answer for: ${PKG.question}`).fill('typing');
    server.withdraw(first);
    await batch(page, one).waitFor({ state: 'detached' });
    assert.equal(await page.evaluate(() => document.activeElement.id), `t${two}-title`);
    assert.match(await page.locator('.notice').first().textContent(), /Withdrawn by the asker: First/);
    // The last one leaving gives the focus to the page's title.
    await batch(page, two).getByLabel('npm', { exact: true }).focus();
    server.withdraw(second);
    await batch(page, two).waitFor({ state: 'detached' });
    assert.equal(await page.evaluate(() => document.activeElement.id), 'title');
    noProblems(page);
    await context.close();
  });

  it('shows the questions of a server restarted at its address, not those of its last run under the same tickets', async () => {
    const args = ['--token', 'same-token-both-runs'];
    const first = await Server.start(['--listen', '127.0.0.1:0', ...args]);
    const port = new URL(first.url).port;
    const context = await browser.newContext();
    const page = await openPage(context, first);
    first.ask('old-run', { questions: [{ ...PKG, header: 'Old run' }] });
    const oldTicket = await ticketOf(page, 'Old run');
    // The page's stream gets back only once the new run has asked (it resumes with the old
    // run's Last-Event-ID).
    let release;
    const released = new Promise((r) => (release = r));
    await context.route('**/api/v1/events', async (route) => {
      await released;
      await route.continue();
    });
    await first.kill();
    const second = await Server.start(['--listen', `127.0.0.1:${port}`, ...args]);
    try {
      second.ask('new-run', { questions: [{ ...PKG, header: 'New run' }] });
      const headers = { Authorization: `Bearer ${args[1]}` };
      const pending = async () => (await (await fetch(`${second.base}/api/v1/questions`, { headers })).json()).pending;
      while ((await pending()).length === 0) await new Promise((r) => setTimeout(r, 20));
      assert.equal((await pending())[0].ticket, oldTicket, 'the new run reuses the ticket');
      release();
      const newTicket = await ticketOf(page, 'New run');
      assert.equal(newTicket, oldTicket);
      assert.equal(await page.locator('section.batch', { hasText: 'Old run' }).count(), 0, "the old run's question is gone");
      assert.match(await page.locator('.notice').first().textContent(), /No longer waiting: Old run/);
      assert.equal(await page.title(), '(1) user-questions');
      const b = batch(page, newTicket);
      await b.getByLabel('npm', { exact: true }).check();
      await b.getByRole('button', { name: 'Submit answer' }).click();
      assert.deepEqual((await second.result('new-run')).answer, { answers: [{ id: 'pkg', selected: ['npm'] }] });
      // The browser logs the stream the killed server cut; nothing else may be logged.
      page.problems = page.problems.filter((p) => !p.includes('ERR_INCOMPLETE_CHUNKED_ENCODING'));
      noProblems(page);
    } finally {
      await context.close();
      await second.stop();
    }
  });

  it('counts down hours as h:mm:ss and marks the last minute as urgent', async () => {
    const { context, page } = await open(browser, server);
    const [long, short] = [fresh('hours'), fresh('urgent')];
    server.ask(long, { questions: [{ ...NAME, header: 'Hours' }], timeoutMs: 2 * 3600 * 1000 });
    const hours = batch(page, await ticketOf(page, 'Hours'));
    assert.match(await hours.locator('.countdown').textContent(), /^Expires in (1:59:5\d|2:00:00)$/);
    assert.equal(await hours.locator('.countdown.urgent').count(), 0);
    server.ask(short, { questions: [{ ...NAME, header: 'Urgent' }], timeoutMs: 45000 });
    const urgent = batch(page, await ticketOf(page, 'Urgent'));
    assert.match(await urgent.locator('.countdown').textContent(), /^Expires in 0:[0-4]\d$/);
    assert.equal(await urgent.locator('.countdown.urgent').count(), 1);
    // A question without a deadline shows neither a countdown nor "More time".
    const none = fresh('no-deadline');
    server.ask(none, { questions: [{ ...NAME, header: 'Timeless' }] });
    const timeless = batch(page, await ticketOf(page, 'Timeless'));
    assert.equal(await timeless.locator('.deadline').isHidden(), true);
    for (const name of [long, short, none]) server.withdraw(name);
    for (const name of [long, short, none]) assert.equal((await server.result(name)).error.code, 'ASK_ABORTED');
    noProblems(page);
    await context.close();
  });
});

describe('the question page with an access file (§23)', () => {
  const ALICE = 'alice-token_0123456789abcdef';
  const BOB = 'bob-token_0123456789abcdef';
  const sha256 = (token) => createHash('sha256').update(token).digest('hex');
  let dir;
  let people;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'uq-page-access-'));
    const file = join(dir, 'access.toml');
    writeFileSync(
      file,
      `[[person]]\nid = "alice"\nname = "Alice Martin"\ntoken_sha256 = "${sha256(ALICE)}"\ngroups = ["ops"]\n\n` +
        `[[person]]\nid = "bob"\ntoken_sha256 = "${sha256(BOB)}"\n`,
    );
    people = await Server.start(['--access', file]);
  });

  after(async () => {
    await people?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** A page of its own context, logged in with `token` (the person's own link). */
  async function signIn(token, options = {}) {
    const context = await browser.newContext({ viewport: { width: 1000, height: 900 }, ...options });
    const page = await openPage(context, { url: `${people.base}/?token=${token}` });
    return { context, page };
  }

  /** Settles `ticket` through the person API with `token`, as another screen of theirs would. */
  async function settle(token, ticket, action, body = {}) {
    const response = await fetch(`${people.base}/api/v1/questions/${ticket}/${action}`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });
    assert.equal(response.status, 200, await response.text());
  }

  /** The tickets `token` sees pending, once `count` of them are. */
  async function listed(token, count) {
    for (let i = 0; i < 100; i++) {
      const response = await fetch(`${people.base}/api/v1/questions`, { headers: { Authorization: `Bearer ${token}` } });
      const { pending } = await response.json();
      if (pending.length >= count) return pending;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`${count} questions never came`);
  }

  it('shows nobody signed in with the one token', async () => {
    const { context, page } = await open(browser, server);
    const url = new URL('/api/v1/me', server.base).href;
    await page.waitForFunction((u) => performance.getEntriesByName(u).length > 0, url);
    await page.waitForTimeout(200);
    assert.equal(await page.locator('#me').isHidden(), true);
    assert.equal(await page.locator('#me').textContent(), '');
    noProblems(page);
    await context.close();
  });

  it('signs a person in, shows only their questions, and names who answered or cancelled one that left', async () => {
    const { context, page } = await signIn(ALICE);
    await page.locator('#me').waitFor();
    assert.equal(await page.locator('#me').textContent(), 'Signed in as Alice Martin');
    assert.equal(await page.title(), 'user-questions', 'the tab title does not carry the name');

    // Bob's question first (on the server, as bob's own list says), then one for ops.
    people.ask('for-bob', { questions: [{ ...PKG, header: 'For Bob' }], to: ['bob'] });
    const [forBob] = await listed(BOB, 1);
    people.ask('for-ops', { questions: [{ ...NAME, header: 'For ops' }], to: ['ops'] });
    const ops = await ticketOf(page, 'For ops');
    assert.equal(await page.locator('section.batch', { hasText: 'For Bob' }).count(), 0, "bob's question is not alice's");
    assert.equal(await page.locator('section.batch').count(), 1);
    assert.equal(await page.title(), '(1) user-questions');

    // Bob, signed in on his own, sees his question and not the one for ops.
    const bob = await signIn(BOB);
    await bob.page.locator('#me').waitFor();
    assert.equal(await bob.page.locator('#me').textContent(), 'Signed in as bob');
    assert.equal(await ticketOf(bob.page, 'For Bob'), forBob.ticket);
    assert.equal(await bob.page.locator('section.batch', { hasText: 'For ops' }).count(), 0, "ops's question is not bob's");
    await shot(page, 'signed-in');

    // Alice answers on another screen of hers: the page names her, and so does the answer.
    await settle(ALICE, ops, 'answer', { answers: [{ id: 'name', selected: [], custom: 'ledger' }] });
    await batch(page, ops).waitFor({ state: 'detached' });
    assert.match(await page.locator('.notice').first().textContent(), /Answered by Alice Martin: For ops: What should the service be called\?/);
    assert.equal(await page.locator('.notice .by').first().textContent(), 'Alice Martin');
    assert.deepEqual((await people.result('for-ops')).answer, {
      answers: [{ id: 'name', selected: [], custom: 'ledger' }],
      respondent: { id: 'alice', name: 'Alice Martin' },
    });
    assert.equal(await page.title(), 'user-questions');

    // Cancelled by her elsewhere: named too.
    people.ask('cancel-ops', { questions: [{ ...NAME, header: 'Cancel me' }], to: ['ops'] });
    const cancelled = await ticketOf(page, 'Cancel me');
    await settle(ALICE, cancelled, 'cancel');
    await batch(page, cancelled).waitFor({ state: 'detached' });
    assert.match(await page.locator('.notice').first().textContent(), /Cancelled by Alice Martin: Cancel me: What should/);
    assert.equal((await people.result('cancel-ops')).error.code, 'ASK_CANCELLED');
    await shot(page, 'signed-in-notices');

    // An outcome nobody chose keeps its words: bob's question withdrawn by its asker.
    people.withdraw('for-bob');
    await batch(bob.page, forBob.ticket).waitFor({ state: 'detached' });
    assert.match(await bob.page.locator('.notice').first().textContent(), /Withdrawn by the asker: For Bob: Which package manager/);
    assert.equal((await people.result('for-bob')).error.code, 'ASK_ABORTED');
    noProblems(page);
    noProblems(bob.page);
    await bob.context.close();
    await context.close();
  });

  it('fits who is signed in on a 390 px phone screen, light and dark, and keeps it out of the keyboard path', async () => {
    for (const colorScheme of ['light', 'dark']) {
      const { context, page } = await signIn(ALICE, { viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true, colorScheme });
      await page.locator('#me').waitFor();
      const name = `phone-me-${colorScheme}`;
      people.ask(name, { questions: [PKG], to: ['alice'] });
      const b = batch(page, await ticketOf(page, PKG.question));
      const widths = await page.evaluate(() => [document.documentElement.scrollWidth, document.body.scrollWidth]);
      assert.ok(widths.every((w) => w <= 390), `no horizontal scroll (${widths}) in ${colorScheme}`);
      const [color, background] = await page.evaluate(() => [getComputedStyle(document.querySelector('#me .who')).color, getComputedStyle(document.body).backgroundColor]);
      assert.notEqual(color, background);
      // The first Tab still goes to the first choice: the line is text, not a control.
      await page.keyboard.press('Tab');
      assert.equal(await page.evaluate(() => document.activeElement.labels?.[0]?.textContent), 'pnpm Recommended');
      await shot(page, `signed-in-phone-${colorScheme}`, false);
      await b.getByRole('button', { name: `Dismiss question ${await b.getAttribute('data-ticket')} without answering` }).click();
      const result = await people.result(name);
      assert.equal(result.error.code, 'ASK_CANCELLED');
      noProblems(page);
      await context.close();
    }
  });
});

describe('the question page with typed inputs and previews (§24)', () => {
  const KINDS = [
    { id: 'title', question: 'Title of the release?', input: { kind: 'text', minLength: 3, maxLength: 40 } },
    { id: 'notes', question: 'Release notes?', input: { kind: 'text', multiline: true } },
    { id: 'ratio', question: 'Sampling ratio?', input: { kind: 'number', minimum: 0, maximum: 1 } },
    { id: 'replicas', question: 'How many replicas?', input: { kind: 'integer', minimum: 1, maximum: 10, default: 3 } },
    { id: 'canary', question: 'Start with a canary?', input: { kind: 'boolean' } },
    { id: 'day', question: 'Release day?', input: { kind: 'date', minimum: '2026-01-01' } },
    { id: 'window', question: 'Maintenance window starts at?', input: { kind: 'datetime' } },
    { id: 'owner', question: 'Owner email?', input: { kind: 'email' } },
    { id: 'dashboard', question: 'Dashboard URL?', input: { kind: 'url' } },
    { id: 'token', question: 'Deploy token?', input: { kind: 'secret', minLength: 4 } },
    { id: 'logo', question: 'Logo for the release page?', input: { kind: 'file', accept: ['image/png', 'text/*'], maxBytes: 4096 } },
  ];
  const field = (b, qi) => b.locator('fieldset.question').nth(qi);

  it('answers a question of every kind through its own field, a file and a secret included', async () => {
    const { context, page } = await open(browser, server, { timezoneId: 'Europe/Berlin' });
    const name = fresh('kinds');
    server.ask(name, { questions: KINDS });
    const b = batch(page, await ticketOf(page, KINDS[0].question));
    const types = await b.locator('.value-input').evaluateAll((list) => list.map((e) => (e.tagName === 'TEXTAREA' ? 'textarea' : e.type)));
    assert.deepEqual(types, ['text', 'textarea', 'number', 'number', 'date', 'datetime-local', 'email', 'url', 'password', 'file']);
    // Each field is labelled, and the secret's field masks it.
    assert.equal(await b.getByLabel('Your answer (leave empty to skip)').count(), 9);
    assert.equal(await field(b, 9).locator('input').getAttribute('type'), 'password');
    assert.equal(await field(b, 9).locator('input').getAttribute('autocomplete'), 'off');
    assert.equal(await field(b, 3).locator('input').getAttribute('step'), '1');
    assert.equal(await field(b, 3).locator('input').getAttribute('max'), '10');
    assert.equal(await field(b, 10).locator('input').getAttribute('accept'), 'image/png,text/*');
    // The default is filled in.
    assert.equal(await field(b, 3).locator('input').inputValue(), '3');
    assert.equal(await field(b, 4).getByRole('radio').count(), 3, 'Yes, No, Skip');

    await field(b, 0).locator('input').fill('Aurora');
    await field(b, 1).locator('textarea').fill('Faster builds.\nFewer flakes.');
    await field(b, 2).locator('input').fill('0.25');
    await field(b, 3).locator('input').fill('5');
    await field(b, 4).getByLabel('Yes', { exact: true }).check();
    await field(b, 5).locator('input').fill('2026-12-24');
    await field(b, 6).locator('input').fill('2026-12-07T10:00');
    await field(b, 7).locator('input').fill('ops@example.com');
    await field(b, 8).locator('input').fill('https://grafana.example.com/d/1');
    await field(b, 9).locator('input').fill('s3cr3t-token');
    const bytes = Buffer.from('release logo placeholder\n');
    await field(b, 10).locator('input').setInputFiles({ name: 'logo.txt', mimeType: 'text/plain', buffer: bytes });
    await shot(page, 'typed-inputs');
    await b.getByRole('button', { name: 'Submit answers' }).click();
    const { answer } = await server.result(name);
    assert.deepEqual(answer, {
      answers: [
        { id: 'title', selected: [], value: 'Aurora' },
        { id: 'notes', selected: [], value: 'Faster builds.\nFewer flakes.' },
        { id: 'ratio', selected: [], value: 0.25 },
        { id: 'replicas', selected: [], value: 5 },
        { id: 'canary', selected: [], value: true },
        { id: 'day', selected: [], value: '2026-12-24' },
        { id: 'window', selected: [], value: '2026-12-07T10:00:00+01:00' },
        { id: 'owner', selected: [], value: 'ops@example.com' },
        { id: 'dashboard', selected: [], value: 'https://grafana.example.com/d/1' },
        { id: 'token', selected: [], value: 's3cr3t-token' },
        {
          id: 'logo',
          selected: [],
          value: {
            name: 'logo.txt',
            mediaType: 'text/plain',
            size: bytes.length,
            sha256: createHash('sha256').update(bytes).digest('hex'),
            data: bytes.toString('base64'),
          },
        },
      ],
    });
    noProblems(page);
    await context.close();
  });

  it('skips an empty field and sends a default as it was filled in', async () => {
    const { context, page } = await open(browser, server);
    const name = fresh('defaults');
    const questions = [
      KINDS[3],
      { id: 'when', question: 'Which day?', input: { kind: 'date', default: '2026-12-08' } },
      { id: 'ok', question: 'Ship it?', input: { kind: 'boolean', default: false } },
      KINDS[0],
      KINDS[10],
    ];
    server.ask(name, { questions });
    const b = batch(page, await ticketOf(page, 'Which day?'));
    assert.equal(await field(b, 1).locator('input').inputValue(), '2026-12-08');
    assert.equal(await field(b, 2).getByLabel('No', { exact: true }).isChecked(), true);
    await b.getByRole('button', { name: 'Submit answers' }).click();
    assert.deepEqual((await server.result(name)).answer, {
      answers: [
        { id: 'replicas', selected: [], value: 3 },
        { id: 'when', selected: [], value: '2026-12-08' },
        { id: 'ok', selected: [], value: false },
        { id: 'title', selected: [] },
        { id: 'logo', selected: [] },
      ],
    });
    noProblems(page);
    await context.close();
  });

  it('says next to its field why a value does not fit, before sending and when the server refuses it', async () => {
    const { context, page } = await open(browser, server);
    const name = fresh('refused');
    server.ask(name, { questions: [KINDS[0], KINDS[3], KINDS[10]] });
    const b = batch(page, await ticketOf(page, KINDS[3].question));
    const replicas = field(b, 1).locator('input');
    await replicas.fill('11');
    await field(b, 0).locator('input').fill('Aurora');
    await b.getByRole('button', { name: 'Submit answers' }).click();
    assert.equal(await field(b, 1).locator('.field-error').textContent(), 'Must be at most 10.');
    assert.equal(await replicas.getAttribute('aria-invalid'), 'true');
    assert.equal(await page.evaluate(() => document.activeElement.id), await replicas.getAttribute('id'), 'the field has the focus');
    assert.match(await replicas.getAttribute('aria-describedby'), /-error/);
    assert.equal(await field(b, 0).locator('.field-error').isVisible(), false, 'only the field that does not fit');
    // A file too large and one of a type not accepted are refused before sending.
    await replicas.fill('4');
    assert.equal(await field(b, 1).locator('.field-error').isVisible(), false, 'typing clears the message');
    const logo = field(b, 2).locator('input');
    await logo.setInputFiles({ name: 'big.png', mimeType: 'image/png', buffer: Buffer.alloc(5000) });
    await b.getByRole('button', { name: 'Submit answers' }).click();
    assert.match(await field(b, 2).locator('.field-error').textContent(), /at most 4 KiB/);
    await logo.setInputFiles({ name: 'a.pdf', mimeType: 'application/pdf', buffer: Buffer.from('%PDF') });
    await b.getByRole('button', { name: 'Submit answers' }).click();
    assert.match(await field(b, 2).locator('.field-error').textContent(), /application\/pdf; choose one of image\/png, text\/\*/);
    await shot(page, 'typed-refused-client');
    assert.equal(server.settled(name), false);
    await logo.setInputFiles([]);
    // The server decides: a value changed on its way (as a page of another version might send
    // it) is refused, and its message is shown next to the field of the question it names.
    await page.route('**/answer', (route) => {
      const body = JSON.parse(route.request().postData());
      body.answers[1].value = 12;
      route.continue({ postData: JSON.stringify(body) });
    });
    await b.getByRole('button', { name: 'Submit answers' }).click();
    await field(b, 1).locator('.field-error').filter({ hasText: 'Not accepted' }).waitFor();
    assert.equal(await field(b, 1).locator('.field-error').textContent(), 'Not accepted: question replicas value must be at most 10');
    assert.equal(await b.locator('p.error').textContent(), 'Check the answer marked above.');
    assert.equal(await page.evaluate(() => document.activeElement.id), await replicas.getAttribute('id'));
    await shot(page, 'typed-refused-server');
    await page.unroute('**/answer');
    await b.getByRole('button', { name: 'Submit answers' }).click();
    assert.deepEqual((await server.result(name)).answer, {
      answers: [
        { id: 'title', selected: [], value: 'Aurora' },
        { id: 'replicas', selected: [], value: 4 },
        { id: 'logo', selected: [] },
      ],
    });
    // The only problem: the refusal's 422, which the browser logs.
    assert.deepEqual(page.problems.filter((p) => !/status of 422/.test(p)), [], 'no script errors');
    await context.close();
  });

  it('answers an input question with the keyboard alone', async () => {
    const { context, page } = await open(browser, server);
    const name = fresh('input-keys');
    server.ask(name, { questions: [KINDS[3], KINDS[4]] });
    const b = batch(page, await ticketOf(page, KINDS[3].question));
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement.type), 'number');
    await page.keyboard.press('ArrowUp'); // 3 → 4
    await page.keyboard.press('Tab'); // Yes
    await page.keyboard.press('ArrowDown'); // No
    await page.keyboard.press('ArrowUp'); // Yes
    await page.keyboard.press('Tab'); // Submit
    assert.equal(await page.evaluate(() => document.activeElement.textContent), 'Submit answers');
    await page.keyboard.press('Enter');
    assert.deepEqual((await server.result(name)).answer, {
      answers: [
        { id: 'replicas', selected: [], value: 4 },
        { id: 'canary', selected: [], value: true },
      ],
    });
    await b.waitFor({ state: 'detached' });
    noProblems(page);
    await context.close();
  });

  const DIFF = `--- a/src/config.rs
+++ b/src/config.rs
@@ -1,3 +1,3 @@
 pub struct Config {
-    retries: u8,
+    retries: u32,
 }`;
  const PREVIEWED = {
    id: 'change',
    question: 'Which change should I make?',
    options: [
      { label: 'Widen the field (Recommended)', description: 'Fewer overflows.', preview: DIFF },
      { label: 'Document the limit', preview: '# Limits\n\n<b>retries</b> is at most 255.' },
      { label: 'Leave it' },
    ],
  };

  it('shows the focused or selected option’s preview as text, a diff with its added and removed lines coloured', async () => {
    const { context, page } = await open(browser, server);
    const name = fresh('preview');
    server.ask(name, { questions: [PREVIEWED] });
    const b = batch(page, await ticketOf(page, PREVIEWED.question));
    const pre = b.locator('pre.preview');
    assert.equal(await pre.isVisible(), false, 'nothing to preview yet');
    await b.getByLabel('Document the limit', { exact: true }).focus();
    assert.equal(await pre.textContent(), PREVIEWED.options[1].preview, 'markdown as text');
    assert.equal(await pre.locator('b').count(), 0, 'never HTML');
    assert.equal(await b.locator('.preview-title').textContent(), 'Preview of Document the limit');
    await b.getByLabel('Widen the field Recommended', { exact: true }).check();
    assert.equal(await pre.textContent(), DIFF);
    assert.deepEqual(await pre.locator('.diff-add').allTextContents(), ['+    retries: u32,']);
    assert.deepEqual(await pre.locator('.diff-del').allTextContents(), ['-    retries: u8,']);
    assert.deepEqual(await pre.locator('.diff-hunk').allTextContents(), ['@@ -1,3 +1,3 @@']);
    const [add, del] = await page.evaluate(() => ['.diff-add', '.diff-del'].map((s) => getComputedStyle(document.querySelector(s)).backgroundColor));
    assert.notEqual(add, del);
    assert.notEqual(add, 'rgba(0, 0, 0, 0)');
    await shot(page, 'preview-diff');
    // An option without a preview, focused, leaves the selected one's; chosen, hides it.
    await b.getByLabel('Leave it', { exact: true }).focus();
    assert.equal(await pre.textContent(), DIFF);
    await b.getByLabel('Leave it', { exact: true }).check();
    assert.equal(await pre.isVisible(), false);
    await b.getByLabel('Document the limit', { exact: true }).focus();
    assert.equal(await pre.textContent(), PREVIEWED.options[1].preview);
    await b.getByRole('button', { name: 'Submit answer' }).focus();
    assert.equal(await pre.isVisible(), false, 'focus gone, the selection has none');
    await b.getByLabel('Widen the field Recommended', { exact: true }).check();
    await b.getByRole('button', { name: 'Submit answer' }).focus();
    assert.equal(await pre.textContent(), DIFF, 'focus gone, the selected option\'s');
    await b.getByRole('button', { name: 'Submit answer' }).click();
    assert.deepEqual((await server.result(name)).answer, { answers: [{ id: 'change', selected: ['Widen the field (Recommended)'] }] });
    noProblems(page);
    await context.close();
  });

  it('fits typed fields and a diff preview on a 390 px phone screen, light and dark', async () => {
    for (const colorScheme of ['light', 'dark']) {
      const { context, page } = await open(browser, server, { viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true, colorScheme });
      const name = fresh('typed-phone');
      const long = { ...PREVIEWED, options: [{ ...PREVIEWED.options[0], preview: `${DIFF}\n+${'z'.repeat(200)}` }, ...PREVIEWED.options.slice(1)] };
      server.ask(name, { questions: [KINDS[0], KINDS[3], KINDS[4], KINDS[6], KINDS[9], KINDS[10], long] });
      const b = batch(page, await ticketOf(page, KINDS[0].question));
      await b.getByLabel('Widen the field Recommended', { exact: true }).check();
      await field(b, 1).locator('input').fill('11');
      await b.getByRole('button', { name: 'Submit answers' }).click();
      await field(b, 1).locator('.field-error').waitFor();
      const widths = await page.evaluate(() => [document.documentElement.scrollWidth, document.body.scrollWidth]);
      assert.ok(widths.every((w) => w <= 390), `no horizontal scroll (${widths}) in ${colorScheme}`);
      await shot(page, `typed-phone-${colorScheme}`);
      await b.getByRole('button', { name: `Dismiss question ${await b.getAttribute('data-ticket')} without answering` }).click();
      assert.equal((await server.result(name)).error.code, 'ASK_CANCELLED');
      noProblems(page);
      await context.close();
    }
  });
});

describe('the question page with many waiting (issue 30: a team hub)', () => {
  /** Asks `count` batches named `prefix-i`, header `header`, from `agent` (none: no agent). */
  function askMany(prefix, count, { agent, header = 'Deploy' } = {}) {
    const names = [];
    for (let i = 0; i < count; i++) {
      const name = fresh(prefix);
      names.push(name);
      const request = { questions: [{ id: 'q', header, question: `Roll out build ${prefix}-${i}?`, options: [{ label: 'Yes' }, { label: 'No' }] }] };
      if (agent) request.agentId = agent;
      server.ask(name, request);
    }
    return names;
  }

  async function waitCount(page, n) {
    await page.waitForFunction((count) => document.title === `(${count}) user-questions`, n, { timeout: 20000 });
  }

  it('reads the list in pages, the first at once and the rest after it, with no stream to bring them', async () => {
    const context = await browser.newContext({ viewport: { width: 1000, height: 900 } });
    await context.route('**/api/v1/events', (route) => route.abort());
    const page = await context.newPage();
    page.problems = [];
    page.on('pageerror', (error) => page.problems.push(`pageerror: ${error.message}`));
    const lists = [];
    page.on('request', (request) => {
      const url = new URL(request.url());
      if (url.pathname === '/api/v1/questions') lists.push(url.search);
    });
    askMany('paged', 75);
    for (;;) {
      const token = new URL(server.url).searchParams.get('token');
      const { pending } = await (await fetch(`${server.base}/api/v1/questions`, { headers: { Authorization: `Bearer ${token}` } })).json();
      if (pending.length === 75) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    await page.goto(server.url);
    await waitCount(page, 75);
    assert.equal(lists[0], '?after=0&limit=50', 'the first page is small');
    await page.waitForFunction(() => document.getElementById('filter-box').hidden === false);
    // The last batch came on the second page: the filter finds it.
    await page.getByLabel('Filter by agent, header or question').fill('paged-74');
    await page.locator('section.batch', { hasText: 'paged-74?' }).waitFor();
    assert.equal(await page.locator('section.batch').count(), 1);
    assert.match(lists[1], /^\?after=\d+&limit=1000$/, `the page asked for more: ${lists}`);
    assert.equal(Number(lists[1].match(/after=(\d+)/)[1]) > 0, true);
    assert.equal(await page.locator('#filter-status').textContent(), '1 of 75 waiting batches matches.');
    assert.deepEqual(page.problems, []);
    await context.close();
  });

  it('draws a window of a long list and more on "Show more", which takes the focus to the first new one', async () => {
    const { context, page } = await open(browser, server);
    askMany('window', 70);
    await waitCount(page, 70);
    await page.waitForFunction(() => document.querySelectorAll('section.batch').length === 30);
    const more = page.getByRole('button', { name: 'Show 30 more (40 not shown yet)' });
    await more.waitFor();
    await page.evaluate(() => document.getElementById('show-more').focus());
    await page.keyboard.press('Enter');
    // (Drawing them may bring the end of the list near the screen, which draws the rest too.)
    await page.waitForFunction(() => document.querySelectorAll('section.batch').length >= 60);
    const focused = await page.evaluate(() => {
      const e = document.activeElement;
      return [e.tagName, [...document.querySelectorAll('section.batch')].indexOf(e.closest('section.batch')) >= 30];
    });
    assert.deepEqual(focused, ['H2', true], 'a new batch has the focus, not the button');
    // Scrolled to the end, the rest draws by itself.
    await page.evaluate(() => document.getElementById('show-more')?.scrollIntoView());
    await page.waitForFunction(() => document.querySelectorAll('section.batch').length === 70);
    assert.equal(await page.locator('#show-more').count(), 0);
    noProblems(page);
    await context.close();
  });

  it('groups the list by agent when several ask, and back to one list when one is left', async () => {
    const { context, page } = await open(browser, server);
    const alpha = askMany('alpha', 2, { agent: 'alpha' });
    askMany('beta', 5, { agent: 'beta' });
    const bare = askMany('bare', 1, {});
    await waitCount(page, 8);
    const groups = page.locator('section.group');
    await page.waitForFunction(() => document.querySelectorAll('section.group').length === 3);
    assert.deepEqual(await page.locator('.group-title').allTextContents(), ['Asked by alpha', 'Asked by beta', 'Asked without an agent']);
    assert.deepEqual(await page.locator('.group-count').allTextContents(), ['2 waiting', '5 waiting', '1 waiting']);
    const beta = groups.nth(1);
    assert.equal(await beta.getByRole('heading', { name: 'Asked by beta' }).count(), 1);
    assert.equal(await beta.locator('section.batch').count(), 3, 'three per group at first');
    await beta.getByRole('button', { name: 'Show 2 more from this agent (2 not shown yet)' }).click();
    await page.waitForFunction(() => document.querySelectorAll('section.group')[1].querySelectorAll('section.batch').length === 5);
    assert.equal(await page.evaluate(() => document.activeElement.closest('section.batch') === document.querySelectorAll('section.group')[1].querySelectorAll('section.batch')[3]), true);
    await shot(page, 'grouped-by-agent');
    // Group names are text: a hostile agent id is shown as it is.
    assert.equal(await groups.nth(0).locator('.group-title bdi').textContent(), 'alpha');
    for (const name of [...alpha, ...bare]) server.withdraw(name);
    await waitCount(page, 5);
    await page.waitForFunction(() => document.querySelectorAll('section.group').length === 0);
    assert.equal(await page.locator('#batches > section.batch').count(), 5, 'one agent left: one list');
    noProblems(page);
    await context.close();
  });

  it('filters by agent, header or question text from the keyboard, and fits a phone', async () => {
    const { context, page } = await open(browser, server, { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    askMany('filt', 4, { agent: 'builder', header: 'Release' });
    askMany('other', 3, { agent: 'reviewer', header: 'Review' });
    server.ask(fresh('hostile'), { agentId: 'reviewer', questions: [{ id: 'h', header: '<img src=x onerror=alert(1)>', question: 'Merge <b>now</b>?', options: [{ label: 'Yes' }] }] });
    await waitCount(page, 8);
    const filter = page.getByLabel('Filter by agent, header or question');
    await filter.waitFor();
    // "/" takes the focus to the filter; the first Tab from the top reaches it before the list.
    await page.keyboard.press('/');
    assert.equal(await page.evaluate(() => document.activeElement.id), 'filter');
    await page.keyboard.type('review');
    await page.waitForFunction(() => document.getElementById('filter-status').textContent === '4 of 8 waiting batches match.');
    // Grouped by agent (two ask), each group shows three at first.
    assert.equal(await page.locator('section.batch').count(), 3);
    assert.deepEqual(await page.locator('.group-title').allTextContents(), ['Asked by reviewer']);
    await page.keyboard.press('Escape');
    await page.waitForFunction(() => document.querySelectorAll('section.batch').length === 6);
    await page.keyboard.type('RELEASE filt-3');
    await page.waitForFunction(() => document.querySelectorAll('section.batch').length === 1);
    await page.keyboard.press('Control+A');
    await page.keyboard.type('<b>now');
    await page.locator('section.batch', { hasText: 'Merge <b>now</b>?' }).waitFor();
    assert.equal(await page.locator('section.batch b, section.batch img').count(), 0, 'text, never HTML');
    await page.keyboard.press('Control+A');
    await page.keyboard.type('nothing like it');
    await page.waitForFunction(() => document.getElementById('filter-status').textContent === 'No waiting batch matches.');
    assert.equal(await page.locator('section.batch').count(), 0);
    const widths = await page.evaluate(() => [document.documentElement.scrollWidth, document.body.scrollWidth]);
    assert.ok(widths.every((w) => w <= 390), `no horizontal scroll (${widths})`);
    await shot(page, 'filter-phone', false);
    await filter.fill('');
    await page.waitForFunction(() => document.querySelectorAll('section.batch').length === 6);
    noProblems(page);
    await context.close();
  });

  it('keeps the list current from the stream while filtered, and keeps what was typed in a batch filtered out', async () => {
    const { context, page } = await open(browser, server);
    const names = askMany('live', 6, { header: 'Live' });
    await waitCount(page, 6);
    const first = batch(page, await ticketOf(page, 'live-0?'));
    await first.getByLabel('Other answer for: Roll out build live-0?').fill('half typed');
    await page.getByLabel('Filter by agent, header or question').fill('live-5');
    await page.waitForFunction(() => document.querySelectorAll('section.batch').length === 1);
    server.withdraw(names[5]);
    await page.waitForFunction(() => document.getElementById('filter-status').textContent === 'No waiting batch matches.');
    await waitCount(page, 5);
    const [late] = askMany('live', 1, { header: 'Live' });
    await waitCount(page, 6);
    await page.getByLabel('Filter by agent, header or question').fill('live');
    await page.waitForFunction(() => document.querySelectorAll('section.batch').length === 6);
    assert.equal(await first.getByLabel('Other answer for: Roll out build live-0?').inputValue(), 'half typed');
    server.withdraw(late);
    noProblems(page);
    await context.close();
  });
});
