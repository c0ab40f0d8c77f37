// A QuestionInbox watched by two UIs (say a web page and a chat bot): both see each pending
// question, the first answer wins, and a withdrawn ask disappears from both. Events reach the
// UIs before the call that caused them returns, and before the asker's `await` resumes
// (docs/reference.md §4.7): no UI still shows a question whose asker has moved on.
// Run it where `user-questions` resolves: in a project that installed the package
// (`npm install user-questions`), or here after `npm link` in bindings-node/ and
// `npm link user-questions` in examples/node/; bindings-node/test/examples.test.js runs it so.
import { Context, QuestionInbox, UserQuestionError } from 'user-questions'

const ctx = new Context()
const inbox = new QuestionInbox()
ctx.userQuestions.registerProvider(inbox)

/**
 * A UI that shows prompts as they come and drops them when they are settled anywhere.
 * @param {string} name
 */
function ui(name) {
  const prompts = new Map()
  inbox.subscribe((event) => {
    if (event.type === 'requested') {
      prompts.set(event.ticket, event.questions)
      console.log(`[${name}] shows #${event.ticket}: ${event.questions[0].question}`)
    } else if (event.type === 'resolved') {
      prompts.delete(event.ticket)
      console.log(`[${name}] drops #${event.ticket} (${event.outcome})`)
    }
  })
  return {
    /** @param {number} ticket @param {string} label */
    answer(ticket, label) {
      try {
        inbox.answer(ticket, { answers: [{ id: prompts.get(ticket)?.[0].id ?? '?', selected: [label] }] })
        console.log(`[${name}] answered #${ticket}`)
      } catch (err) {
        if (!(err instanceof UserQuestionError)) throw err
        console.log(`[${name}] ${err.code}: ${err.message}`)
      }
    },
  }
}

const web = ui('web')
const chat = ui('chat')

const question = { id: 'deploy', question: 'Deploy to production?', options: [{ label: 'Yes' }, { label: 'No' }] }
const asked = ctx.userQuestions.ask({ questions: [question] })
web.answer(1, 'Yes')
chat.answer(1, 'No')
const answer = await asked
console.log(`[agent] got ${JSON.stringify(answer)}`)

// A reconnecting UI replays what is pending; an ask withdrawn by its caller leaves every UI.
const controller = new AbortController()
const withdrawn = ctx.userQuestions.ask({ questions: [question], signal: controller.signal })
console.log(`[replay] pending: ${inbox.pending().map((p) => `#${p.ticket}`).join(', ')}`)
controller.abort()
const err = await withdrawn.catch((e) => e)
console.log(`[agent] ${err instanceof UserQuestionError ? err.code : err}`)
console.log(`[replay] pending: ${inbox.pending().length}`)
