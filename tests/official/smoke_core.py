"""nats.py's new client (`nats-core`, module `nats.client`) against a NATS server: pub/sub
with a wildcard and headers, a queue group, request/reply, no responders. It reads INFO's
`go` field on connect. Exits 0 and prints OK on success.
Usage: python3 smoke_core.py nats://127.0.0.1:PORT"""
import asyncio
import sys

from nats.client import connect
from nats.client.errors import NoRespondersError


async def main(url):
    nc = await connect(url, allow_reconnect=False)
    assert nc.server_info.version.startswith("2."), nc.server_info
    assert nc.server_info.go_version, nc.server_info

    sub = await nc.subscribe("greet.*")
    await nc.flush()
    await nc.publish("greet.joe", b"hello", headers={"Trace-Id": "42"})
    msg = await sub.next(timeout=5)
    assert (msg.subject, msg.data) == ("greet.joe", b"hello"), msg
    assert msg.headers.get("Trace-Id") == "42", msg.headers

    a = await nc.subscribe("jobs", queue="workers")
    b = await nc.subscribe("jobs", queue="workers")
    await nc.flush()
    for _ in range(1000):
        await nc.publish("jobs", b"x")
    await nc.flush()
    counts = {"a": 0, "b": 0}
    for name, s in (("a", a), ("b", b)):
        while True:
            try:
                await s.next(timeout=1)
                counts[name] += 1
            except asyncio.TimeoutError:
                break
            except TimeoutError:
                break
    assert counts["a"] + counts["b"] == 1000 and min(counts.values()) > 300, counts

    svc = await nc.subscribe("svc")
    await nc.flush()

    async def respond():
        m = await svc.next(timeout=5)
        await nc.publish(m.reply, b"pong:" + m.data)

    responder = asyncio.create_task(respond())
    reply = await nc.request("svc", b"ping", timeout=5)
    assert reply.data == b"pong:ping", reply.data
    await responder

    try:
        await nc.request("nobody.home", b"", timeout=5)
        raise AssertionError("expected no responders")
    except NoRespondersError:
        pass

    await nc.close()
    print("OK")


asyncio.run(main(sys.argv[1]))
