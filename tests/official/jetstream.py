"""nats.py's JetStream (the official Python client) against a server started with -js:
a file stream is created, takes acknowledged and deduplicated publishes, answers info,
message get and delete, purge, and is deleted. Exits 0 and prints OK on success.
Usage: python3 jetstream.py nats://127.0.0.1:PORT"""
import asyncio
import sys

import nats
from nats.js.api import StreamConfig, StorageType
from nats.js.errors import BadRequestError, NotFoundError


async def main(url):
    nc = await nats.connect(url)
    assert nc._server_info.get("jetstream") is True, nc._server_info
    js = nc.jetstream()
    await js.add_stream(StreamConfig(name="PY", subjects=["py.>"], storage=StorageType.FILE))
    for i in range(100):
        ack = await js.publish(f"py.{i % 3}", f"m{i}".encode())
        assert (ack.stream, ack.seq) == ("PY", i + 1), ack
    first = await js.publish("py.id", b"once", headers={"Nats-Msg-Id": "x1"})
    again = await js.publish("py.id", b"once", headers={"Nats-Msg-Id": "x1"})
    assert again.duplicate and again.seq == first.seq == 101, (first, again)
    try:
        await js.publish("py.0", b"x", headers={"Nats-Expected-Last-Sequence": "5"})
        raise AssertionError("a wrong expected sequence was accepted")
    except BadRequestError as e:
        assert e.err_code == 10071, e
    info = await js.stream_info("PY")
    assert (info.state.messages, info.state.last_seq) == (101, 101), info.state
    msg = await js.get_msg("PY", 2)
    assert (msg.subject, msg.data) == ("py.1", b"m1"), msg
    last = await js.get_last_msg("PY", "py.id")
    assert last.seq == 101, last
    assert await js.delete_msg("PY", 2)
    try:
        await js.get_msg("PY", 2)
        raise AssertionError("a deleted message was served")
    except NotFoundError:
        pass
    purged = await js.purge_stream("PY", subject="py.0")
    assert purged, purged
    info = await js.stream_info("PY")
    assert info.state.messages == 101 - 1 - 34, info.state
    names = await js.streams_info()
    assert [s.config.name for s in names] == ["PY"], names
    assert await js.delete_stream("PY")
    await nc.close()
    print("OK")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
