"""nats.py (the official Python client) against a NATS server: pub/sub with a wildcard,
a queue group, request/reply, headers, no responders. Exits 0 and prints OK on success.
Usage: python3 smoke.py nats://127.0.0.1:PORT"""
import asyncio
import sys

import nats
from nats.errors import NoRespondersError


async def main(url):
    nc = await nats.connect(url)
    assert nc.connected_server_version.major == 2, nc.connected_server_version

    sub = await nc.subscribe("greet.*")
    await nc.publish("greet.joe", b"hello", headers={"Trace-Id": "42"})
    msg = await sub.next_msg(timeout=5)
    assert (msg.subject, msg.data, msg.headers) == ("greet.joe", b"hello", {"Trace-Id": "42"}), msg

    counts = {"a": 0, "b": 0}

    async def worker(name):
        async def cb(_msg):
            counts[name] += 1
        return cb

    await nc.subscribe("jobs", queue="workers", cb=await worker("a"))
    await nc.subscribe("jobs", queue="workers", cb=await worker("b"))
    for _ in range(1000):
        await nc.publish("jobs", b"x")
    await nc.flush()
    for _ in range(100):
        if counts["a"] + counts["b"] == 1000:
            break
        await asyncio.sleep(0.05)
    assert counts["a"] + counts["b"] == 1000 and min(counts.values()) > 300, counts

    async def respond(m):
        await m.respond(b"pong:" + m.data)

    await nc.subscribe("svc", cb=respond)
    reply = await nc.request("svc", b"ping", timeout=5)
    assert reply.data == b"pong:ping", reply.data

    try:
        await nc.request("nobody.home", b"", timeout=5)
        raise AssertionError("expected no responders")
    except NoRespondersError:
        pass

    await nc.drain()
    print("OK")


asyncio.run(main(sys.argv[1]))
