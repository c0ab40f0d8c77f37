// @ts-check
// Claude Code's `AskUserQuestion` tool and a Claude Agent SDK `canUseTool` handler (§21).
//
// `toRequest(input)` turns the tool's input into a request (questions `q1`, `q2`, … in order);
// `toResult(input, answer)` turns our answer into what the tool returns:
// `{ questions, answers: { [question text]: answer } }`, multi-select labels joined by ", ",
// free text as the answer, a skipped question left out. An option's `preview` is carried both
// ways (§24: the option's `preview`; the result gives back the input's own questions). What
// does not fit (more than 4 questions, fewer than 2 or more than 4 options, a header over 12
// characters, two questions with the same text) is refused with INVALID_REQUEST naming it.
'use strict'

const { UserQuestionError } = require('../lib/errors.js')
const { validateAnswer } = require('../lib/tool.js')
const { array, obj, optBool, optString, refuse, setOwn, string } = require('./_check.js')

/** Claude's limit on a question's header, in characters (Unicode code points). */
const MAX_HEADER = 12

/**
 * @typedef {import('./types').AskUserQuestionInput} AskUserQuestionInput
 * @typedef {import('./types').AskUserQuestionResult} AskUserQuestionResult
 * @typedef {import('./types').PermissionResult} PermissionResult
 * @typedef {import('./types').CanUseToolOptions} CanUseToolOptions
 * @typedef {import('../index').AskUserQuestionRequest} Request
 * @typedef {import('../index').AskUserQuestionItem} Question
 * @typedef {import('../index').AskUserQuestionAnswer} Answer
 */

/**
 * `AskUserQuestion` tool input → `{ questions }` with ids `q1`, `q2`, ….
 * @param {unknown} input
 * @returns {{ questions: Question[] }}
 */
function toRequest(input) {
  const toolInput = obj(input, 'AskUserQuestion input')
  const questions = array(toolInput.questions, 'questions')
  if (questions.length < 1 || questions.length > 4) {
    refuse(`AskUserQuestion takes 1 to 4 questions, got ${questions.length}`)
  }
  /** @type {Question[]} */
  const items = []
  /** @type {Map<string, number>} */
  const seen = new Map()
  questions.forEach((raw, i) => {
    const path = `questions[${i}]`
    const q = obj(raw, path)
    const text = string(q.question, `${path}.question`)
    const first = seen.get(text)
    if (first !== undefined) {
      refuse(`${path}.question repeats the text of questions[${first}]; AskUserQuestion keys answers by question text`)
    }
    seen.set(text, i)
    /** @type {Question} */
    const item = { id: `q${i + 1}`, question: text }
    const header = optString(q, 'header', path)
    if (header !== undefined) {
      if ([...header].length > MAX_HEADER) refuse(`${path}.header is longer than ${MAX_HEADER} characters`)
      item.header = header
    }
    const options = array(q.options, `${path}.options`)
    if (options.length < 2 || options.length > 4) {
      refuse(`${path}.options must have 2 to 4 options for AskUserQuestion, got ${options.length}`)
    }
    item.options = options.map((rawOption, j) => {
      const opath = `${path}.options[${j}]`
      const o = obj(rawOption, opath)
      /** @type {{ label: string, description?: string, preview?: string }} */
      const option = { label: string(o.label, `${opath}.label`) }
      const description = optString(o, 'description', opath)
      if (description !== undefined) option.description = description
      const preview = optString(o, 'preview', opath)
      if (preview !== undefined) option.preview = preview
      return option
    })
    if (optBool(q, 'multiSelect', path)) item.multiSelect = true
    items.push(item)
  })
  return { questions: items }
}

/**
 * Our answer to the questions of `input` → the tool's result `{ questions, answers }`,
 * checked by §6 first (BAD_ANSWER).
 * @param {unknown} input
 * @param {unknown} answer
 * @returns {AskUserQuestionResult}
 */
function toResult(input, answer) {
  const request = toRequest(input)
  validateAnswer(request.questions, answer)
  const items = /** @type {Answer} */ (answer).answers
  /** @type {Record<string, string>} */
  const answers = {}
  request.questions.forEach((question, i) => {
    const item = items[i]
    const parts = [...item.selected]
    if (item.custom !== undefined) parts.push(item.custom)
    if (parts.length > 0) setOwn(answers, question.question, parts.join(', '))
  })
  const questions = /** @type {AskUserQuestionInput} */ (input).questions
  return { questions, answers }
}

/** @type {Record<string, string>} */
const DENIED = {
  revise: 'The user wants to keep planning before this plan is carried out.',
  rejected: 'The user rejected this plan.',
  dismissed: 'The user dismissed the plan review without approving the plan.',
}

/**
 * A `canUseTool` callback for the Claude Agent SDK's `query({ options: { canUseTool } })`.
 *
 * `AskUserQuestion`: asks `service` (a `ctx.userQuestions`) and allows the call with
 * `{ questions, answers }`. `ExitPlanMode`: reviews `input.plan` (§17); approved allows the
 * call unchanged, anything else denies it with the feedback (or a sentence naming the
 * decision) as the message. A seam error (the user cancelled, a deadline, a refused input)
 * denies with the error's message. Every other tool goes to `options.fallback`, and is denied
 * without one (this handler answers questions; it grants nothing else).
 *
 * @param {import('./types').QuestionService} service a `ctx.userQuestions`
 * @param {CanUseToolOptions} [options]
 * @returns {(toolName: string, input: Record<string, unknown>, extra: { signal: AbortSignal, [key: string]: unknown }) => Promise<PermissionResult>}
 */
function canUseTool(service, options = {}) {
  const { agent, fallback } = options
  return async (toolName, input, extra) => {
    const signal = extra?.signal
    try {
      if (toolName === 'AskUserQuestion') {
        /** @type {Request} */
        const request = { ...toRequest(input) }
        if (agent !== undefined) request.agent = agent
        if (signal !== undefined) request.signal = signal
        const answer = await service.ask(request)
        const result = toResult(input, answer)
        return { behavior: 'allow', updatedInput: { questions: result.questions, answers: result.answers } }
      }
      if (toolName === 'ExitPlanMode') {
        const plan = typeof input.plan === 'string' ? input.plan : ''
        /** @type {{ agent?: import('../index').Agent, signal?: AbortSignal }} */
        const reviewOptions = {}
        if (agent !== undefined) reviewOptions.agent = agent
        if (signal !== undefined) reviewOptions.signal = signal
        const review = await service.reviewPlan(plan, reviewOptions)
        if (review.decision === 'approved') return { behavior: 'allow', updatedInput: input }
        const message = review.feedback || DENIED[review.decision] || 'The user did not approve this plan.'
        return { behavior: 'deny', message }
      }
    } catch (err) {
      if (err instanceof UserQuestionError) return { behavior: 'deny', message: err.message }
      throw err
    }
    if (fallback) return fallback(toolName, input, extra)
    return { behavior: 'deny', message: `${toolName} is not allowed by this host's permission handler` }
  }
}

module.exports = { MAX_HEADER, toRequest, toResult, canUseTool }
