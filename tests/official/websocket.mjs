// nats.ws (the official JavaScript client for browsers, on Node with the `ws` package as
// its WebSocket) and nats.js over TCP, against one beaver: messages both ways, headers,
// request/reply, a queue group across the two kinds of client.
// Usage: node websocket.mjs WS_URL NATS_URL   (prints "OK" and exits 0 on success)
import { WebSocket } from "ws";
globalThis.WebSocket = WebSocket;
const ws = await import("nats.ws");
const tcp = await import("nats");

const [wsUrl, natsUrl] = process.argv.slice(2);
const fail = (m) => { console.error(m); process.exit(1); };
const sc = tcp.StringCodec();

const w = await ws.connect({ servers: wsUrl, name: "ws-client" });
const t = await tcp.connect({ servers: natsUrl, name: "tcp-client" });

// TCP publishes, WebSocket subscribes (and the other way), 100 messages each, in order.
async function exchange(from, to, subject) {
  const sub = to.subscribe(subject, { max: 100 });
  await to.flush();
  for (let i = 0; i < 100; i++) from.publish(subject, sc.encode(`m${i}`));
  await from.flush();
  let i = 0;
  for await (const m of sub) {
    if (sc.decode(m.data) !== `m${i}`) fail(`${subject}: got ${sc.decode(m.data)} want m${i}`);
    i++;
  }
  if (i !== 100) fail(`${subject}: ${i} messages`);
}
await exchange(t, w, "to.ws");
await exchange(w, t, "to.tcp");

// Headers and a large payload (many frames for a browser-sized frame limit).
const big = new Uint8Array(300 * 1024).map((_, i) => i % 251);
const hsub = w.subscribe("hdr", { max: 1 });
await w.flush();
const h = tcp.headers();
h.set("X-Beaver", "yes");
t.publish("hdr", big, { headers: h });
for await (const m of hsub) {
  if (m.headers?.get("X-Beaver") !== "yes") fail("header lost");
  if (m.data.length !== big.length || m.data.some((b, i) => b !== big[i])) fail("payload changed");
}

// Request/reply both ways.
w.subscribe("svc.ws", { callback: (_e, m) => m.respond(sc.encode("from ws " + sc.decode(m.data))) });
t.subscribe("svc.tcp", { callback: (_e, m) => m.respond(sc.encode("from tcp " + sc.decode(m.data))) });
await w.flush();
await t.flush();
const r1 = await t.request("svc.ws", sc.encode("hi"), { timeout: 5000 });
if (sc.decode(r1.data) !== "from ws hi") fail("ws reply: " + sc.decode(r1.data));
const r2 = await w.request("svc.tcp", sc.encode("yo"), { timeout: 5000 });
if (sc.decode(r2.data) !== "from tcp yo") fail("tcp reply: " + sc.decode(r2.data));
// No responders reach a WebSocket client too.
try {
  await w.request("nobody.home", sc.encode("?"), { timeout: 5000 });
  fail("no responders expected");
} catch (e) {
  if (e.code !== "503") fail("want 503, got " + e.code);
}

// A queue group with one member of each kind: every message reaches exactly one.
let got = 0;
const q1 = w.subscribe("work", { queue: "q", callback: () => got++ });
const q2 = t.subscribe("work", { queue: "q", callback: () => got++ });
await w.flush();
await t.flush();
for (let i = 0; i < 200; i++) t.publish("work");
await t.flush();
const deadline = Date.now() + 5000;
while (got < 200 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
await w.flush();
await t.flush();
if (got !== 200) fail(`queue group: ${got} of 200`);
q1.unsubscribe();
q2.unsubscribe();

await w.drain();
await t.drain();
console.log("OK");
