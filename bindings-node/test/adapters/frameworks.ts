// Compile-time checks of the framework adapters' public types (tsc -p tsconfig.frameworks.json;
// the DOM lib because @openai/agents' realtime types name browser classes).
import { Agent as SdkAgent, type FunctionTool } from '@openai/agents'
import { Agent, Context } from '../..'
import { askUserQuestionTool, resultText } from '../../adapters/openai-agents'
import { askUserQuestionTool as aiSdkTool, TOOL_NAME } from '../../adapters/ai-sdk'
import { generateText, type ToolSet } from 'ai'

const ctx = new Context()
const tool: FunctionTool<unknown, any, string> = askUserQuestionTool(ctx, { agent: new Agent('root'), timeoutMs: 1000 })
const agent = new SdkAgent({ name: 'assistant', tools: [tool] })
const text: string = resultText({ isError: false, value: { answers: [] }, content: [{ type: 'text', text: '' }] })
const tools: ToolSet = { [TOOL_NAME]: aiSdkTool(ctx, { timeoutMs: 1000 }) }
declare const model: Parameters<typeof generateText>[0]['model']
const generated = generateText({ model, tools, prompt: 'Set up the project.' })
void [agent, text, generated]
