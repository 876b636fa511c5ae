"""nats.py over WebSocket (a ws:// URL; nats.py uses aiohttp for it) and nats.py over TCP,
against one server: messages both ways, headers, request/reply.

Usage: python websocket.py WS_URL NATS_URL   (prints "OK" and exits 0 on success)

nats.py's WebSocket transport may send a SUB after a PING written later (seen with
nats-server 2.9.10 too), so a flush does not prove a subscription is in place: the script
waits for a probe message (or retries a request answered "no responders") instead.
"""
import asyncio
import sys

import nats
import nats.errors


async def until_subscribed(src, dst, subject, sub_cb_seen):
    """Publishes probes on `subject` from `src` until `sub_cb_seen` (an Event set by the
    subscriber on `dst` for a probe) is set."""
    for _ in range(200):
        await src.publish(subject, b"probe")
        await src.flush()
        try:
            await asyncio.wait_for(asyncio.shield(sub_cb_seen.wait()), 0.05)
            return
        except asyncio.TimeoutError:
            pass
    raise AssertionError(f"{subject}: the subscription never took effect")


async def request(nc, subject, data):
    """A request, retried while nobody is subscribed yet (see the module docs)."""
    for _ in range(100):
        try:
            return await nc.request(subject, data, timeout=5)
        except nats.errors.NoRespondersError:
            await asyncio.sleep(0.05)
    raise AssertionError(f"{subject}: no responders")


async def main(ws_url, nats_url):
    w = await nats.connect(ws_url, name="ws-client")
    t = await nats.connect(nats_url, name="tcp-client")

    async def exchange(src, dst, subject):
        got = []
        done = asyncio.Event()
        probed = asyncio.Event()

        async def cb(m):
            if m.data == b"probe":
                probed.set()
                return
            got.append(m.data)
            if len(got) == 100:
                done.set()

        await dst.subscribe(subject, cb=cb)
        await dst.flush()
        await until_subscribed(src, dst, subject, probed)
        for i in range(100):
            await src.publish(subject, b"m%d" % i)
        await src.flush()
        await asyncio.wait_for(done.wait(), 10)
        assert got == [b"m%d" % i for i in range(100)], got[:5]

    # Subscribed before the exchanges, which prove (with their probes) that the ws client's
    # earlier SUBs are in.
    sub = await w.subscribe("hdr")
    await exchange(t, w, "to.ws")
    await exchange(w, t, "to.tcp")

    big = bytes(i % 251 for i in range(200 * 1024))
    await t.publish("hdr", big, headers={"X-Beaver": "yes"})
    m = await sub.next_msg(timeout=10)
    assert m.headers == {"X-Beaver": "yes"}, m.headers
    assert m.data == big

    async def svc(m):
        await m.respond(b"from ws " + m.data)

    await w.subscribe("svc.ws", cb=svc)
    await w.flush()
    r = await request(t, "svc.ws", b"hi")
    assert r.data == b"from ws hi", r.data

    async def svc2(m):
        await m.respond(b"from tcp " + m.data)

    await t.subscribe("svc.tcp", cb=svc2)
    await t.flush()
    r = await request(w, "svc.tcp", b"yo")
    assert r.data == b"from tcp yo", r.data

    await w.drain()
    await t.drain()
    print("OK")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
