#!/usr/bin/env python3
"""A recording TCP proxy for ZooKeeper client traffic (loopback only).

Listens on 127.0.0.1:LISTEN, forwards every connection to 127.0.0.1:UPSTREAM unchanged, and
logs each length-prefixed frame with its direction. A line-based control port lets the driver
program label the log ("mark LABEL") and drop every proxied connection ("cut") so that the
client reconnects and re-sends its watches. Log lines:

    M <label>                      a label written by the driver before a step
    F <conn> <C|S> <hex>           one frame, length prefix included; C = client to server
    X <conn>                       the connection was closed

The proxy stops on "quit" or after --max-seconds, whichever comes first.
"""
import argparse
import asyncio
import sys


class Recorder:
    def __init__(self, log, upstream):
        self.log = log
        self.upstream = upstream
        self.next_conn = 0
        self.conns = {}  # id -> (client_writer, server_writer)
        self.stop = asyncio.Event()

    def write(self, line):
        self.log.write(line + "\n")
        self.log.flush()

    async def pump(self, conn, direction, reader, writer):
        buf = b""
        try:
            while True:
                chunk = await reader.read(65536)
                if not chunk:
                    break
                writer.write(chunk)
                buf += chunk
                while len(buf) >= 4:
                    n = int.from_bytes(buf[:4], "big", signed=True)
                    if n < 0 or len(buf) < 4 + n:
                        break
                    self.write(f"F {conn} {direction} {buf[:4 + n].hex()}")
                    buf = buf[4 + n:]
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            try:
                writer.close()
            except Exception:
                pass

    async def handle_client(self, creader, cwriter):
        conn = self.next_conn
        self.next_conn += 1
        try:
            sreader, swriter = await asyncio.open_connection("127.0.0.1", self.upstream)
        except OSError:
            cwriter.close()
            return
        self.conns[conn] = (cwriter, swriter)
        await asyncio.gather(
            self.pump(conn, "C", creader, swriter),
            self.pump(conn, "S", sreader, cwriter),
        )
        self.conns.pop(conn, None)
        self.write(f"X {conn}")

    async def handle_control(self, reader, writer):
        while True:
            line = await reader.readline()
            if not line:
                break
            cmd, _, arg = line.decode().strip().partition(" ")
            if cmd == "mark":
                self.write(f"M {arg}")
            elif cmd == "cut":
                for cw, sw in list(self.conns.values()):
                    cw.close()
                    sw.close()
            elif cmd == "quit":
                self.stop.set()
            writer.write(b"ok\n")
            await writer.drain()
            if cmd == "quit":
                break
        writer.close()


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("--listen", type=int, required=True)
    p.add_argument("--upstream", type=int, required=True)
    p.add_argument("--control", type=int, required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--max-seconds", type=float, default=180)
    a = p.parse_args()
    with open(a.log, "w") as log:
        rec = Recorder(log, a.upstream)
        proxy = await asyncio.start_server(rec.handle_client, "127.0.0.1", a.listen)
        control = await asyncio.start_server(rec.handle_control, "127.0.0.1", a.control)
        print("recorder ready", file=sys.stderr, flush=True)
        try:
            await asyncio.wait_for(rec.stop.wait(), a.max_seconds)
        except asyncio.TimeoutError:
            print("recorder: time limit reached", file=sys.stderr)
        proxy.close()
        control.close()


if __name__ == "__main__":
    asyncio.run(main())
