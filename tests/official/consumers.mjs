// nats.js's JetStream consumers, key-value and object store (the official JavaScript
// client, nats@2) against a server started with -js, used as applications use them:
// - a work queue: a WorkQueue stream, one durable pull consumer (jsm.consumers.add) shared
//   by two competing workers (js.consumers.get(): one consume(), one fetch() loop), every
//   message processed exactly once (ackAck), the stream empty afterwards; with nothing to
//   fetch, next() gives null, fetch() ends empty, the legacy js.pull() throws 404 and the
//   legacy js.fetch() / js.pullSubscribe() end empty;
// - ackAck, nak, nak with a delay, term, working; redelivery after ack_wait
//   (redeliveryCount 2); max_deliver 2 (no third delivery);
// - a durable push consumer with a queue on two js.subscribe()s (each message once overall);
//   an ordered push consumer and an ordered pull consumer (js.consumers.get(stream)),
//   everything in order, then live messages;
// - deliver policies last, new, by_start_sequence, last_per_subject; consumer info
//   (num_pending, num_ack_pending, delivered, ack_floor), consumers.list, consumers.delete;
// - interest retention: a message stays until every consumer has acked it;
// - key-value (js.views.kv): history 5 and a TTL, put/get/get a revision, update with a
//   revision (a wrong one fails), create (an existing key fails), delete, purge, keys,
//   history, watch (initial values, initializedFn, live updates, updates only), status;
// - object store (js.views.os): a 10 MiB object putBlob/getBlob equal, info, list, link
//   (read through the link), delete.
// Prints OK on success.
// Usage: node consumers.mjs 127.0.0.1:PORT
import {
  connect,
  consumerOpts,
  createInbox,
  AckPolicy,
  DeliverPolicy,
  KvWatchInclude,
  RetentionPolicy,
  nanos,
} from "nats";
import { randomBytes } from "node:crypto";

let part = "start";
function check(ok, what) {
  if (!ok) {
    console.log(`FAIL in ${part}: ${what}`);
    process.exit(1);
  }
}
const j = (v) => JSON.stringify(v);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const enc = (s) => new TextEncoder().encode(s);
setTimeout(() => check(false, "did not finish in 90 seconds"), 90000).unref();

// Waits (at most five seconds) for the async cond().
async function until(what, cond) {
  const deadline = Date.now() + 5000;
  while (!(await cond())) {
    check(Date.now() < deadline, `timed out waiting for ${what}`);
    await sleep(20);
  }
}
// A message within ms, or fails.
async function within(ms, p, what) {
  let t;
  const timeout = new Promise((_, rej) => (t = setTimeout(() => rej(new Error(`timed out: ${what}`)), ms)));
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(t);
  }
}
async function noMessage(c, expires, what) {
  const start = Date.now();
  const m = await c.next({ expires });
  check(m === null, `${what}: got ${m && j(m.info)}`);
  check(Date.now() - start < expires + 2000, `${what}: next took ${Date.now() - start} ms`);
}
async function fetchN(c, n, what) {
  const out = [];
  for await (const m of await c.fetch({ max_messages: n, expires: 4000 })) {
    out.push(m);
  }
  check(out.length === n, `${what}: ${out.length} messages, not ${n}`);
  return out;
}
const messages = async (stream) => (await jsm.streams.info(stream)).state.messages;

const nc = await connect({ servers: process.argv[2] });
const jsm = await nc.jetstreamManager();
const js = nc.jetstream({ timeout: 5000 });

// ---- a work queue
part = "work queue";
await jsm.streams.add({ name: "WQ", subjects: ["wq.>"], retention: RetentionPolicy.Workqueue });
for (let i = 0; i < 100; i++) await js.publish(`wq.${i % 4}`, enc(`job${i}`));
await jsm.consumers.add("WQ", { durable_name: "workers", ack_policy: AckPolicy.Explicit });
const done = [];
const deadline = Date.now() + 20000;
const consumeMsgs = await (await js.consumers.get("WQ", "workers")).consume({ max_messages: 10 });
async function handle(m) {
  check(m.info.redeliveryCount === 1, `redelivered ${m.reply}`);
  check(await m.ackAck(), "ack not acknowledged");
  done.push(m.string());
  if (done.length >= 100) consumeMsgs.stop();
}
const w1 = (async () => {
  for await (const m of consumeMsgs) await handle(m);
})();
const w2 = (async () => {
  const c = await js.consumers.get("WQ", "workers");
  while (done.length < 100) {
    check(Date.now() < deadline, `only ${done.length} jobs done`);
    for await (const m of await c.fetch({ max_messages: 7, expires: 1000 })) await handle(m);
  }
})();
await within(25000, Promise.all([w1, w2]), "the workers");
const want = Array.from({ length: 100 }, (_, i) => `job${i}`).sort();
check(j(done.sort()) === j(want), `not each job once: ${done}`);
await until("an empty work queue", async () => (await messages("WQ")) === 0);
let ci = await jsm.consumers.info("WQ", "workers");
check(ci.num_pending === 0 && ci.num_ack_pending === 0, `pending ${j(ci)}`);
check(ci.delivered.stream_seq === 100 && ci.ack_floor.stream_seq === 100, `delivered ${j(ci)}`);
const wq = await js.consumers.get("WQ", "workers");
await noMessage(wq, 1000, "next from an empty queue");
let n = 0;
for await (const _ of await wq.fetch({ max_messages: 5, expires: 1000 })) n++;
check(n === 0, `fetch from an empty queue: ${n}`);
try {
  await js.pull("WQ", "workers");
  check(false, "js.pull from an empty queue returned a message");
} catch (err) {
  check(err.code === "404", `js.pull from an empty queue: ${err.code} ${err.message}`);
}
n = 0;
for await (const _ of js.fetch("WQ", "workers", { batch: 5, expires: 500 })) n++;
check(n === 0, `js.fetch from an empty queue: ${n}`);
// a job published now goes to a waiting next()
setTimeout(() => js.publish("wq.late", enc("late")), 200);
const late = await wq.next({ expires: 5000 });
check(late && late.string() === "late", "the late job");
check(await late.ackAck(), "ack late");
// the legacy pull subscription
await js.publish("wq.legacy", enc("legacy"));
const psub = await js.pullSubscribe("wq.>", { config: { durable_name: "workers" } });
const legacy = within(5000, (async () => { for await (const m of psub) return m; })(), "pullSubscribe");
psub.pull({ batch: 1, expires: 2000 });
const lm = await legacy;
check(lm.string() === "legacy" && lm.subject === "wq.legacy", "legacy pull");
check(await lm.ackAck(), "ack legacy");
psub.unsubscribe();
await jsm.streams.delete("WQ");

// ---- acks
part = "acks";
await jsm.streams.add({ name: "ACKS", subjects: ["acks.>"] });
for (const s of "abc") await js.publish(`acks.${s}`, enc(s));
await jsm.consumers.add("ACKS", { durable_name: "acker", ack_policy: AckPolicy.Explicit, ack_wait: nanos(2000) });
const acker = await js.consumers.get("ACKS", "acker");
const [a, b, c] = await fetchN(acker, 3, "fetch 3");
check(a.string() + b.string() + c.string() === "abc", "fetched in order");
// $JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<timestamp>.<pending>
check(a.reply.startsWith("$JS.ACK.ACKS.acker.1.1.1."), `reply ${a.reply}`);
check(c.info.stream === "ACKS" && c.info.consumer === "acker" && c.info.streamSequence === 3 &&
  c.info.deliverySequence === 3 && c.info.pending === 0 && c.seq === 3, `info ${j(c.info)}`);
check(await a.ackAck(), "ackAck");
b.nak();
c.term();
const b2 = await acker.next({ expires: 3000 });
check(b2 && b2.string() === "b" && b2.redelivered && b2.info.redeliveryCount === 2 &&
  b2.info.deliverySequence === 4, `after nak ${j(b2?.info)}`);
for (let i = 0; i < 3; i++) {
  b2.working();
  await noMessage(acker, 1000, "a message in progress");
}
b2.nak(1500);
await noMessage(acker, 1000, "a message nak'ed with a delay");
const b3 = await acker.next({ expires: 4000 });
check(b3 && b3.string() === "b" && b3.info.redeliveryCount === 3, `after the delay ${j(b3?.info)}`);
check(await b3.ackAck(), "ackAck");
ci = await acker.info();
check(ci.num_pending === 0 && ci.num_ack_pending === 0 && ci.num_redelivered === 0, `info ${j(ci)}`);
check(ci.delivered.stream_seq === 3 && ci.delivered.consumer_seq === 5, `delivered ${j(ci.delivered)}`);
check(ci.ack_floor.stream_seq === 3 && ci.ack_floor.consumer_seq === 5, `ack floor ${j(ci.ack_floor)}`);
await noMessage(acker, 2500, "a termed message");
// redelivery after ack_wait, and max_deliver
await js.publish("acks.d", enc("d"));
await jsm.consumers.add("ACKS", {
  durable_name: "retry", ack_policy: AckPolicy.Explicit, ack_wait: nanos(1000), max_deliver: 2,
  filter_subject: "acks.d",
});
const retry = await js.consumers.get("ACKS", "retry");
const d1 = await retry.next({ expires: 2000 });
check(d1 && d1.string() === "d" && d1.info.redeliveryCount === 1, "first delivery");
const d2 = await retry.next({ expires: 4000 });
check(d2 && d2.info.redeliveryCount === 2 && d2.info.streamSequence === 4, `redelivery ${j(d2?.info)}`);
await noMessage(retry, 2500, "a third delivery with max_deliver 2");
ci = await retry.info();
check(ci.num_pending === 0 && ci.delivered.consumer_seq === 2, `info ${j(ci)}`);
await jsm.streams.delete("ACKS");

// ---- push: a queue group, ordered consumers
part = "push";
await jsm.streams.add({ name: "PUSH", subjects: ["push.>"] });
const got = [];
const qsubs = [];
const inbox = createInbox();
for (let q = 0; q < 2; q++) {
  const opts = consumerOpts();
  opts.durable("pushq");
  opts.queue("grp");
  opts.deliverTo(inbox);
  opts.manualAck();
  opts.ackExplicit();
  opts.callback((err, m) => {
    check(!err, `queue subscriber: ${err}`);
    got.push(Number(m.string()));
    m.ack();
  });
  qsubs.push(await js.subscribe("push.>", opts));
}
for (let i = 0; i < 50; i++) await js.publish(`push.${i % 5}`, enc(`${i}`));
await until("50 messages through the queue group", async () => got.length >= 50);
await until("the queue subscribers' acks", async () => (await jsm.consumers.info("PUSH", "pushq")).num_ack_pending === 0);
check(j(got.sort((x, y) => x - y)) === j(Array.from({ length: 50 }, (_, i) => i)), `not each message once: ${got}`);
ci = await jsm.consumers.info("PUSH", "pushq");
check(ci.config.deliver_group === "grp" && ci.push_bound, `config ${j(ci.config)}`);
check(ci.delivered.stream_seq === 50 && ci.ack_floor.stream_seq === 50 && ci.num_pending === 0, `info ${j(ci)}`);
for (const s of qsubs) s.unsubscribe();

const oopts = consumerOpts();
oopts.orderedConsumer();
const osub = await js.subscribe("push.>", oopts);
const ordered = (await js.consumers.get("PUSH")); // an ordered pull consumer
const omsgs = await ordered.consume();
const pushIter = osub[Symbol.asyncIterator]();
const pullIter = omsgs[Symbol.asyncIterator]();
async function nextIs(iter, i, what) {
  const r = await within(5000, iter.next(), `${what} ${i}`);
  const want = i < 50 ? `${i}` : `${i}`.repeat(100);
  check(!r.done && r.value.string() === want && r.value.info.streamSequence === i + 1, `${what} ${i}: ${j(r.value?.info)}`);
}
for (let i = 0; i < 50; i++) {
  await nextIs(pushIter, i, "ordered push");
  await nextIs(pullIter, i, "ordered pull");
}
for (let i = 50; i < 300; i++) await js.publish(`push.${i % 5}`, enc(`${i}`.repeat(100)));
for (let i = 50; i < 300; i++) {
  await nextIs(pushIter, i, "ordered push");
  await nextIs(pullIter, i, "ordered pull");
}
osub.unsubscribe();
omsgs.stop();
await jsm.streams.delete("PUSH");

// ---- deliver policies, consumer listing and deletion
part = "deliver policies";
await jsm.streams.add({ name: "DP", subjects: ["dp.>"] });
for (const s of "ababa") await js.publish(`dp.${s}`, enc(s)); // dp.a: 1, 3, 5; dp.b: 2, 4
async function durable(name, cfg) {
  await jsm.consumers.add("DP", { durable_name: name, ack_policy: AckPolicy.Explicit, ...cfg });
  return await js.consumers.get("DP", name);
}
async function seqs(c, n) {
  const out = [];
  for (const m of await fetchN(c, n, `fetch ${n}`)) {
    m.ack();
    out.push(m.info.streamSequence);
  }
  return j(out);
}
const last = await durable("last", { deliver_policy: DeliverPolicy.Last });
const nw = await durable("new", { deliver_policy: DeliverPolicy.New });
const start = await durable("start", { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: 3 });
ci = await start.info();
check(ci.num_pending === 3 && ci.config.opt_start_seq === 3, `start ${j(ci)}`);
check((await nw.info()).num_pending === 0, "new has pending");
check((await seqs(last, 1)) === "[5]", "deliver last");
await noMessage(nw, 1000, "a deliver-new consumer before a publish");
await js.publish("dp.c", enc("c")); // 6
check((await seqs(nw, 1)) === "[6]", "deliver new");
check((await seqs(start, 4)) === "[3,4,5,6]", "start sequence");
const per = await durable("per", { deliver_policy: DeliverPolicy.LastPerSubject, filter_subject: "dp.>" });
check((await per.info()).num_pending === 3, "last per subject pending");
const perSeqs = await seqs(per, 3);
check(perSeqs === "[4,5,6]", `last per subject ${perSeqs}`);
const names = async () => j((await jsm.consumers.list("DP").next()).map((ci) => ci.name).sort());
check((await names()) === j(["last", "new", "per", "start"]), `list ${await names()}`);
check(await jsm.consumers.delete("DP", "last"), "delete consumer");
try {
  await jsm.consumers.info("DP", "last");
  check(false, "a deleted consumer has info");
} catch (err) {
  check(err.api_error?.err_code === 10014, `a deleted consumer: ${err.message} ${j(err.api_error)}`);
}
check((await names()) === j(["new", "per", "start"]), `list ${await names()}`);
await jsm.streams.delete("DP");

// ---- interest retention
part = "interest";
await jsm.streams.add({ name: "INT", subjects: ["int.>"], retention: RetentionPolicy.Interest });
for (const name of ["c1", "c2"]) {
  await jsm.consumers.add("INT", { durable_name: name, ack_policy: AckPolicy.Explicit });
}
for (let i = 0; i < 3; i++) await js.publish("int.x", enc(`${i}`));
check((await messages("INT")) === 3, "3 stored");
for (const m of await fetchN(await js.consumers.get("INT", "c1"), 3, "c1")) check(await m.ackAck(), "ack");
check((await messages("INT")) === 3, "gone before every consumer acked");
for (const m of await fetchN(await js.consumers.get("INT", "c2"), 3, "c2")) check(await m.ackAck(), "ack");
await until("acked messages to leave an interest stream", async () => (await messages("INT")) === 0);
await jsm.streams.delete("INT");

// ---- key-value
part = "key-value";
const kv = await js.views.kv("cfg", { history: 5, ttl: 3600 * 1000 });
check((await kv.put("a", enc("1"))) === 1, "put");
let e = await kv.get("a");
check(e.key === "a" && e.string() === "1" && e.revision === 1 && e.operation === "PUT", `get ${j(e)}`);
check((await kv.update("a", enc("2"), 1)) === 2, "update");
async function fails(p, what) {
  try {
    await p;
  } catch (err) {
    check(err.api_error?.err_code === 10071, `${what}: ${err.message} ${j(err.api_error)}`);
    return;
  }
  check(false, `${what} was accepted`);
}
await fails(kv.update("a", enc("x"), 1), "an update with a wrong revision");
check((await kv.create("b", enc("1"))) === 3, "create");
await fails(kv.create("b", enc("again")), "create of an existing key");
await kv.delete("b");
e = await kv.get("b");
check(e && e.operation === "DEL" && e.revision === 4, `a deleted key: ${j(e)}`);
check((await kv.create("b", enc("reborn"))) === 5, "create after delete");
for (const v of "3456") await kv.put("a", enc(v)); // 6..9
check((await kv.get("a", { revision: 2 })).string() === "2", "get revision 2");
const entries = async (iter) => {
  const out = [];
  for await (const e of iter) out.push([e.key, e.string(), e.revision, e.operation]);
  return j(out);
};
let hist = await entries(await kv.history({ key: "a" }));
check(hist === j([["a", "2", 2, "PUT"], ["a", "3", 6, "PUT"], ["a", "4", 7, "PUT"], ["a", "5", 8, "PUT"],
  ["a", "6", 9, "PUT"]]), `history ${hist}`);
await kv.put("c.d", enc("x")); // 10
const keys = async () => {
  const out = [];
  for await (const k of await kv.keys()) out.push(k);
  return j(out.sort());
};
check((await keys()) === j(["a", "b", "c.d"]), `keys ${await keys()}`);

let initialized = false;
const w = await kv.watch({ initializedFn: () => (initialized = true) });
const wu = await kv.watch({ key: "a", include: KvWatchInclude.UpdatesOnly });
const wIter = w[Symbol.asyncIterator]();
const wuIter = wu[Symbol.asyncIterator]();
const update = async (iter) => {
  const r = await within(5000, iter.next(), "a watch update");
  return j([r.value.key, r.value.string(), r.value.revision, r.value.operation]);
};
const initial = [await update(wIter), await update(wIter), await update(wIter)];
check(j(initial) === j([j(["b", "reborn", 5, "PUT"]), j(["a", "6", 9, "PUT"]), j(["c.d", "x", 10, "PUT"])]),
  `initial values ${initial}`);
await kv.put("a", enc("live")); // 11
await kv.delete("c.d"); // 12
check((await update(wIter)) === j(["a", "live", 11, "PUT"]), "live put");
check(initialized, "initializedFn not called (it is queued between the initial values and the updates)");
check((await update(wIter)) === j(["c.d", "", 12, "DEL"]), "live delete");
check((await update(wuIter)) === j(["a", "live", 11, "PUT"]), "updates only");
w.stop();
wu.stop();

await kv.purge("a"); // 13
e = await kv.get("a");
check(e && e.operation === "PURGE" && e.revision === 13, `a purged key: ${j(e)}`);
hist = await entries(await kv.history({ key: "a" }));
check(hist === j([["a", "", 13, "PURGE"]]), `history after purge ${hist}`);
check((await keys()) === j(["b"]), `keys ${await keys()}`);
const status = await kv.status();
check(status.bucket === "cfg" && status.history === 5 && status.ttl === 3600 * 1000, `status ${j(status)}`);
// b: 3, 4 (delete), 5; c.d: 10, 12 (delete); a: 13 (purge)
check(status.values === 6, `${status.values} values`);
check(await kv.destroy(), "destroy");

// ---- object store
part = "object store";
const os = await js.views.os("files");
const big = randomBytes(10 * 1024 * 1024);
let info = await os.putBlob({ name: "big.bin" }, big);
check(info.name === "big.bin" && info.size === big.length && info.bucket === "files" && info.chunks === 80, `info ${j(info)}`);
await os.putBlob({ name: "small.txt" }, enc("hello"));
let data = await within(30000, os.getBlob("big.bin"), "getBlob");
check(data && Buffer.compare(Buffer.from(data), big) === 0, "the object came back different");
const bigInfo = await os.info("big.bin");
check(bigInfo.digest === info.digest && bigInfo.digest.startsWith("SHA-256="), `digest ${bigInfo.digest}`);
await os.link("link.bin", bigInfo);
data = await os.getBlob("link.bin");
check(data && Buffer.compare(Buffer.from(data), big) === 0, "read through the link");
const listed = async () => j((await os.list()).map((o) => o.name).sort());
check((await listed()) === j(["big.bin", "link.bin", "small.txt"]), `list ${await listed()}`);
await os.delete("link.bin");
await os.delete("big.bin");
check((await os.getBlob("big.bin")) === null, "a deleted object was served");
check((await listed()) === j(["small.txt"]), `list after delete ${await listed()}`);
check((await os.status()).bucket === "files", "status");
// the small object and its info, and the deletion markers of big.bin and link.bin
check((await messages("OBJ_files")) === 4, `${await messages("OBJ_files")} messages left`);
check(await os.destroy(), "destroy");

await nc.close();
console.log("OK");
