// The @grpc/grpc-js client tests/commands/test_serve_grpc.py drives against `ssemock serve`
// (h2c on its port): the generic servicer's four methods (tests/grpc_servers.py) called with
// identity (de)serializers, no .proto; prints what it saw as JSON.
// Usage: node grpc.mjs HOST:PORT
import grpc from "@grpc/grpc-js";

const target = process.argv[2];
const client = new grpc.Client(target, grpc.credentials.createInsecure());
const same = (b) => b;
const text = (b) => b.toString("utf8");
const deadline = () => Date.now() + 30000;
const meta = (m) =>
  Object.fromEntries(
    Object.entries(m.getMap()).map(([k, v]) => [k, Buffer.isBuffer(v) ? v.toString("hex") : v]),
  );

function serverStream(path, request) {
  return new Promise((resolve) => {
    const out = { messages: [], initial: {}, trailers: {}, code: null, details: null };
    const call = client.makeServerStreamRequest(path, same, text, Buffer.from(request), new grpc.Metadata(), {
      deadline: deadline(),
    });
    call.on("metadata", (m) => (out.initial = meta(m)));
    call.on("data", (m) => out.messages.push(m));
    call.on("error", () => {});
    call.on("status", (s) => {
      out.trailers = meta(s.metadata);
      out.code = s.code;
      out.details = s.details;
      resolve(out);
    });
  });
}

function unary(path, request) {
  return new Promise((resolve, reject) =>
    client.makeUnaryRequest(path, same, text, Buffer.from(request), { deadline: deadline() }, (err, m) =>
      err ? reject(err) : resolve(m),
    ),
  );
}

function bidi(path, requests) {
  return new Promise((resolve, reject) => {
    const got = [];
    const call = client.makeBidiStreamRequest(path, same, text, new grpc.Metadata(), { deadline: deadline() });
    call.on("data", (m) => got.push(m));
    call.on("error", reject);
    call.on("end", () => resolve(got));
    for (const r of requests) call.write(Buffer.from(r));
    call.end();
  });
}

const stream = await serverStream("/demo.Chat/Stream", "hi");
const say = await unary("/demo.Chat/Say", "yo");
const talk = await bidi("/demo.Chat/Talk", ["a", "b", "c"]);
const failing = await serverStream("/demo.Chat/Fail", "go");
client.close();
console.log(
  JSON.stringify({
    stream,
    say,
    talk,
    fail: { messages: failing.messages, code: failing.code, details: failing.details },
  }),
);
