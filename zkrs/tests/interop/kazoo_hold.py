"""A kazoo contender that queues on a lock and holds it until stdin closes (zkrs/tests).

    /usr/bin/python3 kazoo_hold.py <hosts[/chroot]> <lockPath> <identifier>

Uses kazoo's Lock with `extra_lock_patterns=["-lock-"]` so it queues behind Curator-style
nodes. Prints READY before it asks for the lock and HELD once it has it; gives up after 120 s.
"""
import os
import sys
import threading

from kazoo.client import KazooClient
from kazoo.recipe.lock import Lock


def main():
    hosts, lock_path, identifier = sys.argv[1], sys.argv[2], sys.argv[3]
    client = KazooClient(hosts=hosts, timeout=10.0)
    client.start(timeout=30)

    def exit_on_eof():
        sys.stdin.read()
        os._exit(0)

    threading.Thread(target=exit_on_eof, daemon=True).start()
    lock = Lock(client, lock_path, identifier=identifier, extra_lock_patterns=["-lock-"])
    print("READY", flush=True)
    if not lock.acquire(timeout=120):
        print("ERROR acquire timed out", flush=True)
        os._exit(3)
    print("HELD", flush=True)
    threading.Event().wait(120)
    os._exit(4)


if __name__ == "__main__":
    main()
