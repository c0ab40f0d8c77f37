// The question page inside an Express app and a Hono app (docs/reference.md §25), behind the
// app's own sign-in.
//
//   npm install user-questions express hono @hono/node-server
//   node mounted-page.mjs            # Express on :8000, Hono on :8001; sign in at /login?user=alice
//   node mounted-page.mjs --check    # serves both, answers once in each as alice, prints, exits
//
// The sign-in here is a toy (a cookie naming a user); yours is whatever your app has.
import express from 'express'
import { Hono } from 'hono'
import { serve } from '@hono/node-server'
import { Context, QuestionInbox, createFetchHandler, toNodeHandler } from 'user-questions'

const USERS = {
  alice: { id: 'alice', name: 'Alice Martin', groups: ['ops'] },
  bob: { id: 'bob', name: 'Bob Stone' },
}

/** The app's own sign-in: the signed-in user, or null (the page answers 401). */
function who(request) {
  const match = /(?:^|;\s*)user=([^;]*)/.exec(request.headers.get('cookie') ?? '')
  return (match && USERS[match[1]]) || null
}

const ctx = new Context()
const inbox = new QuestionInbox()
ctx.userQuestions.registerProvider(inbox)
const handler = createFetchHandler(inbox, { authenticate: who, basePath: '/questions' })

function deploy() {
  return ctx.userQuestions.ask({
    questions: [{ id: 'deploy', question: 'Deploy build 418?', options: [{ label: 'Deploy' }, { label: 'Wait' }] }],
    to: ['ops'],
  })
}

// Express: mount before any body parser.
const expressApp = express()
expressApp.use('/questions', toNodeHandler(handler))
expressApp.get('/login', (req, res) => {
  res.cookie('user', String(req.query.user), { httpOnly: true, sameSite: 'strict' })
  res.redirect(303, '/questions/')
})

// Hono: the same handler, given the standard Request.
const honoApp = new Hono()
honoApp.all('/questions', (c) => handler(c.req.raw))
honoApp.all('/questions/*', (c) => handler(c.req.raw))

const check = process.argv.includes('--check')
const listen = (port) =>
  new Promise((resolve) => {
    const s = expressApp.listen(port, '127.0.0.1', () => resolve(s))
  })
const servers = [
  await listen(check ? 0 : 8000),
  await new Promise((resolve) => {
    const s = serve({ fetch: honoApp.fetch, port: check ? 0 : 8001, hostname: '127.0.0.1' }, () => resolve(s))
  }),
]

if (!check) {
  console.log('sign in: http://127.0.0.1:8000/login?user=alice (Express), page on :8001/questions/ too (Hono)')
  for (;;) console.log('answered:', JSON.stringify(await deploy()))
}

for (const [name, server] of [['express', servers[0]], ['hono', servers[1]]]) {
  const base = `http://127.0.0.1:${server.address().port}`
  const asked = deploy()
  while (inbox.pending().length === 0) await new Promise((r) => setTimeout(r, 10))
  const { ticket } = inbox.pending()[0]
  const sent = await fetch(`${base}/questions/api/v1/questions/${ticket}/answer`, {
    method: 'POST',
    headers: { cookie: 'user=alice', 'content-type': 'application/json' },
    body: JSON.stringify({ answers: [{ id: 'deploy', selected: ['Deploy'] }] }),
  })
  console.log(`${name}: ${sent.status} ${JSON.stringify(await asked)}`)
}
for (const server of servers) server.close()
handler.close()
