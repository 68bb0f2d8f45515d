// The WebSocket client tests/commands/test_websocket_clients.py runs with the npm `ws` package
// (Node 20 has no global WebSocket): an OpenAI Realtime-shaped session, as a JavaScript app
// writes one. It sends session.update once session.created has come, response.create once
// session.updated has, and closes (1000) at response.done. One process runs a whole list:
//   node realtime.mjs '[{"url": "ws://127.0.0.1:PORT/v1/realtime?model=m", "label": "x",
//                        "instructions": "...", "headers": {...}}, ...]'
// prints one JSON line: [{"label", "messages": [each text message as received], "close": code,
// "reason", "error"}, ...]. Runs go one after another (the server's log stays in order).
// "client": "openai" runs the same session through the openai SDK's OpenAIRealtimeWS (on ws)
// with "base" its baseURL; "messages" are then the events it parsed, re-serialized. The SDK always
// opens wss://: its ws options get a createConnection to the plain loopback port instead.
import net from "node:net";
import OpenAI from "openai";
import { OpenAIRealtimeWS } from "openai/realtime/ws";
import WebSocket from "ws";

const INSTRUCTIONS = "Réponds en français ✓";

function sdk(run) {
  return new Promise((resolve) => {
    const client = new OpenAI({ apiKey: "sk-test-node", baseURL: run.base, maxRetries: 0 });
    const port = Number(new URL(run.base).port);
    const rt = new OpenAIRealtimeWS(
      { model: "gpt-realtime", options: { createConnection: () => net.connect({ host: "127.0.0.1", port }), perMessageDeflate: false } },
      client,
    );
    const messages = [];
    let error = null;
    const timer = setTimeout(() => { error = "no close within 30 s"; rt.socket.terminate(); }, 30000);
    rt.on("event", (event) => {
      messages.push(JSON.stringify(event));
      if (event.type === "session.created") {
        rt.send({ type: "session.update", session: { type: "realtime", instructions: run.instructions ?? INSTRUCTIONS } });
      } else if (event.type === "session.updated") {
        rt.send({ type: "response.create" });
      } else if (event.type === "response.done") {
        rt.close({ code: 1000, reason: "done" });
      }
    });
    rt.on("error", (e) => { error = error ?? String(e.message); });
    rt.socket.on("close", (code, reason) => {
      clearTimeout(timer);
      resolve({ label: run.label, messages, close: code, reason: reason.toString("utf8"), error });
    });
  });
}

function session(run) {
  if (run.client === "openai") return sdk(run);
  return new Promise((resolve) => {
    const ws = new WebSocket(run.url, run.protocols ?? [], { headers: run.headers ?? {}, perMessageDeflate: false });
    const messages = [];
    let error = null;
    // a bound on a hang, never a measure: the test fails with what came so far
    const timer = setTimeout(() => { error = "no close within 30 s"; ws.terminate(); }, 30000);
    ws.on("message", (data, isBinary) => {
      const text = data.toString("utf8");
      messages.push(isBinary ? { binary: data.toString("base64") } : text);
      const type = JSON.parse(text).type;
      if (type === "session.created") {
        ws.send(JSON.stringify({ type: "session.update", session: { type: "realtime", instructions: run.instructions ?? INSTRUCTIONS } }));
      } else if (type === "session.updated") {
        ws.send(JSON.stringify({ type: "response.create" }));
      } else if (type === "response.done") {
        ws.close(1000, "done");
      }
    });
    ws.on("error", (e) => { error = error ?? String(e.message); });
    ws.on("close", (code, reason) => {
      clearTimeout(timer);
      resolve({ label: run.label, messages, close: code, reason: reason.toString("utf8"), error });
    });
  });
}

const results = [];
for (const run of JSON.parse(process.argv[2])) results.push(await session(run));
console.log(JSON.stringify(results));
