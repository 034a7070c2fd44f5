//! W3floor (diagnostic): W3's requests over a blocking socket with no client at all, the
//! floor of W3's CPU on this machine.
//!
//! One thread writes a framed `create`, blocks in `read` for its reply, writes the `delete`,
//! blocks again: two syscalls and one sleep per request, no runtime, no reactor, no task.
//! No client can do less per request, so its CPU per op says how much of every client's
//! W3 CPU is the kernel's (loopback TCP, waking the server, the sleep while it fsyncs).
//!
//! Not `integration_tests::probe`, the harness's raw client: that one is async (tokio's
//! socket and a timeout per call), which is what the floor leaves out.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use zk_proto::frame::encode_frame;
use zk_proto::records::{ConnectRequest, CreateRequest, DeleteRequest};
use zk_proto::{decode_prefix, Acl, ErrorCode, OpCode, Record, ReplyHeader, RequestHeader};

use crate::sys::{Meter, Sample};
use crate::{Ctx, Res};

/// Longest a reply may take before the run fails.
const REPLY_WAIT: Duration = Duration::from_secs(10);
/// Largest reply frame read (W3's replies are tens of bytes).
const MAX_FRAME: usize = 1 << 20;

/// One blocking connection speaking the protocol by hand.
struct Raw {
    stream: TcpStream,
    buf: BytesMut,
    xid: i32,
}

impl Raw {
    fn connect(addr: SocketAddr) -> Res<Raw> {
        let stream = TcpStream::connect_timeout(&addr, REPLY_WAIT)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(REPLY_WAIT))?;
        let mut raw = Raw {
            stream,
            buf: BytesMut::with_capacity(256),
            xid: 0,
        };
        let hello = ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: 0,
            timeout: 30_000,
            session_id: 0,
            passwd: Bytes::from_static(&[0; 16]),
            read_only: false,
        };
        raw.buf.clear();
        encode_frame(&mut raw.buf, |b| hello.encode(b));
        raw.stream.write_all(&raw.buf)?;
        raw.read_frame()?;
        Ok(raw)
    }

    /// Sends one request and waits for its reply; an error code fails the run.
    fn call(&mut self, op: OpCode, body: &impl Record) -> Res<()> {
        self.xid += 1;
        let header = RequestHeader {
            xid: self.xid,
            op: op as i32,
        };
        self.buf.clear();
        encode_frame(&mut self.buf, |b| {
            header.encode(b);
            body.encode(b);
        });
        self.stream.write_all(&self.buf)?;
        let reply: ReplyHeader = decode_prefix(self.read_frame()?)?;
        if reply.xid != self.xid || reply.err != ErrorCode::Ok {
            return Err(format!("{op:?}: reply {reply:?}").into());
        }
        Ok(())
    }

    fn read_frame(&mut self) -> Res<Bytes> {
        let mut len = [0u8; 4];
        self.stream.read_exact(&mut len)?;
        let len = usize::try_from(i32::from_be_bytes(len)).map_err(|_| "negative frame length")?;
        if len > MAX_FRAME {
            return Err(format!("reply frame of {len} bytes").into());
        }
        let mut body = vec![0u8; len];
        self.stream.read_exact(&mut body)?;
        Ok(Bytes::from(body))
    }
}

/// W3's pairs over [`Raw`], on a blocking thread (its CPU counts: the meter reads the whole
/// process).
pub(crate) async fn run(ctx: &Ctx, round: usize) -> Res<Sample> {
    let pairs = ctx.sizes.w3_pairs;
    let parent = format!("{}/w3-floor-{round}", ctx.root);
    let node = format!("{parent}/n");
    let addr = ctx.addr;
    let mut raw = tokio::task::spawn_blocking(move || Raw::connect(addr))
        .await
        .map_err(|e| format!("floor connect: {e}"))??;
    let create = move |path: &str| CreateRequest {
        path: path.to_owned(),
        data: Bytes::from_static(&[7; 100]),
        acl: Acl::open_unsafe().to_vec(),
        flags: 0,
    };
    let (parent_req, node_req) = (create(&parent), create(&node));
    let delete = DeleteRequest {
        path: node.clone(),
        version: -1,
    };
    let m = Meter::start(ctx.addr).await;
    let raw = tokio::task::spawn_blocking(move || -> Res<Raw> {
        raw.call(OpCode::Create, &parent_req)?;
        for _ in 0..pairs {
            raw.call(OpCode::Create, &node_req)?;
            raw.call(OpCode::Delete, &delete)?;
        }
        Ok(raw)
    });
    let mut raw = tokio::time::timeout(ctx.limits.workload, raw)
        .await
        .map_err(|_| format!("W3floor: not done within {:?}", ctx.limits.workload))?
        .map_err(|e| format!("W3floor: {e}"))??;
    // The parent's create is one request more than W3 measures: 1 in 10,000.
    let s = m.stop((pairs * 2) as u64).await;
    tokio::task::spawn_blocking(move || -> Res<()> {
        let gone = DeleteRequest {
            path: parent,
            version: -1,
        };
        raw.call(OpCode::Delete, &gone)?;
        raw.call(OpCode::CloseSession, &Close)
    })
    .await
    .map_err(|e| format!("floor close: {e}"))??;
    Ok(s)
}

/// The empty body of `closeSession`.
struct Close;

impl Record for Close {
    fn encode(&self, _: &mut BytesMut) {}
    fn decode(_: &mut Bytes) -> Result<Self, zk_proto::DecodeError> {
        Ok(Close)
    }
}
