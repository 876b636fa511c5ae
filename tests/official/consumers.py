"""nats.py's JetStream consumers, key-value and object store (the official Python client)
against a server started with -js, used as applications use them:
- a work queue: a WorkQueue stream, one durable pull consumer shared by two competing
  `pull_subscribe` fetchers, every message processed exactly once, the stream empty after
  the acks (and a second overlapping consumer refused); a fetch with nothing to fetch
  times out;
- explicit ack (double ack), nak, nak with a delay, term, in_progress; redelivery after
  ack_wait (num_delivered 2); max_deliver 2 (no third delivery);
- a durable push consumer with a deliver group on two queue subscribers (each message
  once overall); an ordered (ephemeral push, flow-controlled) consumer, in order, live too;
- deliver policies last, new, by_start_sequence, last_per_subject; consumer info
  (num_pending, num_ack_pending, delivered, ack_floor), consumers_info, delete_consumer;
- interest retention: a message stays until every consumer has acked it;
- key-value: a bucket with history 5 and a TTL, put/get/update with a revision (a wrong one
  raises), create (an existing key raises, a deleted key may be created again), delete,
  purge, keys, history, a watch (initial values, the end-of-initial marker, live updates),
  the bucket status;
- object store: a 10 MiB object put and got back equal, info, list, delete.
(nats.py 2.16 has no object links and no updates-only watch.)
Exits 0 and prints OK on success.
Usage: python3 consumers.py nats://127.0.0.1:PORT"""
import asyncio
import os
import sys
import time

import nats
from nats.errors import TimeoutError as NatsTimeout
from nats.js.api import (
    AckPolicy,
    ConsumerConfig,
    DeliverPolicy,
    KeyValueConfig,
    RetentionPolicy,
    StreamConfig,
)
from nats.js.errors import (
    BadRequestError,
    KeyNotFoundError,
    KeyWrongLastSequenceError,
    NotFoundError,
    ObjectNotFoundError,
)


async def until(what, cond, timeout=5.0):
    """Waits (at most timeout seconds) for the async cond() to be true."""
    deadline = time.monotonic() + timeout
    while not await cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)


async def no_message(sub, timeout, what):
    """A fetch that must time out (nothing to deliver)."""
    start = time.monotonic()
    try:
        msgs = await sub.fetch(1, timeout=timeout)
        raise AssertionError(f"{what}: got {[(m.subject, m.data, m.metadata) for m in msgs]}")
    except NatsTimeout:
        assert time.monotonic() - start < timeout + 2, f"{what}: the fetch took too long"


async def messages(js, stream):
    return (await js.stream_info(stream)).state.messages


async def work_queue(js):
    await js.add_stream(StreamConfig(name="WQ", subjects=["wq.>"], retention=RetentionPolicy.WORK_QUEUE))
    for i in range(100):
        await js.publish(f"wq.{i % 4}", f"job{i}".encode())
    cfg = ConsumerConfig(ack_policy=AckPolicy.EXPLICIT, ack_wait=30)
    w1 = await js.pull_subscribe("wq.>", durable="workers", stream="WQ", config=cfg)
    w2 = await js.pull_subscribe("wq.>", durable="workers", stream="WQ")
    done = []

    async def worker(sub):
        while len(done) < 100:
            try:
                msgs = await sub.fetch(7, timeout=1)
            except NatsTimeout:
                continue
            for m in msgs:
                assert m.metadata.num_delivered == 1, f"redelivered {m.metadata}"
                assert m.reply.startswith("$JS.ACK.WQ.workers."), m.reply
                done.append(m.data.decode())
                await m.ack_sync()

    await asyncio.wait_for(asyncio.gather(worker(w1), worker(w2)), 20)
    assert sorted(done) == sorted(f"job{i}" for i in range(100)), f"not each job once: {sorted(done)}"
    # acked messages leave a work queue stream
    await until("an empty work queue", lambda: messages_is(js, "WQ", 0))
    info = await js.consumer_info("WQ", "workers")
    assert (info.num_pending, info.num_ack_pending) == (0, 0), info
    assert (info.delivered.stream_seq, info.ack_floor.stream_seq) == (100, 100), info
    try:
        await js.add_consumer("WQ", ConsumerConfig(durable_name="other", ack_policy=AckPolicy.EXPLICIT))
        raise AssertionError("a second unfiltered consumer was allowed on a work queue")
    except BadRequestError as e:
        assert e.err_code == 10099, e  # multiple non-filtered consumers not allowed on workqueue stream
    # nothing left: a fetch of one and a fetch of many time out
    await no_message(w1, 0.5, "fetch 1 from an empty queue")
    try:
        await w2.fetch(5, timeout=0.5)
        raise AssertionError("fetch 5 from an empty queue returned messages")
    except NatsTimeout:
        pass
    # a job published now goes to a waiting fetch
    waiting = asyncio.ensure_future(w1.fetch(1, timeout=5))
    await asyncio.sleep(0.2)
    await js.publish("wq.late", b"late")
    late = await waiting
    assert [m.data for m in late] == [b"late"], late
    await late[0].ack_sync()
    await w1.unsubscribe()
    await w2.unsubscribe()
    assert await js.delete_stream("WQ")


async def messages_is(js, stream, n):
    return await messages(js, stream) == n


async def acks(js):
    await js.add_stream(StreamConfig(name="ACKS", subjects=["acks.>"]))
    for s in "abc":
        await js.publish(f"acks.{s}", s.encode())
    sub = await js.pull_subscribe(
        "acks.>", durable="acker", stream="ACKS", config=ConsumerConfig(ack_wait=1.5, ack_policy=AckPolicy.EXPLICIT)
    )
    a, b, c = await sub.fetch(3, timeout=2)
    assert [m.data for m in (a, b, c)] == [b"a", b"b", b"c"], (a, b, c)
    # $JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<timestamp>.<pending>
    assert a.reply.startswith("$JS.ACK.ACKS.acker.1.1.1."), a.reply
    md = c.metadata
    assert (md.stream, md.consumer, md.sequence.stream, md.sequence.consumer) == ("ACKS", "acker", 3, 3), md
    assert (md.num_delivered, md.num_pending) == (1, 0), md
    await a.ack_sync()
    await b.nak()
    await c.term()
    [b2] = await sub.fetch(1, timeout=2)
    assert (b2.data, b2.metadata.num_delivered, b2.metadata.sequence.stream) == (b"b", 2, 2), b2.metadata
    assert b2.metadata.sequence.consumer == 4, b2.metadata
    # in_progress keeps it from being redelivered beyond ack_wait
    for _ in range(4):
        await b2.in_progress()
        await no_message(sub, 0.6, "a message in progress")
    await b2.nak(delay=1)
    await no_message(sub, 0.4, "a message nak'ed with a delay")
    [b3] = await sub.fetch(1, timeout=4)
    assert (b3.data, b3.metadata.num_delivered) == (b"b", 3), b3.metadata
    await b3.ack_sync()
    info = await sub.consumer_info()
    assert (info.num_pending, info.num_ack_pending, info.num_redelivered) == (0, 0, 0), info
    assert (info.delivered.stream_seq, info.delivered.consumer_seq) == (3, 5), info.delivered
    assert (info.ack_floor.stream_seq, info.ack_floor.consumer_seq) == (3, 5), info.ack_floor
    await no_message(sub, 1.8, "a termed message")
    await sub.unsubscribe()

    # redelivery after ack_wait, and max_deliver
    await js.publish("acks.d", b"d")
    sub = await js.pull_subscribe(
        "acks.d",
        durable="retry",
        stream="ACKS",
        config=ConsumerConfig(ack_wait=1, max_deliver=2, ack_policy=AckPolicy.EXPLICIT),
    )
    [d1] = await sub.fetch(1, timeout=2)
    assert (d1.data, d1.metadata.num_delivered) == (b"d", 1), d1.metadata
    [d2] = await sub.fetch(1, timeout=4)
    assert (d2.data, d2.metadata.num_delivered, d2.metadata.sequence.stream) == (b"d", 2, 4), d2.metadata
    await no_message(sub, 2.5, "a third delivery with max_deliver 2")
    info = await sub.consumer_info()
    assert (info.num_pending, info.delivered.consumer_seq, info.ack_floor.stream_seq) == (0, 2, 0), info
    await sub.unsubscribe()
    assert await js.delete_stream("ACKS")


async def push(js):
    await js.add_stream(StreamConfig(name="PUSH", subjects=["push.>"]))
    got = {1: [], 2: []}
    everything = asyncio.Event()

    def handler(n):
        async def cb(msg):
            got[n].append(int(msg.data))
            if len(got[1]) + len(got[2]) >= 50:
                everything.set()

        return cb

    cfg = ConsumerConfig(ack_policy=AckPolicy.EXPLICIT)
    q1 = await js.subscribe("push.>", queue="grp", stream="PUSH", cb=handler(1), config=cfg)
    q2 = await js.subscribe("push.>", queue="grp", stream="PUSH", cb=handler(2))
    for i in range(50):
        await js.publish(f"push.{i % 5}", str(i).encode())
    await asyncio.wait_for(everything.wait(), 10)
    await until("the queue subscribers' acks", lambda: ack_pending_is(js, "PUSH", "grp", 0))
    assert sorted(got[1] + got[2]) == list(range(50)), f"not each message once: {got}"
    info = await js.consumer_info("PUSH", "grp")
    assert info.config.deliver_group == "grp" and info.push_bound, info
    assert (info.delivered.stream_seq, info.ack_floor.stream_seq, info.num_pending) == (50, 50, 0), info
    await q1.unsubscribe()
    await q2.unsubscribe()

    # an ordered consumer: everything, in order, then live messages
    ordered = await js.subscribe("push.>", stream="PUSH", ordered_consumer=True)
    for i in range(50):
        m = await ordered.next_msg(timeout=5)
        assert (int(m.data), m.metadata.sequence.stream) == (i, i + 1), (m.data, m.metadata)
    for i in range(50, 300):
        await js.publish(f"push.{i % 5}", str(i).encode() * 100)
    for i in range(50, 300):
        m = await ordered.next_msg(timeout=5)
        assert m.data == str(i).encode() * 100 and m.metadata.sequence.stream == i + 1, m.metadata
    await ordered.unsubscribe()
    assert await js.delete_stream("PUSH")


async def ack_pending_is(js, stream, consumer, n):
    return (await js.consumer_info(stream, consumer)).num_ack_pending == n


async def deliver_policies(js):
    await js.add_stream(StreamConfig(name="DP", subjects=["dp.>"]))
    for s in "ababa":  # dp.a: 1, 3, 5; dp.b: 2, 4
        await js.publish(f"dp.{s}", s.encode())

    async def pull(name, **cfg):
        config = ConsumerConfig(ack_policy=AckPolicy.EXPLICIT, **cfg)
        return await js.pull_subscribe("dp.>", durable=name, stream="DP", config=config)

    async def seqs(sub, n):
        msgs = await sub.fetch(n, timeout=2)
        for m in msgs:
            await m.ack()
        return [m.metadata.sequence.stream for m in msgs]

    last = await pull("last", deliver_policy=DeliverPolicy.LAST)
    new = await pull("new", deliver_policy=DeliverPolicy.NEW)
    start = await pull("start", deliver_policy=DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=3)
    info = await start.consumer_info()
    assert (info.num_pending, info.config.opt_start_seq) == (3, 3), info
    assert (await new.consumer_info()).num_pending == 0
    assert await seqs(last, 1) == [5]
    await no_message(new, 0.5, "a deliver-new consumer before a publish")
    await js.publish("dp.c", b"c")  # 6
    assert await seqs(new, 1) == [6]
    assert await seqs(start, 4) == [3, 4, 5, 6]
    per_subject = await pull("per", deliver_policy=DeliverPolicy.LAST_PER_SUBJECT)
    assert (await per_subject.consumer_info()).num_pending == 3
    assert await seqs(per_subject, 3) == [4, 5, 6]

    names = sorted(c.name for c in await js.consumers_info("DP"))
    assert names == ["last", "new", "per", "start"], names
    assert await js.delete_consumer("DP", "last")
    try:
        await js.consumer_info("DP", "last")
        raise AssertionError("a deleted consumer has info")
    except NotFoundError as e:
        assert e.err_code == 10014, e
    names = sorted(c.name for c in await js.consumers_info("DP"))
    assert names == ["new", "per", "start"], names
    for sub in (last, new, start, per_subject):
        await sub.unsubscribe()
    assert await js.delete_stream("DP")


async def interest(js):
    await js.add_stream(StreamConfig(name="INT", subjects=["int.>"], retention=RetentionPolicy.INTEREST))
    c1 = await js.pull_subscribe("int.>", durable="c1", stream="INT")
    c2 = await js.pull_subscribe("int.>", durable="c2", stream="INT")
    for i in range(3):
        await js.publish("int.x", str(i).encode())
    assert await messages(js, "INT") == 3
    for m in await c1.fetch(3, timeout=2):
        await m.ack_sync()
    assert await messages(js, "INT") == 3, "gone before every consumer acked"
    for m in await c2.fetch(3, timeout=2):
        await m.ack_sync()
    await until("acked messages to leave an interest stream", lambda: messages_is(js, "INT", 0))
    await c1.unsubscribe()
    await c2.unsubscribe()
    assert await js.delete_stream("INT")


async def key_value(js):
    kv = await js.create_key_value(KeyValueConfig(bucket="cfg", history=5, ttl=3600))
    assert await kv.put("a", b"1") == 1
    e = await kv.get("a")
    assert (e.key, e.value, e.revision, e.operation) == ("a", b"1", 1, None), e
    assert await kv.update("a", b"2", last=1) == 2
    try:
        await kv.update("a", b"x", last=1)
        raise AssertionError("an update with a wrong revision was accepted")
    except KeyWrongLastSequenceError:
        pass
    assert await kv.create("b", b"1") == 3
    try:
        await kv.create("b", b"again")
        raise AssertionError("create of an existing key was accepted")
    except KeyWrongLastSequenceError:
        pass
    await kv.delete("b")
    try:
        await kv.get("b")
        raise AssertionError("a deleted key was served")
    except KeyNotFoundError as err:  # get reports a deleted key as not found, with its op
        assert err.op == "DEL", err.op
    assert await kv.create("b", b"reborn") == 5
    for v in b"3456":
        await kv.put("a", bytes([v]))  # revisions 6..9
    assert (await kv.get("a", revision=2)).value == b"2"
    hist = await kv.history("a")
    assert [(h.value, h.revision) for h in hist] == [(b"2", 2), (b"3", 6), (b"4", 7), (b"5", 8), (b"6", 9)], hist
    await kv.put("c.d", b"x")  # 10
    assert sorted(await kv.keys()) == ["a", "b", "c.d"]

    watcher = await kv.watchall()
    initial = []
    while (entry := await watcher.updates(timeout=5)) is not None:
        initial.append((entry.key, entry.value, entry.revision))
    assert initial == [("b", b"reborn", 5), ("a", b"6", 9), ("c.d", b"x", 10)], initial
    await kv.put("a", b"live")
    await kv.delete("c.d")
    e1 = await watcher.updates(timeout=5)
    e2 = await watcher.updates(timeout=5)
    assert (e1.key, e1.value, e1.revision, e1.operation) == ("a", b"live", 11, None), e1
    assert (e2.key, e2.revision, e2.operation) == ("c.d", 12, "DEL"), e2
    await watcher.stop()

    await kv.purge("a")
    try:
        await kv.get("a")
        raise AssertionError("a purged key was served")
    except KeyNotFoundError as err:  # get reports a deleted key as not found, with its op
        assert err.op == "PURGE", err.op
    hist = await kv.history("a")
    assert [(h.revision, h.operation) for h in hist] == [(13, "PURGE")], hist
    assert sorted(await kv.keys()) == ["b"]

    status = await kv.status()
    assert (status.bucket, status.history, status.ttl) == ("cfg", 5, 3600), status
    assert status.values == 6, status  # b: 3, 4 (delete), 5; c.d: 10, 12 (delete); a: 13 (purge)
    assert (await js.stream_info("KV_cfg")).config.max_msgs_per_subject == 5
    assert await js.delete_key_value("cfg")


async def object_store(js):
    obs = await js.create_object_store("files")
    big = os.urandom(10 * 1024 * 1024)
    info = await obs.put("big.bin", big)
    assert (info.name, info.size, info.bucket) == ("big.bin", len(big), "files"), info
    assert info.chunks == 80, info.chunks  # 128 KiB chunks
    await obs.put("small.txt", b"hello")
    res = await asyncio.wait_for(obs.get("big.bin"), 30)
    assert res.data == big, "the object came back different"
    assert res.info.digest == info.digest and res.info.digest.startswith("SHA-256="), res.info
    info = await obs.get_info("small.txt")
    assert info.size == 5, info
    assert sorted(o.name for o in await obs.list()) == ["big.bin", "small.txt"]
    await obs.delete("big.bin")
    try:
        await obs.get("big.bin")
        raise AssertionError("a deleted object was served")
    except (ObjectNotFoundError, NotFoundError):
        pass
    assert sorted(o.name for o in await obs.list(ignore_deletes=True)) == ["small.txt"]
    status = await obs.status()
    assert status.bucket == "files", status
    n = await messages(js, "OBJ_files")
    assert n == 3, f"{n} messages: not the small object, its info and the deletion of the big one"
    assert await js.delete_object_store("files")


async def main(url):
    nc = await nats.connect(url)
    js = nc.jetstream(timeout=5)
    for part in (work_queue, acks, push, deliver_policies, interest, key_value, object_store):
        try:
            await part(js)
        except Exception:
            print(f"FAIL in {part.__name__}", flush=True)
            raise
    await nc.close()
    print("OK")


if __name__ == "__main__":
    asyncio.run(asyncio.wait_for(main(sys.argv[1]), 90))
