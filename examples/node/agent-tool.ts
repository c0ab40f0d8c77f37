// An agent-style host: the model calls the tool `ask_user_question`, and a provider written
// in TypeScript answers. Type-checked by `tsc --noEmit` (bindings-node/tsconfig.json) and run
// by bindings-node/test/examples.test.js.
//
// The provider here is a scripted "user" so the example runs unattended; a real one renders
// the questions (terminal, web page, chat) and resolves with what the human chose.
import {
  Agent,
  AskUserQuestionTool,
  Context,
  UserQuestionError,
  type AskUserQuestionAnswer,
  type AskUserQuestionItem,
  type ProviderRequest,
  type ToolResult,
  type UserQuestionProvider,
} from 'user-questions'

class ScriptedUser implements UserQuestionProvider {
  async ask(request: ProviderRequest): Promise<AskUserQuestionAnswer> {
    for (const q of request.questions) {
      const options = (q.options ?? []).map((o) => o.label).join(' | ')
      console.log(`[ui] ${request.agent?.id ?? 'host'} asks ${q.id}: ${q.question} [${options}]`)
    }
    // Pretend the human takes a moment; give up if the ask is withdrawn meanwhile.
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(resolve, 20)
      request.signal.addEventListener('abort', () => {
        clearTimeout(timer)
        reject(new UserQuestionError('the prompt was closed', 'ASK_ABORTED'))
      })
    })
    return { answers: request.questions.map((q) => ({ id: q.id, selected: pick(q) })) }
  }
}

/** The recommended option, else the first; nothing for free-text questions. */
function pick(question: AskUserQuestionItem): string[] {
  const options = question.options ?? []
  const chosen = options.find((o) => o.label.endsWith('(Recommended)')) ?? options[0]
  return chosen === undefined ? [] : [chosen.label]
}

function show(result: ToolResult): string {
  return result.isError ? `${result.error.code}: ${result.content[0].text}` : result.content[0].text
}

async function main(): Promise<void> {
  const ctx = new Context()
  try {
    const root = new Agent('main')
    ctx.agents.enter(root)
    ctx.userQuestions.registerProvider(new ScriptedUser())
    const tool = new AskUserQuestionTool(ctx)
    console.log(`[model] tools: ${tool.definition.name}`)

    // The model calls the tool with snake_case arguments, as in the schema.
    const args = {
      questions: [
        {
          id: 'pkg',
          question: 'Which package manager should I use?',
          options: [{ label: 'pnpm (Recommended)' }, { label: 'npm' }],
        },
        { id: 'extras', question: 'Install extras?', multi_select: true, options: [{ label: 'lint' }, { label: 'test' }] },
      ],
    }
    console.log(`[tool] ${show(await tool.execute(args, { agent: root, signal: AbortSignal.timeout(5000) }))}`)

    // A child agent owned by the root may not ask the human: it reports back instead.
    const worker = new Agent('worker', { delegationDepth: 1 })
    ctx.agents.enter(worker, root)
    console.log(`[tool] ${show(await tool.execute(args, { agent: worker }))}`)

    // The host's own code can ask directly and catch the typed error.
    try {
      await ctx.userQuestions.ask({ questions: [], agent: root })
    } catch (err) {
      if (err instanceof UserQuestionError) console.log(`[host] ${err.code}: ${err.message}`)
    }
  } finally {
    ctx.dispose()
  }
}

void main()
