// One call through a node client with its default retries: `node retry_after.mjs <client>`, with HARNESS_URL (the
// server's root), HARNESS_KEY, HARNESS_RUN (the run the calls name) and HARNESS_SCENARIO (the first user message) in
// the environment. tests/test_endpoint_retry_after.py times the wait between the attempts from the run's events.
// Prints one JSON line on stdout: {"text": the final answer}.
import Anthropic from '@anthropic-ai/sdk';
import { createOpenAI } from '@ai-sdk/openai';
import { generateText } from 'ai';
import OpenAI from 'openai';

globalThis.AI_SDK_LOG_WARNINGS = false;

const [name] = process.argv.slice(2);
const url = process.env.HARNESS_URL;
const apiKey = process.env.HARNESS_KEY;
const defaultHeaders = { 'x-harness-run': process.env.HARNESS_RUN };
const messages = [{ role: 'user', content: process.env.HARNESS_SCENARIO }];

const CLIENTS = {
  async openai() {
    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey, defaultHeaders });
    return (await client.chat.completions.create({ model: 'gpt-4.1', messages })).choices[0].message.content;
  },
  async anthropic() {
    const client = new Anthropic({ baseURL: url, apiKey, defaultHeaders });
    return (await client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 64, messages })).content[0].text;
  },
  async 'ai-sdk-openai-chat'() {
    const provider = createOpenAI({ baseURL: `${url}/v1`, apiKey, headers: defaultHeaders });
    return (await generateText({ model: provider.chat('gpt-4.1'), messages })).text;
  },
};

const call = CLIENTS[name];
if (!call) throw new Error(`unknown client ${name}; one of ${Object.keys(CLIENTS).join(', ')}`);
console.log(JSON.stringify({ text: await call() }));
