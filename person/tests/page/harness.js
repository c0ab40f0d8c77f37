// Drives the example server (web/examples/serve_for_tests.rs) and a headless Debian chromium.

import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const SHOTS = join(process.env.CARGO_TARGET_DIR ? resolve(ROOT, process.env.CARGO_TARGET_DIR) : join(ROOT, 'target'), 'web-screenshots');
const CHROMIUM = process.env.UQ_CHROMIUM || '/usr/bin/chromium';

function serverBinary() {
  if (process.env.UQ_WEB_SERVER) return process.env.UQ_WEB_SERVER;
  const target = process.env.CARGO_TARGET_DIR ? resolve(ROOT, process.env.CARGO_TARGET_DIR) : join(ROOT, 'target');
  const candidates = [];
  if (process.env.CARGO_BUILD_TARGET) candidates.push(join(target, process.env.CARGO_BUILD_TARGET, 'debug', 'examples', 'serve_for_tests'));
  candidates.push(join(target, 'debug', 'examples', 'serve_for_tests'));
  for (const entry of existsSync(target) ? readdirSync(target) : []) {
    candidates.push(join(target, entry, 'debug', 'examples', 'serve_for_tests'));
  }
  const found = candidates.find((p) => existsSync(p));
  if (!found) throw new Error(`build it first: cargo build -p user-questions-web --example serve_for_tests (looked at ${candidates.join(', ')})`);
  return found;
}

/** The example server: ask/withdraw/close by name, settlements as promises. */
export class Server {
  /** Starts one; `args` are the example's (`--listen ADDR`, `--token TOKEN`). */
  static async start(args = []) {
    const server = new Server(args);
    await server.ready;
    return server;
  }

  constructor(args = []) {
    this.child = spawn(serverBinary(), args, { stdio: ['pipe', 'pipe', 'inherit'] });
    this.waiting = new Map();
    this.results = new Map();
    this.ready = new Promise((resolveReady, reject) => {
      this.child.once('error', reject);
      this.child.once('exit', (code) => reject(new Error(`the server exited (${code})`)));
      createInterface({ input: this.child.stdout }).on('line', (line) => {
        let message;
        try {
          message = JSON.parse(line);
        } catch {
          return; // a line cut short when the server exits
        }
        if (message.url) {
          this.url = message.url;
          this.base = new URL(message.url).origin;
          resolveReady();
        } else if (message.ask !== undefined) {
          this.results.set(message.ask, message);
          const waiter = this.waiting.get(message.ask);
          if (waiter) waiter(message);
        } else if (message.bad) {
          process.stderr.write(`the server refused a command: ${message.bad}\n`);
        }
      });
    });
  }

  send(command) {
    this.child.stdin.write(`${JSON.stringify(command)}\n`);
  }

  /** Asks `request` (wire JSON) under `name`. */
  ask(name, request) {
    this.send({ ask: name, request });
  }

  withdraw(name) {
    this.send({ withdraw: name });
  }

  /** The ask's settlement line: `{ask, answer}` or `{ask, error}`. */
  result(name, timeoutMs = 15000) {
    if (this.results.has(name)) return Promise.resolve(this.results.get(name));
    return new Promise((resolveResult, reject) => {
      const timer = setTimeout(() => reject(new Error(`ask ${name} did not settle`)), timeoutMs);
      this.waiting.set(name, (message) => {
        clearTimeout(timer);
        resolveResult(message);
      });
    });
  }

  /** Cancels whatever is still pending (between tests). */
  async cancelAll() {
    const token = new URL(this.url).searchParams.get('token');
    const headers = { Authorization: `Bearer ${token}` };
    const { pending } = await (await fetch(`${this.base}/api/v1/questions`, { headers })).json();
    for (const p of pending) await fetch(`${this.base}/api/v1/questions/${p.ticket}/cancel`, { method: 'POST', headers });
  }

  settled(name) {
    return this.results.has(name);
  }

  async stop() {
    this.child.stdin.end();
    await this.exited();
  }

  /** Ends the server at once (SIGKILL): its streams drop without a last event. */
  async kill() {
    this.child.kill('SIGKILL');
    await this.exited();
  }

  exited() {
    return new Promise((r) => {
      if (this.child.exitCode !== null || this.child.signalCode !== null) r();
      else this.child.once('exit', r);
    });
  }
}

export async function launch() {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
}

/**
 * A fresh browser context (its own cookies) with one page opened at the server's URL; page
 * errors and console errors are collected in `page.problems`.
 */
export async function open(browser, server, options = {}) {
  const context = await browser.newContext({ viewport: { width: 1000, height: 900 }, ...options });
  const page = await openPage(context, server);
  return { context, page };
}

export async function openPage(context, server) {
  const page = await context.newPage();
  page.problems = [];
  page.on('pageerror', (error) => page.problems.push(`pageerror: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') page.problems.push(`console: ${message.text()}`);
  });
  await page.goto(server.url);
  await page.waitForSelector('#status.ok');
  return page;
}

export async function shot(page, name, fullPage = true) {
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage });
}

/** A question batch (section) by ticket. */
export function batch(page, ticket) {
  return page.locator(`section.batch[data-ticket="${ticket}"]`);
}
