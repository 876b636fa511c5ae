// nats.js (the official JavaScript client, npm "nats" v2) against a NATS server: pub/sub with
// a wildcard, a queue group, request/reply, headers, no responders. Prints OK on success.
// Usage: node smoke.mjs 127.0.0.1:PORT
import { connect, StringCodec, headers } from "nats";

const fail = (what) => { console.log("FAIL: " + what); process.exit(1); };
const sc = StringCodec();
const nc = await connect({ servers: process.argv[2] });
if (!nc.info.headers) fail("headers not supported");

const sub = nc.subscribe("greet.*", { max: 1 });
const h = headers();
h.set("Trace-Id", "42");
nc.publish("greet.joe", sc.encode("hello"), { headers: h });
for await (const m of sub) {
  if (m.subject !== "greet.joe" || sc.decode(m.data) !== "hello" || m.headers?.get("Trace-Id") !== "42") {
    fail(`pub/sub: ${m.subject} ${sc.decode(m.data)}`);
  }
}

let a = 0, b = 0;
nc.subscribe("jobs", { queue: "workers", callback: () => a++ });
nc.subscribe("jobs", { queue: "workers", callback: () => b++ });
for (let i = 0; i < 1000; i++) nc.publish("jobs", sc.encode("x"));
await nc.flush();
for (let i = 0; i < 100 && a + b < 1000; i++) await new Promise((r) => setTimeout(r, 50));
if (a + b !== 1000 || a < 300 || b < 300) fail(`queue split ${a}/${b}`);

nc.subscribe("svc", { callback: (_e, m) => m.respond(sc.encode("pong:" + sc.decode(m.data))) });
const reply = await nc.request("svc", sc.encode("ping"), { timeout: 5000 });
if (sc.decode(reply.data) !== "pong:ping") fail("request");

try {
  await nc.request("nobody.home", sc.encode(""), { timeout: 5000 });
  fail("expected no responders");
} catch (e) {
  if (e.code !== "503") fail(`no responders: ${e.code}`);
}
await nc.drain();
console.log("OK");
