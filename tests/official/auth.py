"""nats.py (the official Python client) logging in with an nkey seed and with a credentials
file (operator mode), and refused with a stranger's. Exits 0 and prints OK on success.
Usage: python3 auth.py NKEY_URL SEED_FILE STRANGER_SEED_FILE JWT_URL CREDS_FILE"""
import asyncio
import sys

import nats


async def round_trip(nc, payload):
    sub = await nc.subscribe("hello")
    await nc.publish("hello", payload)
    msg = await sub.next_msg(timeout=5)
    assert msg.data == payload, msg
    await sub.unsubscribe()


async def refused(url, seed):
    errors = []

    async def on_error(e):
        errors.append(e)

    try:
        nc = await nats.connect(url, nkeys_seed=seed, allow_reconnect=False,
                                connect_timeout=2, error_cb=on_error)
    except Exception as e:  # the authorization violation, as nats.py reports it
        return str(e)
    await nc.close()
    raise AssertionError("a stranger's seed connected")


async def main(nkey_url, seed, stranger, jwt_url, creds):
    nc = await nats.connect(nkey_url, nkeys_seed=seed)
    await round_trip(nc, b"signed with an nkey")
    await nc.close()

    why = await refused(nkey_url, stranger)
    assert "authorization violation" in why.lower(), why

    nc = await nats.connect(jwt_url, user_credentials=creds)
    await round_trip(nc, b"logged in with a JWT")
    await nc.close()
    print("OK")


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:6]))
