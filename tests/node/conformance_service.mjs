// Test services speaking LaunchDarkly's SSE contract-test protocol (sse-contract-tests'
// docs/service_spec.md) for four npm SSE clients, for `ssemock conformance`
// (conformance/clients.toml starts them):
//   node conformance_service.mjs CLIENT PORT
// CLIENT: eventsource (the EventSource of the `eventsource` package: it reconnects, listens per
// type), eventsource-parser (its EventSourceParserStream over fetch, as its README pipes it),
// fetch-event-source (@microsoft/fetch-event-source, with the window/document it expects),
// openai-node (openai's _iterSSEMessages, the reader under its Stream).
// GET / answers the capabilities; POST / opens a stream and posts each event to callbackUrl/N,
// then one {"kind": "error"} when the stream ends or fails; DELETE /streams/N closes it.
import { readFileSync } from "node:fs";
import http from "node:http";
import { EventSource } from "eventsource";
import { EventSourceParserStream } from "eventsource-parser/stream";
import { fetchEventSource } from "@microsoft/fetch-event-source";
import { _iterSSEMessages } from "openai/core/streaming";

const [clientName, port] = process.argv.slice(2);

// fetch-event-source is written for a page: it calls window.setTimeout and document's listeners.
globalThis.window ??= globalThis;
globalThis.document ??= { hidden: false, addEventListener() {}, removeEventListener() {} };

function version(pkg) {
  // read from node_modules: a package's exports map may not export its package.json
  return JSON.parse(readFileSync(new URL(`./node_modules/${pkg}/package.json`, import.meta.url), "utf8")).version;
}

// Each client: { pkg, capabilities, open(stream) } where open reads stream.url, calls
// stream.event({type, data, id}) per event, and resolves (or rejects) when the stream ends;
// stream.closers are called on DELETE.
const CLIENTS = {
  eventsource: {
    pkg: "eventsource",
    capabilities: ["reconnect", "event-type-listeners", "last-event-id"],
    open(stream) {
      return new Promise((resolve) => {
        const source = new EventSource(stream.url, {
          fetch: (url, init) => fetch(url, { ...init, headers: { ...init.headers, ...stream.headers } }),
        });
        const deliver = (ev) => stream.event({ type: ev.type, data: ev.data, id: ev.lastEventId });
        source.addEventListener("message", deliver);
        stream.listen = (type) => source.addEventListener(type, deliver);
        source.onerror = () => {
          if (source.readyState === EventSource.CLOSED) resolve();
          else stream.error("reconnecting");
        };
        stream.closers.push(() => {
          source.close();
          resolve();
        });
      });
    },
  },
  "eventsource-parser": {
    pkg: "eventsource-parser",
    capabilities: [],
    async open(stream) {
      const response = await fetch(stream.url, { headers: stream.headers, signal: stream.signal });
      const events = response.body.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream());
      for await (const ev of events) stream.event({ type: ev.event ?? "message", data: ev.data, id: ev.id ?? "" });
    },
  },
  "fetch-event-source": {
    pkg: "@microsoft/fetch-event-source",
    capabilities: [],
    open(stream) {
      return fetchEventSource(stream.url, {
        headers: stream.headers,
        signal: stream.signal,
        openWhenHidden: true,
        onmessage: (ev) => stream.event({ type: ev.event || "message", data: ev.data, id: ev.id }),
        onerror: (err) => {
          throw err; // no retry: report the failure
        },
      });
    },
  },
  "openai-node": {
    pkg: "openai",
    capabilities: [],
    async open(stream) {
      const controller = new AbortController();
      stream.closers.push(() => controller.abort());
      const response = await fetch(stream.url, { headers: stream.headers, signal: controller.signal });
      for await (const ev of _iterSSEMessages(response, controller)) stream.event({ type: ev.event || "message", data: ev.data });
    },
  },
};

const client = CLIENTS[clientName];
if (!client) {
  console.error(`unknown client ${clientName}; one of ${Object.keys(CLIENTS).join(", ")}`);
  process.exit(2);
}

const streams = new Map();
let next = 1;

function run(id, body) {
  const aborter = new AbortController();
  const stream = {
    url: body.streamUrl,
    headers: { ...(body.headers ?? {}), ...(body.lastEventId ? { "last-event-id": body.lastEventId } : {}) },
    signal: aborter.signal,
    closers: [() => aborter.abort()],
    listen: () => {},
    closed: false,
    counter: 0,
    posting: Promise.resolve(),
  };
  // callbacks are posted one after the other, in order
  const post = (message) => {
    if (stream.closed) return;
    const n = ++stream.counter;
    stream.posting = stream.posting.then(() =>
      fetch(`${body.callbackUrl}/${n}`, { method: "POST", body: JSON.stringify(message), headers: { "content-type": "application/json" } }).catch(() => {}),
    );
  };
  stream.event = (event) => post({ kind: "event", event });
  stream.error = (comment) => post({ kind: "error", comment });
  streams.set(id, stream);
  Promise.resolve()
    .then(() => client.open(stream))
    .then(
      () => post({ kind: "error", comment: "end of stream" }),
      (err) => post({ kind: "error", comment: `${err?.name}: ${err?.message}` }),
    );
  return stream;
}

function read(request) {
  return new Promise((resolve) => {
    let raw = "";
    request.on("data", (part) => (raw += part));
    request.on("end", () => resolve(raw ? JSON.parse(raw) : {}));
  });
}

const server = http.createServer(async (request, response) => {
  const answer = (status, body, headers = {}) => {
    response.writeHead(status, { "content-type": "application/json", ...headers });
    response.end(body === undefined ? "" : JSON.stringify(body));
  };
  try {
    if (request.method === "GET" && request.url === "/") {
      return answer(200, { capabilities: client.capabilities, name: clientName, version: version(client.pkg) });
    }
    if (request.method === "POST" && request.url === "/") {
      const id = next++;
      run(id, await read(request));
      return answer(201, undefined, { location: `/streams/${id}` });
    }
    const stream = streams.get(Number(request.url.split("/")[2]));
    if (!stream) return answer(404);
    if (request.method === "POST") {
      const command = await read(request);
      if (command.command !== "listen") return answer(400);
      stream.listen(command.listen.type);
      return answer(200);
    }
    if (request.method === "DELETE") {
      streams.delete(Number(request.url.split("/")[2]));
      for (const close of stream.closers) close();
      stream.closed = true;
      return answer(204);
    }
    answer(405);
  } catch (err) {
    answer(400, { error: String(err) });
  }
});
server.listen(Number(port), "127.0.0.1");
