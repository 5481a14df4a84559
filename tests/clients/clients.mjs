// One node client against the harness: `node clients.mjs <client> <text|stream|tools>`, with HARNESS_URL (the
// server's root), HARNESS_KEY and HARNESS_SCENARIO (the first user message) in the environment. Each client gets
// only the base URL and the key; everything else is its default. Prints one JSON line on stdout:
// {"text": the final answer, "deltas": the streamed pieces, "calls": the cities the tool was run with}.
// ollama-js has a fourth mode, `structured`: `format` with a JSON Schema, its answer's text as `text`.
import Anthropic from '@anthropic-ai/sdk';
import { betaTool } from '@anthropic-ai/sdk/helpers/beta/json-schema';
import { createAnthropic } from '@ai-sdk/anthropic';
import { createGoogleGenerativeAI } from '@ai-sdk/google';
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, isStepCount, jsonSchema, streamText, tool } from 'ai';
import { Ollama } from 'ollama';
import OpenAI from 'openai';

globalThis.AI_SDK_LOG_WARNINGS = false;

const [name, mode] = process.argv.slice(2);
const url = process.env.HARNESS_URL;
const apiKey = process.env.HARNESS_KEY;
const scenario = process.env.HARNESS_SCENARIO;
const calls = [];
const deltas = [];

const WEATHER_DOC = 'The weather in a city.';
const CITY = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
function getWeather({ city }) {
  calls.push(city);
  return JSON.stringify({ city, sky: 'clear' });
}

// openai: Chat Completions (runTools is the SDK's tool loop) and the Responses API (no runner: the loop is ours).
const openaiClient = () => new OpenAI({ baseURL: `${url}/v1`, apiKey, maxRetries: 0, timeout: 20000 });
const user = [{ role: 'user', content: scenario }];

const openaiChat = {
  async text() {
    const answer = await openaiClient().chat.completions.create({ model: 'gpt-4.1', messages: user });
    return answer.choices[0].message.content;
  },
  async stream() {
    const chunks = await openaiClient().chat.completions.create({ model: 'gpt-4.1', messages: user, stream: true });
    for await (const chunk of chunks) {
      const piece = chunk.choices[0]?.delta?.content;
      if (piece) deltas.push(piece);
    }
    return deltas.join('');
  },
  async tools() {
    const runner = openaiClient().chat.completions.runTools({
      model: 'gpt-4.1',
      messages: user,
      tools: [
        {
          type: 'function',
          function: { name: 'get_weather', description: WEATHER_DOC, parameters: CITY, function: getWeather, parse: JSON.parse },
        },
      ],
    });
    return await runner.finalContent();
  },
};

const RESPONSES_TOOL = { type: 'function', name: 'get_weather', description: WEATHER_DOC, parameters: CITY };
const openaiResponses = {
  async text() {
    return (await openaiClient().responses.create({ model: 'gpt-4.1', input: scenario })).output_text;
  },
  async stream() {
    const stream = openaiClient().responses.stream({ model: 'gpt-4.1', input: scenario });
    for await (const event of stream) {
      if (event.type === 'response.output_text.delta') deltas.push(event.delta);
    }
    return (await stream.finalResponse()).output_text;
  },
  async tools() {
    const client = openaiClient();
    const input = [...user];
    for (;;) {
      const response = await client.responses.create({ model: 'gpt-4.1', input, tools: [RESPONSES_TOOL] });
      const functionCalls = response.output.filter((item) => item.type === 'function_call');
      if (functionCalls.length === 0) return response.output_text;
      input.push(...response.output);
      for (const call of functionCalls) {
        input.push({ type: 'function_call_output', call_id: call.call_id, output: getWeather(JSON.parse(call.arguments)) });
      }
    }
  },
};

// @anthropic-ai/sdk: Messages, and the beta tool runner (over a message thread by default).
const anthropicClient = () => new Anthropic({ baseURL: url, apiKey, maxRetries: 0, timeout: 20000 });
const CLAUDE = 'claude-sonnet-4-6';
const anthropicMessages = {
  async text() {
    const answer = await anthropicClient().messages.create({ model: CLAUDE, max_tokens: 256, messages: user });
    return answer.content[0].text;
  },
  async stream() {
    const stream = anthropicClient().messages.stream({ model: CLAUDE, max_tokens: 256, messages: user });
    stream.on('text', (piece) => deltas.push(piece));
    return (await stream.finalMessage()).content[0].text;
  },
  async tools() {
    const weather = betaTool({ name: 'get_weather', description: WEATHER_DOC, inputSchema: CITY, run: getWeather });
    const runner = anthropicClient().beta.messages.toolRunner({
      model: CLAUDE,
      max_tokens: 256,
      messages: user,
      tools: [weather],
    });
    return (await runner.runUntilDone()).content[0].text;
  },
};

// The AI SDK: generateText, streamText, and generateText's tool loop (stopWhen: three steps at most).
function aiSdk(model) {
  const weather = tool({ description: WEATHER_DOC, inputSchema: jsonSchema(CITY), execute: async (args) => getWeather(args) });
  return {
    async text() {
      return (await generateText({ model: model(), prompt: scenario, maxRetries: 0 })).text;
    },
    async stream() {
      const result = streamText({ model: model(), prompt: scenario, maxRetries: 0, onError: () => {} });
      for await (const piece of result.textStream) deltas.push(piece);
      return await result.text;
    },
    async tools() {
      const result = await generateText({
        model: model(),
        prompt: scenario,
        tools: { get_weather: weather },
        stopWhen: isStepCount(3),
        maxRetries: 0,
      });
      return result.text;
    },
  };
}
const aiOpenai = () => createOpenAI({ baseURL: `${url}/v1`, apiKey });

// ollama-js: chat, its stream (NDJSON), the tool loop (ours: the package has no runner) and `format` with a schema.
const ollamaClient = () => new Ollama({ host: url });
const LLAMA = 'llama3.2';
const OLLAMA_TOOL = { type: 'function', function: { name: 'get_weather', description: WEATHER_DOC, parameters: CITY } };
const WEATHER = {
  type: 'object',
  properties: { city: { type: 'string' }, celsius: { type: 'integer' } },
  required: ['city', 'celsius'],
};
const ollamaJs = {
  async text() {
    return (await ollamaClient().chat({ model: LLAMA, messages: user })).message.content;
  },
  async stream() {
    const parts = await ollamaClient().chat({ model: LLAMA, messages: user, stream: true });
    for await (const part of parts) {
      if (part.message.content) deltas.push(part.message.content);
      if (part.done) return deltas.join('');
    }
    throw new Error('the stream ended without a done line');
  },
  async tools() {
    const client = ollamaClient();
    const messages = [...user];
    for (;;) {
      const { message } = await client.chat({ model: LLAMA, messages, tools: [OLLAMA_TOOL] });
      messages.push(message);
      if (!message.tool_calls?.length) return message.content;
      for (const call of message.tool_calls) {
        // Ollama's arguments are an object, not a JSON string.
        messages.push({ role: 'tool', content: getWeather(call.function.arguments), tool_name: call.function.name });
      }
    }
  },
  async structured() {
    return (await ollamaClient().chat({ model: LLAMA, messages: user, format: WEATHER })).message.content;
  },
};

const CLIENTS = {
  'openai-chat': openaiChat,
  'openai-responses': openaiResponses,
  'anthropic-messages': anthropicMessages,
  'ai-sdk-openai': aiSdk(() => aiOpenai()('gpt-4.1')),
  'ai-sdk-openai-chat': aiSdk(() => aiOpenai().chat('gpt-4.1')),
  'ai-sdk-anthropic': aiSdk(() => createAnthropic({ baseURL: `${url}/v1`, apiKey })(CLAUDE)),
  'ai-sdk-google': aiSdk(() => createGoogleGenerativeAI({ baseURL: `${url}/v1beta`, apiKey })('gemini-2.5-flash')),
  'ollama-js': ollamaJs,
};

const client = CLIENTS[name];
if (!client || !client[mode]) {
  console.error(`usage: node clients.mjs <${Object.keys(CLIENTS).join('|')}> <text|stream|tools|structured>`);
  process.exit(2);
}
const text = await client[mode]();
process.stdout.write(`${JSON.stringify({ text, deltas, calls })}\n`);
