"""A kazoo contender for the cross-library lock tests (integration-tests/tests/recipes_kazoo.rs).

    /usr/bin/python3 kazoo_locker.py <hosts[/chroot]> <lockPath> <rounds> <counterPath>

kazoo's Lock names its nodes `<hex>__lock__<seq>` and by default orders only nodes with its
own markers; `extra_lock_patterns=["-lock-"]` makes it order Curator-style (and our) nodes by
their sequence number too. The critical section checks the same markers as CuratorLocker.java:
`<counter>-writer` (ephemeral, one writer inside) and `<counter>-readers/` (must be empty), and
increments the counter read-modify-write. Prints READY, then "DONE rounds=N violations=V".
"""
import sys

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError, NoNodeError
from kazoo.recipe.lock import Lock


def main():
    hosts, lock_path, rounds, counter = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    client = KazooClient(hosts=hosts, timeout=10.0)
    client.start(timeout=30)
    lock = Lock(client, lock_path, extra_lock_patterns=["-lock-"])
    writer, readers = counter + "-writer", counter + "-readers"
    violations = 0
    print("READY", flush=True)
    for i in range(rounds):
        if not lock.acquire(timeout=120):
            print("ERROR acquire timed out in round %d" % i, flush=True)
            sys.exit(3)
        try:
            try:
                client.create(writer, ephemeral=True)
            except NodeExistsError:
                violations += 1
            if client.get_children(readers):
                violations += 1
            data, _ = client.get(counter)
            client.set(counter, str(int(data.decode().strip()) + 1).encode())
            try:
                client.delete(writer)
            except NoNodeError:
                violations += 1
        finally:
            lock.release()
    print("DONE rounds=%d violations=%d" % (rounds, violations), flush=True)
    client.stop()
    client.close()


if __name__ == "__main__":
    main()
