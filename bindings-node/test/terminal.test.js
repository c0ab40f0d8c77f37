// The terminal provider (§8), driven the way a shell drives it: a child Node process
// registers a TerminalProvider with stdin piped, so it asks through the numbered line prompts
// on stderr; the test types answer lines and reads the answer JSON on stdout. Stdin stays
// open until the child exits, so no answer ever comes from end of input.
'use strict'

const { test } = require('node:test')
const assert = require('node:assert/strict')
const { spawn, spawnSync } = require('node:child_process')
const fs = require('node:fs')
const path = require('node:path')

const { Context, TerminalProvider, UserQuestionError, validateAnswer } = require('..')

const EXAMPLES = path.resolve(__dirname, '..', '..', 'examples')
const MULTI_SELECT = path.join(EXAMPLES, 'multi-select.json')
const CONFIRM = path.join(EXAMPLES, 'confirm.json')
// Generous: the child starts Node and loads the addon on a busy machine.
const TIMEOUT = 60_000

// The host under test, run with `node -e`: registers a TerminalProvider and prints one line
// per ask on stdout: the answer JSON, or `CODE: message`.
//   ask REQUEST                    asks once
//   abort|dispose REQUEST NEXT     asks REQUEST; on SIGUSR2 aborts its signal / disposes the
//                                  registration; then asks NEXT through the same provider
//                                  (registered again after `dispose`)
const HOST = `
'use strict'
const fs = require('node:fs')
const { Context, TerminalProvider } = require(${JSON.stringify(path.resolve(__dirname, '..'))})

const load = (file) => JSON.parse(fs.readFileSync(file, 'utf8'))

async function ask(ctx, request) {
  try {
    return JSON.stringify(await ctx.userQuestions.ask(request))
  } catch (err) {
    return err.code + ': ' + err.message
  }
}

async function main() {
  const [mode, file, next] = process.argv.slice(1)
  const ctx = new Context()
  const provider = new TerminalProvider()
  if (provider.interactive) throw new Error('stdin is a pipe: the provider should use line prompts')
  const dispose = ctx.userQuestions.registerProvider(provider)
  if (mode === 'ask') {
    process.stdout.write(await ask(ctx, load(file)) + '\\n')
    return
  }
  const controller = new AbortController()
  const onSignal = mode === 'abort' ? () => controller.abort() : () => dispose()
  process.once('SIGUSR2', onSignal)
  process.stdout.write(await ask(ctx, { ...load(file), signal: controller.signal }) + '\\n')
  process.off('SIGUSR2', onSignal)
  if (mode === 'dispose') ctx.userQuestions.registerProvider(provider)
  process.stdout.write(await ask(ctx, load(next)) + '\\n')
}

main().catch((err) => {
  console.error(err)
  process.exitCode = 1
})
`

const PKG_PROMPT = [
  '',
  '[1/2] Package manager',
  'Which package manager should the new project use?',
  '  1) pnpm (Recommended) - Fast, strict, disk-efficient.',
  '  2) npm - Ships with Node; nothing to install.',
  '  3) yarn - Familiar to teams already on it.',
  '  o) Other: type your own answer',
  'Choose one of 1-3, or o for your own answer; empty to skip, b back, q cancel.',
  '> ',
].join('\n')
const CHECKS_PROMPT = [
  '',
  '[2/2] CI checks',
  'Which checks should run on every pull request?',
  '  1) Unit tests (Recommended) - Fast feedback on logic.',
  '  2) Lint - Style and common mistakes.',
  '  3) Type check - Catches type errors before review.',
  '  4) End-to-end - Slow, but exercises the real UI.',
  '  o) Other: type your own answer',
  'Choose any of 1-4 (e.g. 1,2), add o for your own answer; empty to skip, b back, q cancel.',
  '> ',
].join('\n')
const CONFIRM_PROMPT = [
  '',
  '[1/1] Confirm',
  'Deploy build 1.4.2 to production now?',
  '  | All 214 tests passed; the staging smoke test finished 3 minutes ago.',
  '  1) Deploy (Recommended) - Roll out to all regions now.',
  '  2) Wait - Hold the release until someone reviews it.',
  '  o) Other: type your own answer',
  'Choose one of 1-2, or o for your own answer; empty to skip, b back, q cancel.',
  '> ',
].join('\n')
const ANSWER =
  '{"answers":[{"id":"pkg","selected":["pnpm (Recommended)"]},' +
  '{"id":"checks","selected":["Lint"],"custom":"my text"}]}'
const WITHDRAWN = '\n-- withdrawn: Package manager (the asker no longer needs an answer)\n'

/** A child host: stdin a pipe the test types into, stdout and stderr collected. */
function host(t, ...args) {
  const child = spawn(process.execPath, ['-e', HOST, ...args], { stdio: ['pipe', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  let changed = () => {}
  child.stdout.setEncoding('utf8').on('data', (s) => {
    stdout += s
  })
  child.stderr.setEncoding('utf8').on('data', (s) => {
    stderr += s
    changed()
  })
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })))
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  })
  return {
    child,
    stderr: () => stderr,
    type(text) {
      child.stdin.write(text)
    },
    /** Resolves once stderr is exactly `expected` (it only grows). */
    async waitForStderr(expected) {
      const deadline = Date.now() + TIMEOUT
      while (stderr !== expected) {
        if (child.exitCode !== null || Date.now() > deadline) {
          assert.fail(`stderr never became ${JSON.stringify(expected)}; it is ${JSON.stringify(stderr)}`)
        }
        await new Promise((resolve) => {
          changed = resolve
          setTimeout(resolve, 50)
        })
      }
    },
    /** Waits for a clean exit with stdin still open; resolves with the stdout lines. */
    async finish() {
      let timer
      const timeout = new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`the host did not exit; stderr: ${stderr}`)), TIMEOUT)
      })
      try {
        const { code, signal } = await Promise.race([exited, timeout])
        assert.deepEqual({ code, signal }, { code: 0, signal: null }, stderr)
      } finally {
        clearTimeout(timer)
        child.stdin.end()
      }
      return stdout.split('\n').filter((line) => line !== '')
    },
  }
}

test('TerminalProvider is exported and served natively', () => {
  const provider = new TerminalProvider()
  assert.equal(typeof provider.interactive, 'boolean')
  // It has no JS `ask`: only a natively served provider can be registered like this.
  assert.equal('ask' in provider, false)
  const ctx = new Context()
  const dispose = ctx.userQuestions.registerProvider(provider)
  assert.equal(ctx.userQuestions.hasProvider, true)
  assert.throws(
    () => ctx.userQuestions.registerProvider(new TerminalProvider()),
    (err) => err instanceof UserQuestionError && err.code === 'DUPLICATE_PROVIDER',
  )
  dispose()
  assert.equal(ctx.userQuestions.hasProvider, false)
  ctx.dispose()
})

test('line prompts answer a single-select and a multi-select with custom text', async (t) => {
  const h = host(t, 'ask', MULTI_SELECT)
  await h.waitForStderr(PKG_PROMPT)
  h.type('1\n')
  await h.waitForStderr(PKG_PROMPT + CHECKS_PROMPT)
  h.type('2,o\n')
  await h.waitForStderr(PKG_PROMPT + CHECKS_PROMPT + 'Your answer> ')
  h.type('my text\n')
  assert.deepEqual(await h.finish(), [ANSWER])
  assert.equal(h.stderr(), PKG_PROMPT + CHECKS_PROMPT + 'Your answer> ')
  validateAnswer(require(MULTI_SELECT).questions, JSON.parse(ANSWER))
})

test('all answer lines at once', async (t) => {
  const h = host(t, 'ask', MULTI_SELECT)
  h.type('1\n2,o\nmy text\n')
  assert.deepEqual(await h.finish(), [ANSWER])
  assert.equal(h.stderr(), PKG_PROMPT + CHECKS_PROMPT + 'Your answer> ')
})

test('q cancels the batch: ASK_CANCELLED', async (t) => {
  const h = host(t, 'ask', MULTI_SELECT)
  await h.waitForStderr(PKG_PROMPT)
  h.type('q\n')
  assert.deepEqual(await h.finish(), ['ASK_CANCELLED: the user cancelled ask_user_question'])
  assert.equal(h.stderr(), PKG_PROMPT + '\n-- cancelled: Package manager\n')
})

test('end of input cancels the batch: ASK_CANCELLED', async (t) => {
  const h = host(t, 'ask', MULTI_SELECT)
  await h.waitForStderr(PKG_PROMPT)
  h.child.stdin.end()
  assert.deepEqual(await h.finish(), ['ASK_CANCELLED: the user cancelled ask_user_question'])
  assert.equal(h.stderr(), PKG_PROMPT + '\n-- cancelled: Package manager\n')
})

for (const [mode, outcome] of [
  ['abort', 'ASK_ABORTED: ask_user_question was aborted before the user answered'],
  ['dispose', 'ASK_ABORTED: the user-questions provider was disposed before the user answered'],
]) {
  // Withdrawn while its prompt waits for a line: the ask settles at once, the prompt gives way
  // to a notice, and the next ask (queued behind the withdrawal on the provider's one
  // terminal thread) gets the next line.
  test(`a withdrawn ask (${mode}) leaves the prompt and settles ASK_ABORTED`, async (t) => {
    const h = host(t, mode, MULTI_SELECT, CONFIRM)
    await h.waitForStderr(PKG_PROMPT)
    h.child.kill('SIGUSR2')
    await h.waitForStderr(PKG_PROMPT + WITHDRAWN + CONFIRM_PROMPT)
    h.type('2\n')
    assert.deepEqual(await h.finish(), [outcome, '{"answers":[{"id":"deploy","selected":["Wait"]}]}'])
    assert.equal(h.stderr(), PKG_PROMPT + WITHDRAWN + CONFIRM_PROMPT)
  })
}

test('the README terminal example runs (request.json beside it, stdin piped)', () => {
  const readme = fs.readFileSync(path.join(__dirname, '..', 'README.md'), 'utf8')
  const section = readme.split('## The terminal provider\n')[1]
  const source = section.split('```js\n')[1].split('```')[0]
  const dir = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'uq-terminal-readme-'))
  try {
    fs.mkdirSync(path.join(dir, 'node_modules'))
    fs.symlinkSync(path.join(__dirname, '..'), path.join(dir, 'node_modules', 'user-questions'), 'dir')
    fs.copyFileSync(path.join(__dirname, '..', '..', 'examples', 'multi-select.json'), path.join(dir, 'request.json'))
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', source], {
      cwd: dir,
      input: '1\n2,o\nmy text\n',
      encoding: 'utf8',
      timeout: TIMEOUT,
    })
    assert.equal(run.status, 0, run.stderr)
    assert.equal(run.stdout, `${ANSWER}\n`)
    assert.equal(run.stderr, PKG_PROMPT + CHECKS_PROMPT + 'Your answer> ')
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})
