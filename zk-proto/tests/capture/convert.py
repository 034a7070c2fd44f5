#!/usr/bin/env python3
"""Turns recorder.py's raw log into the hex fixtures of zk-proto/tests/fixtures.

Each frame becomes one line `NAME DIR RECORD HEX`, preceded by a comment that decodes its
header, where
  NAME    `<step>.<op>.<req|rep|event>` (step from the driver's mark, op from the header;
          `#2`, `#3`... when a name repeats),
  DIR     `C>S` (client to server) or `S>C`,
  RECORD  the zk-proto record the body decodes to (`-` for no body), after a RequestHeader
          for C>S frames and a ReplyHeader for S>C frames; the handshake records
          `ConnectRequest`/`ConnectResponse` have no header,
  HEX     the whole frame, 4-byte length prefix included.
Frames go to one file per family, the part of the mark before the slash.
"""
import argparse
import collections
import os

OPS = {
    # op: (name, request record, response record)
    1: ("create", "CreateRequest", "CreateResponse"),
    2: ("delete", "DeleteRequest", "-"),
    3: ("exists", "ExistsRequest", "ExistsResponse"),
    4: ("getData", "GetDataRequest", "GetDataResponse"),
    5: ("setData", "SetDataRequest", "SetDataResponse"),
    6: ("getACL", "GetAclRequest", "GetAclResponse"),
    7: ("setACL", "SetAclRequest", "SetAclResponse"),
    8: ("getChildren", "GetChildrenRequest", "GetChildrenResponse"),
    9: ("sync", "SyncRequest", "SyncResponse"),
    11: ("ping", "-", "-"),
    12: ("getChildren2", "GetChildren2Request", "GetChildren2Response"),
    14: ("multi", "MultiRequest", "MultiResponse"),
    15: ("create2", "CreateRequest", "Create2Response"),
    16: ("reconfig", "ReconfigRequest", "GetDataResponse"),
    17: ("checkWatches", "CheckWatchesRequest", "-"),
    18: ("removeWatches", "RemoveWatchesRequest", "-"),
    19: ("createContainer", "CreateRequest", "Create2Response"),
    21: ("createTTL", "CreateTtlRequest", "Create2Response"),
    22: ("multiRead", "MultiRequest", "MultiResponse"),
    100: ("auth", "AuthPacket", "-"),
    101: ("setWatches", "SetWatches", "-"),
    103: ("getEphemerals", "GetEphemeralsRequest", "GetEphemeralsResponse"),
    104: ("getAllChildrenNumber", "GetAllChildrenNumberRequest", "GetAllChildrenNumberResponse"),
    105: ("setWatches2", "SetWatches2", "-"),
    106: ("addWatch", "AddWatchRequest", "ErrorResponse"),
    107: ("whoAmI", "-", "WhoAmIResponse"),
    -11: ("closeSession", "-", "-"),
}


def i32(b, o):
    return int.from_bytes(b[o:o + 4], "big", signed=True)


def i64(b, o):
    return int.from_bytes(b[o:o + 8], "big", signed=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("raw")
    ap.add_argument("outdir")
    ap.add_argument("--source", default="")
    a = ap.parse_args()

    step = "connect/new"
    seen = collections.Counter()
    files = collections.OrderedDict()
    state = {}  # conn -> {"handshake": [c_done, s_done], "xids": {xid: op}}

    for line in open(a.raw):
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "M":
            step = parts[1]
            continue
        if parts[0] != "F":
            continue
        conn, d, hexs = int(parts[1]), parts[2], parts[3]
        frame = bytes.fromhex(hexs)
        body = frame[4:]
        st = state.setdefault(conn, {"c": False, "s": False, "xids": {}})
        family, _, stepname = step.partition("/")
        stepname = stepname or family
        if d == "C" and not st["c"]:
            st["c"] = True
            op, kind, record = "connect", "req", "ConnectRequest"
            comment = (f"ConnectRequest: protocolVersion={i32(body, 0)} lastZxidSeen={i64(body, 4):#x} "
                       f"timeOut={i32(body, 12)} sessionId={i64(body, 16):#x} (conn {conn})")
        elif d == "S" and not st["s"]:
            st["s"] = True
            op, kind, record = "connect", "rep", "ConnectResponse"
            comment = (f"ConnectResponse: protocolVersion={i32(body, 0)} timeOut={i32(body, 4)} "
                       f"sessionId={i64(body, 8):#x} (conn {conn})")
        elif d == "C":
            xid, opc = i32(body, 0), i32(body, 4)
            st["xids"][xid] = opc
            op, req, _ = OPS.get(opc, (f"op{opc}", "?", "?"))
            kind, record = "req", req
            comment = f"request header: xid={xid} op={op}({opc})"
        else:
            xid, zxid, err = i32(body, 0), i64(body, 4), i32(body, 12)
            if xid == -1:
                op, kind, record = "notification", "event", "WatcherEvent"
            else:
                opc = st["xids"].get(xid)
                op, _, rep = OPS.get(opc, (f"op{opc}", "?", "?"))
                kind, record = "rep", rep
                if err != 0 and len(body) == 16:
                    record = "-"
            comment = f"reply header: xid={xid} zxid={zxid:#x} err={err}"
        name = f"{family}.{stepname}.{op}.{kind}"
        seen[name] += 1
        if seen[name] > 1:
            name += f"#{seen[name]}"
        arrow = "C>S" if d == "C" else "S>C"
        files.setdefault(family, []).append((comment, f"{name} {arrow} {record} {hexs}"))

    os.makedirs(a.outdir, exist_ok=True)
    for family, frames in files.items():
        if family == "end":
            continue
        with open(os.path.join(a.outdir, f"{family}.hex"), "w") as out:
            out.write(f"# {family}: frames captured on the wire between the Java client and the server.\n")
            out.write(f"# Source: {a.source}\n")
            out.write("# Generated by zk-proto/tests/capture/convert.py; see README.md in this folder.\n")
            out.write("# Format: NAME DIR RECORD HEX (HEX includes the 4-byte length prefix).\n")
            for comment, line in frames:
                out.write(f"\n# {comment}\n{line}\n")


if __name__ == "__main__":
    main()
