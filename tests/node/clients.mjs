// The Node clients tests/test_proxy_clients.py runs: each reads one stream and reports what it
// made of it. One process runs a whole list of runs (Node and the SDKs load once):
//   node clients.mjs '[{"client": "openai", "base": "http://127.0.0.1:PORT", "label": "x"}, ...]'
// prints one JSON line: [{"label", "client", "text", "tool_args", "events", "errors"}, ...].
// Clients: openai (the openai SDK, chat.completions stream), anthropic (@anthropic-ai/sdk,
// messages stream), eventsource (the eventsource package, a GET stream until [DONE]), naive (a
// hand-written decoder: fetch, TextDecoder per read, chunk.split("\n"), JSON.parse each data line).
import Anthropic from "@anthropic-ai/sdk";
import { EventSource } from "eventsource";
import OpenAI from "openai";

const MESSAGES = [{ role: "user", content: "hi" }];

async function openai(base) {
  const client = new OpenAI({ apiKey: "sk-test-node", baseURL: `${base}/v1`, maxRetries: 0, timeout: 10000 });
  const stream = await client.chat.completions.create({ model: "gpt-test", messages: MESSAGES, stream: true });
  let text = "";
  let toolArgs = "";
  for await (const chunk of stream) {
    const delta = chunk.choices[0]?.delta ?? {};
    text += delta.content ?? "";
    for (const call of delta.tool_calls ?? []) toolArgs += call.function?.arguments ?? "";
  }
  return { text, tool_args: toolArgs };
}

async function anthropic(base) {
  const client = new Anthropic({ apiKey: "sk-ant-test-node", baseURL: base, maxRetries: 0, timeout: 10000 });
  const stream = await client.messages.create({
    model: "claude-test",
    max_tokens: 64,
    messages: MESSAGES,
    stream: true,
  });
  let text = "";
  let toolArgs = "";
  for await (const event of stream) {
    if (event.type === "content_block_delta" && event.delta.type === "text_delta") text += event.delta.text;
    if (event.type === "content_block_delta" && event.delta.type === "input_json_delta") toolArgs += event.delta.partial_json;
  }
  return { text, tool_args: toolArgs };
}

function eventsource(base) {
  return new Promise((resolve, reject) => {
    const source = new EventSource(`${base}/v1/stream`);
    const events = [];
    let text = "";
    const timer = setTimeout(() => { source.close(); reject(new Error("eventsource: no [DONE] within 10 s")); }, 10000);
    source.onmessage = (event) => {
      if (event.data === "[DONE]") {
        clearTimeout(timer);
        source.close();
        resolve({ text, events });
        return;
      }
      events.push(event.data);
      text += JSON.parse(event.data).choices[0]?.delta?.content ?? "";
    };
    source.onerror = () => {}; // reconnects on its own; the timer bounds it
  });
}

async function naive(base) {
  const resp = await fetch(`${base}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer sk-test-node" },
    body: JSON.stringify({ model: "gpt-test", messages: MESSAGES, stream: true }),
  });
  const reader = resp.body.getReader();
  let text = "";
  let errors = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    const chunk = new TextDecoder().decode(value); // a new decoder per read
    for (const line of chunk.split("\n")) { // as if every read ended at a line end
      if (!line.startsWith("data: ") || line === "data: [DONE]") continue;
      try {
        text += JSON.parse(line.slice(6)).choices[0]?.delta?.content ?? "";
      } catch {
        errors += 1;
      }
    }
  }
  return { text, errors };
}

const CLIENTS = { openai, anthropic, eventsource, naive };
const out = [];
for (const run of JSON.parse(process.argv[2])) {
  try {
    out.push({ label: run.label, client: run.client, ...(await CLIENTS[run.client](run.base)) });
  } catch (error) {
    out.push({ label: run.label, client: run.client, failed: `${error.name}: ${error.message}` });
  }
}
process.stdout.write(JSON.stringify(out) + "\n");
