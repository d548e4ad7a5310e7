#!/usr/bin/env python3
"""A TCP relay that counts the bytes it carries (fleet_gpu_bench.sh, WITNESS=ref).

    byte_relay.py LISTEN_PORT TARGET_PORT OUT_JSON

Listens on 127.0.0.1:LISTEN_PORT, forwards every connection to
127.0.0.1:TARGET_PORT and keeps {"up": bytes to the target, "down": bytes
back, "conns": connections} in OUT_JSON (rewritten every 0.2 s, after each
connection and at SIGTERM). Put in front of the broker's ports it gives the
bytes the broker receives from the clients or the worker: /proc/PID/io's
rchar does not count recv(2), and the submitters' connections are too short
for polling `ss`. It costs a hop: use it where the traffic is small (witnesses
by reference), not for 134 MB inline witnesses.
"""
import asyncio
import json
import os
import signal
import sys

listen_port, target_port, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
tot = {"up": 0, "down": 0, "conns": 0}


def dump():
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(tot, f)
    os.replace(tmp, out)


async def pipe(reader, writer, key):
    try:
        while True:
            data = await reader.read(1 << 20)
            if not data:
                break
            tot[key] += len(data)
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except Exception:
        pass


async def handle(cr, cw):
    tot["conns"] += 1
    try:
        br, bw = await asyncio.open_connection("127.0.0.1", target_port)
    except Exception:
        cw.close()
        return
    await asyncio.gather(pipe(cr, bw, "up"), pipe(br, cw, "down"))
    for w in (bw, cw):
        try:
            w.close()
        except Exception:
            pass
    dump()


async def main():
    await asyncio.start_server(handle, "127.0.0.1", listen_port)
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, lambda: (dump(), os._exit(0)))
    while True:
        dump()
        await asyncio.sleep(0.2)


asyncio.run(main())
