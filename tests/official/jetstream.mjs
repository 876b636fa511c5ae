// nats.js's JetStream (the official JavaScript client, nats@2) against a server started
// with -js: a file stream is created, takes acknowledged and deduplicated publishes,
// answers info and message get, purge, and is deleted. Prints OK on success.
// Usage: node jetstream.mjs 127.0.0.1:PORT
import { connect, StorageType, headers } from "nats";

function check(ok, what) {
  if (!ok) {
    console.log("FAIL: " + what);
    process.exit(1);
  }
}

const nc = await connect({ servers: process.argv[2] });
const jsm = await nc.jetstreamManager();
await jsm.streams.add({ name: "JSC", subjects: ["jsc.>"], storage: StorageType.File });
const js = nc.jetstream();
for (let i = 0; i < 100; i++) {
  const ack = await js.publish(`jsc.${i % 3}`, new TextEncoder().encode(`m${i}`));
  check(ack.stream === "JSC" && ack.seq === i + 1, `ack ${JSON.stringify(ack)}`);
}
const first = await js.publish("jsc.id", new Uint8Array(), { msgID: "x1" });
const again = await js.publish("jsc.id", new Uint8Array(), { msgID: "x1" });
check(again.duplicate && again.seq === first.seq, `dedup ${JSON.stringify(again)}`);
const info = await jsm.streams.info("JSC");
check(info.state.messages === 101, `state ${JSON.stringify(info.state)}`);
const m = await jsm.streams.getMessage("JSC", { seq: 2 });
check(m.subject === "jsc.1" && new TextDecoder().decode(m.data) === "m1", "get message");
const purged = await jsm.streams.purge("JSC", { filter: "jsc.0" });
check(purged.success && purged.purged === 34, `purge ${JSON.stringify(purged)}`);
check(await jsm.streams.delete("JSC"), "delete");
await nc.close();
console.log("OK");
