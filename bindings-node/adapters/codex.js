// @ts-check
// Codex's `request_user_input` tool (and the app server's `item/tool/requestUserInput`), §21.
//
// `toRequest(input)` turns `{ questions: [{ id, header, question, options }] }` into a request,
// keeping the ids; `toResult(input, answer)` turns our answer into Codex's response
// `{ answers: { [id]: { answers: [label, 'user_note: <text>'] } } }`: the chosen label, then
// free text as a `user_note`, an empty list for a skipped question. `isSecret: true` is a
// question with a `secret` input (§24), whose value comes back as its `user_note`. What does
// not fit (more than 3 questions, a multi-select question, a secret question with options) is
// refused with INVALID_REQUEST naming it.
'use strict'

const { validateAnswer } = require('../lib/tool.js')
const { array, obj, optBool, optString, refuse, setOwn, string } = require('./_check.js')

/** How Codex's own UI sends free text next to (or instead of) a chosen option. */
const NOTE_PREFIX = 'user_note: '

/**
 * @typedef {import('./types').RequestUserInputResponse} RequestUserInputResponse
 * @typedef {import('../index').AskUserQuestionItem} Question
 * @typedef {import('../index').AskUserQuestionAnswer} Answer
 */

/**
 * `request_user_input` arguments → `{ questions }` (ids kept).
 * @param {unknown} input
 * @returns {{ questions: Question[] }}
 */
function toRequest(input) {
  const toolInput = obj(input, 'request_user_input input')
  const questions = array(toolInput.questions, 'questions')
  if (questions.length < 1 || questions.length > 3) {
    refuse(`request_user_input takes 1 to 3 questions, got ${questions.length}`)
  }
  return {
    questions: questions.map((raw, i) => {
      const path = `questions[${i}]`
      const q = obj(raw, path)
      /** @type {Question} */
      const item = { id: string(q.id, `${path}.id`), question: string(q.question, `${path}.question`) }
      const header = optString(q, 'header', path)
      if (header !== undefined) item.header = header
      if (optBool(q, 'multiSelect', path)) {
        refuse(`${path}.multiSelect cannot be carried: request_user_input has no multi-select`)
      }
      const secret = optBool(q, 'isSecret', path)
      optBool(q, 'isOther', path)
      if (q.options !== undefined && q.options !== null) {
        const options = array(q.options, `${path}.options`).map((rawOption, j) => {
          const opath = `${path}.options[${j}]`
          const o = obj(rawOption, opath)
          /** @type {{ label: string, description?: string }} */
          const option = { label: string(o.label, `${opath}.label`) }
          const description = optString(o, 'description', opath)
          if (description !== undefined) option.description = description
          return option
        })
        if (options.length > 0) item.options = options
      }
      if (secret) {
        if (item.options !== undefined) {
          refuse(`${path}.isSecret cannot be carried with options: a secret is typed, not chosen`)
        }
        item.input = { kind: 'secret' }
      }
      return item
    }),
  }
}

/**
 * Our answer to the questions of `input` → `{ answers: { [id]: { answers: [...] } } }`,
 * checked by §6 first (BAD_ANSWER).
 * @param {unknown} input
 * @param {unknown} answer
 * @returns {RequestUserInputResponse}
 */
function toResult(input, answer) {
  const request = toRequest(input)
  validateAnswer(request.questions, answer)
  /** @type {RequestUserInputResponse['answers']} */
  const answers = {}
  for (const item of /** @type {Answer} */ (answer).answers) {
    const values = [...item.selected]
    if (item.custom !== undefined) values.push(NOTE_PREFIX + item.custom)
    // A secret's value (the only input a converted request has).
    if (typeof item.value === 'string') values.push(NOTE_PREFIX + item.value)
    setOwn(answers, item.id, { answers: values })
  }
  return { answers }
}

module.exports = { NOTE_PREFIX, toRequest, toResult }
