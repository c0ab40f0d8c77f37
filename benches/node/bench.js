'use strict'
// Node benchmarks: the package `user-questions` beside the pure-JS reference
// (benches/reference/reference.js, the original design's ask()), in the same process, interleaved
// round by round. Prints `BENCH <name> <value> <unit>` lines; scripts/bench makes the table.
//
//   node benches/node/bench.js [--quick | --check]   (--check: only the self-check)
//
// The package is loaded from UQ_NODE_PACKAGE (default: bindings-node/); scripts/bench makes it
// load the release addon it built under target/ (NAPI_RS_NATIVE_LIBRARY_PATH), not the debug
// addon the tests use.

const path = require('node:path')

const pkg = require(process.env.UQ_NODE_PACKAGE || path.join(__dirname, '..', '..', 'bindings-node'))
const ref = require(path.join(__dirname, '..', 'reference', 'reference.js'))
// The Node-API floors (benches/node/floor.c), when scripts/bench could build them.
const floor = process.env.UQ_NODE_FLOOR ? require(process.env.UQ_NODE_FLOOR) : undefined

const quick = process.argv.includes('--quick')
const ROUNDS = quick ? 3 : 25
const SCALES = [1, 1000, 100000]

/** The question every bench asks (the same in every language): one question, two options. */
const QUESTIONS = [
  {
    id: 'pkg',
    question: 'Which package manager?',
    options: [{ label: 'pnpm (Recommended)', description: 'Fast' }, { label: 'npm' }],
  },
]

/** A provider written in JS that answers at once with each question's first option. */
const firstOption = {
  async ask (request) {
    return {
      answers: request.questions.map((q) => ({
        id: q.id,
        selected: (q.options ?? []).slice(0, 1).map((o) => o.label),
      })),
    }
  },
}

function report (name, value, unit) {
  console.log(`BENCH ${name} ${Number(value).toPrecision(6)} ${unit}`)
}

function median (xs) {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2
}

/** Nanoseconds per call of `op` (awaited one after another) over one batch of `n`. */
async function batch (op, n) {
  const t0 = process.hrtime.bigint()
  for (let i = 0; i < n; i++) await op()
  return Number(process.hrtime.bigint() - t0) / n
}

/** A batch size that makes one batch last about `targetMs`. */
async function calibrate (op, targetMs) {
  let n = 16
  for (;;) {
    const t0 = process.hrtime.bigint()
    for (let i = 0; i < n; i++) await op()
    const ms = Number(process.hrtime.bigint() - t0) / 1e6
    if (ms >= targetMs / 4 || n >= 1 << 22) return Math.max(16, Math.round((n * targetMs) / Math.max(ms, 0.01)))
    n *= 4
  }
}

/**
 * Runs the named ops in interleaved rounds (the order rotates each round, so drift on a
 * shared machine hits all alike) and returns each op's median ns per call.
 */
async function compare (ops, targetMs = 40) {
  const names = Object.keys(ops)
  const sizes = {}
  for (const name of names) {
    await batch(ops[name], 200) // warm up (JIT)
    sizes[name] = await calibrate(ops[name], targetMs)
  }
  const samples = Object.fromEntries(names.map((n) => [n, []]))
  for (let r = 0; r < ROUNDS; r++) {
    for (let k = 0; k < names.length; k++) {
      const name = names[(r + k) % names.length]
      samples[name].push(await batch(ops[name], sizes[name]))
    }
  }
  return Object.fromEntries(names.map((n) => [n, median(samples[n])]))
}

/** A context of ours with `n` live agents (every other one a child), the last the asker. */
function oursPopulated (n) {
  const ctx = new pkg.Context()
  let lastRoot
  for (let i = 1; i < n; i++) {
    const agent = new pkg.Agent(`agent-${i}`)
    const owner = i % 2 === 0 ? lastRoot : undefined
    ctx.agents.enter(agent, owner)
    if (owner === undefined) lastRoot = agent
  }
  const asker = new pkg.Agent('asker')
  ctx.agents.enter(asker)
  ctx.userQuestions.registerProvider(firstOption)
  return { ctx, asker }
}

function refPopulated (n) {
  const agents = new ref.ReferenceAgentRegistry()
  let lastRoot
  for (let i = 1; i < n; i++) {
    const agent = { id: `agent-${i}` }
    const owner = i % 2 === 0 ? lastRoot : undefined
    agents.enter(agent, owner)
    if (owner === undefined) lastRoot = agent
  }
  const asker = { id: 'asker' }
  agents.enter(asker)
  const service = new ref.ReferenceService(agents)
  service.registerProvider(firstOption)
  return { service, asker }
}

async function perAsk () {
  const jsCtx = new pkg.Context()
  jsCtx.userQuestions.registerProvider(firstOption)
  const autoCtx = new pkg.Context()
  autoCtx.userQuestions.registerProvider(new pkg.AutoResponder('recommended'))
  const service = new ref.ReferenceService(new ref.ReferenceAgentRegistry())
  service.registerProvider(firstOption)
  const inboxCtx = new pkg.Context()
  const inbox = new pkg.QuestionInbox()
  inboxCtx.userQuestions.registerProvider(inbox)
  const responder = new pkg.AutoResponder('first')
  let ticket = 0
  const answer = { answers: [{ id: 'pkg', selected: ['npm'] }] }

  const m = await compare({
    js_provider: () => jsCtx.userQuestions.ask({ questions: QUESTIONS }),
    auto_responder: () => autoCtx.userQuestions.ask({ questions: QUESTIONS }),
    inbox_round_trip: () => {
      const p = inboxCtx.userQuestions.ask({ questions: QUESTIONS })
      inbox.answer(++ticket, answer)
      return p
    },
    reference: () => service.ask({ questions: QUESTIONS }),
    // The crossing alone: questions to native and an answer back, synchronously, no ask.
    crossing_floor: () => responder.ask({ questions: QUESTIONS }),
    ...(floor && floorOps()),
  })
  report('node.ask.js_provider', m.js_provider, 'ns')
  report('node.ask.auto_responder', m.auto_responder, 'ns')
  report('node.ask.inbox_round_trip', m.inbox_round_trip, 'ns')
  report('node.ask.reference', m.reference, 'ns')
  report('node.ask.crossing_floor', m.crossing_floor, 'ns')
  if (floor) {
    report('node.floor.typed', m.floor_typed, 'ns')
    report('node.floor.json', m.floor_json, 'ns')
    report('node.floor.json_js_provider', m.floor_json_js_provider, 'ns')
  }
  jsCtx.dispose()
  autoCtx.dispose()
  inboxCtx.dispose()
}

/**
 * The floors under the crossing (benches/node/floor.c): the bench's request carried to native
 * code and an answer back with nothing else done — no checks, no ask, no copy for the
 * provider. By Node-API reads (`typed`); by JSON text, as the package crosses (`json`); and by
 * JSON with the JS provider called in between, its answer carried to native code too, as a
 * JS-provider ask whose answer the core checks must (`json_js_provider`).
 */
function floorOps () {
  return {
    floor_typed: () => floor.typed({ questions: QUESTIONS }),
    floor_json: () => JSON.parse(floor.text(JSON.stringify({ questions: QUESTIONS }))),
    floor_json_js_provider: async () => {
      const request = { questions: QUESTIONS }
      floor.text(JSON.stringify(request))
      const answer = await firstOption.ask(request)
      return JSON.parse(floor.text(JSON.stringify(answer)))
    },
  }
}

async function identity () {
  // Every scale in the same interleaved rounds, so that load from other jobs on a shared
  // machine hits 1 and 100,000 alike.
  const ops = {}
  const contexts = []
  for (const n of SCALES) {
    const ours = oursPopulated(n)
    const theirs = refPopulated(n)
    contexts.push(ours.ctx)
    ops[`ours.${n}`] = () => ours.ctx.userQuestions.ask({ questions: QUESTIONS, agent: ours.asker })
    ops[`reference.${n}`] = () => theirs.service.ask({ questions: QUESTIONS, agent: theirs.asker })
  }
  const m = await compare(ops, 25)
  for (const name of Object.keys(ops)) report(`node.identity.${name}`, m[name], 'ns')
  for (const ctx of contexts) ctx.dispose()
}

/**
 * Before timing: the reference and the package must fail the original design's checks alike —
 * same code, same message, in its order — and answer alike, or the comparison is moot.
 */
async function selfCheck () {
  const plan = (extra) => [{ id: 'plan', question: 'Approve?', options: [{ label: 'Yes' }, { label: 'No' }], ...extra }]
  const cases = [
    ['aborted signal', (s) => ({ questions: QUESTIONS, signal: s.aborted })],
    ['no questions', () => ({ questions: [] })],
    ['stale agent', (s) => ({ questions: QUESTIONS, agent: s.stale })],
    ['child agent', (s) => ({ questions: QUESTIONS, agent: s.child })],
    ['approve names no option', () => ({ questions: plan({ detail: 'the plan', intent: { kind: 'plan-review', approve: 'Ship' } }) })],
    ['intent without detail', () => ({ questions: plan({ intent: { kind: 'plan-review', approve: 'Yes' } }) })],
    ['no provider', () => ({ questions: QUESTIONS }), true],
    ['answered', () => ({ questions: QUESTIONS })],
  ]
  const ctx = new pkg.Context()
  const root = new pkg.Agent('root')
  const child = new pkg.Agent('child')
  ctx.agents.enter(root)
  ctx.agents.enter(child, root)
  const agents = new ref.ReferenceAgentRegistry()
  const refRoot = { id: 'root' }
  const refChild = { id: 'child' }
  agents.enter(refRoot)
  agents.enter(refChild, refRoot)
  const service = new ref.ReferenceService(agents)
  const oursSide = { aborted: AbortSignal.abort(), stale: new pkg.Agent('root'), child }
  const refSide = { aborted: { aborted: true }, stale: { id: 'root' }, child: refChild }
  const outcome = (p) => p.then((a) => JSON.stringify(a), (e) => `${e.code}: ${e.message}`)
  for (const [name, make, bare] of cases) {
    let dispose, undo
    if (!bare) {
      dispose = ctx.userQuestions.registerProvider(firstOption)
      undo = service.registerProvider(firstOption)
    }
    const a = await outcome(ctx.userQuestions.ask(make(oursSide)))
    const b = await outcome(service.ask(make(refSide)))
    if (dispose) { dispose(); undo() }
    if (a !== b) throw new Error(`self-check "${name}": ours gave ${a}, the reference ${b}`)
  }
  ctx.dispose()
  if (floor) {
    // The floors do the crossing's work: each gives the answer the reference gives.
    const answering = new ref.ReferenceService(new ref.ReferenceAgentRegistry())
    answering.registerProvider(firstOption)
    const expected = JSON.stringify(await answering.ask({ questions: QUESTIONS }))
    for (const [name, op] of Object.entries(floorOps())) {
      const got = JSON.stringify(await op())
      if (got !== expected) throw new Error(`self-check "${name}": gave ${got}, the reference ${expected}`)
    }
  }
}

async function main () {
  await selfCheck()
  if (process.argv.includes('--check')) return
  await perAsk()
  await identity()
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
