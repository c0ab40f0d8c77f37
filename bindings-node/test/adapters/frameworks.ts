// Compile-time checks of the framework adapters' public types (tsc -p tsconfig.frameworks.json;
// the DOM lib because @openai/agents' realtime types name browser classes).
import { Agent as SdkAgent, type FunctionTool } from '@openai/agents'
import { Agent, Context } from '../..'
import { askUserQuestionTool, resultText } from '../../adapters/openai-agents'

const ctx = new Context()
const tool: FunctionTool<unknown, any, string> = askUserQuestionTool(ctx, { agent: new Agent('root'), timeoutMs: 1000 })
const agent = new SdkAgent({ name: 'assistant', tools: [tool] })
const text: string = resultText({ isError: false, value: { answers: [] }, content: [{ type: 'text', text: '' }] })
void [agent, text]
