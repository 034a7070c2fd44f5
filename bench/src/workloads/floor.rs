//! W3floor and W3tokio (diagnostics): W3's requests with no client at all, the floors of
//! W3's CPU on this machine.
//!
//! - **W3floor**: one thread writes a framed `create`, blocks in `read` for its reply, writes
//!   the `delete`, blocks again: no runtime, no reactor, no task. No client can do less per
//!   request, so its CPU per op says how much of every client's W3 CPU is the kernel's
//!   (loopback TCP, waking the server, the sleep while it fsyncs).
//! - **W3tokio**: the same frames over tokio's `TcpStream`, written and read in the calling
//!   task on the bench's own runtime: no second task, no channel, no timer, no session. It is
//!   the floor of any client built on tokio, whatever its design (callers writing to the
//!   socket themselves included): the write, the reactor's `epoll_wait` and the read, plus
//!   one task poll per reply.
//!
//! Not `integration_tests::probe`, the harness's raw client: that one puts a timeout on every
//! call, which is what the floors leave out.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use zk_proto::frame::encode_frame;
use zk_proto::records::{ConnectRequest, CreateRequest, DeleteRequest};
use zk_proto::{decode_prefix, Acl, ErrorCode, OpCode, Record, ReplyHeader, RequestHeader};

use super::common::bounded;
use crate::sys::{Meter, Sample};
use crate::{Ctx, Res};

/// Longest a reply may take before the run fails.
const REPLY_WAIT: Duration = Duration::from_secs(10);
/// Largest reply frame read (W3's replies are tens of bytes).
const MAX_FRAME: usize = 1 << 20;
/// Room kept in the read buffer before each read.
const READ_ROOM: usize = 4096;

/// The protocol by hand, whatever carries the bytes: frames out, frames cut off what was
/// read, replies checked.
struct Frames {
    out: BytesMut,
    read: BytesMut,
    xid: i32,
}

impl Frames {
    fn new() -> Frames {
        Frames {
            out: BytesMut::with_capacity(256),
            read: BytesMut::with_capacity(READ_ROOM),
            xid: 0,
        }
    }

    /// The session's first frame.
    fn hello(&mut self) -> &[u8] {
        let hello = ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: 0,
            timeout: 30_000,
            session_id: 0,
            passwd: Bytes::from_static(&[0; 16]),
            read_only: false,
        };
        self.out.clear();
        encode_frame(&mut self.out, |b| hello.encode(b));
        &self.out
    }

    /// The next request's frame.
    fn request(&mut self, op: OpCode, body: &impl Record) -> &[u8] {
        self.xid += 1;
        let header = RequestHeader {
            xid: self.xid,
            op: op as i32,
        };
        self.out.clear();
        encode_frame(&mut self.out, |b| {
            header.encode(b);
            body.encode(b);
        });
        &self.out
    }

    /// A whole frame cut off the bytes read, if they hold one.
    fn frame(&mut self) -> Res<Option<Bytes>> {
        let Some(prefix) = self.read.first_chunk::<4>() else {
            return Ok(None);
        };
        let len =
            usize::try_from(i32::from_be_bytes(*prefix)).map_err(|_| "negative frame length")?;
        if len > MAX_FRAME {
            return Err(format!("reply frame of {len} bytes").into());
        }
        if let Some(missing) = (4 + len).checked_sub(self.read.len()).filter(|&m| m > 0) {
            self.read.reserve(missing);
            return Ok(None);
        }
        self.read.advance(4);
        Ok(Some(self.read.split_to(len).freeze()))
    }

    /// Checks the reply to the last request; an error code fails the run.
    fn check(&self, op: OpCode, frame: Bytes) -> Res<()> {
        let reply: ReplyHeader = decode_prefix(frame)?;
        if reply.xid != self.xid || reply.err != ErrorCode::Ok {
            return Err(format!("{op:?}: reply {reply:?}").into());
        }
        Ok(())
    }

    /// Room for the next read: a `read_buf` into a full buffer would read nothing.
    fn room(&mut self) -> &mut BytesMut {
        self.read.reserve(READ_ROOM);
        &mut self.read
    }
}

/// One blocking connection.
struct Raw {
    stream: TcpStream,
    frames: Frames,
    /// What one `read` returns (zeroed once, not per read).
    chunk: Vec<u8>,
}

impl Raw {
    fn connect(addr: SocketAddr) -> Res<Raw> {
        let stream = TcpStream::connect_timeout(&addr, REPLY_WAIT)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(REPLY_WAIT))?;
        let mut raw = Raw {
            stream,
            frames: Frames::new(),
            chunk: vec![0; READ_ROOM],
        };
        raw.stream.write_all(raw.frames.hello())?;
        raw.read_frame()?;
        Ok(raw)
    }

    /// Sends one request and waits for its reply.
    fn call(&mut self, op: OpCode, body: &impl Record) -> Res<()> {
        self.stream.write_all(self.frames.request(op, body))?;
        let frame = self.read_frame()?;
        self.frames.check(op, frame)
    }

    fn read_frame(&mut self) -> Res<Bytes> {
        loop {
            if let Some(frame) = self.frames.frame()? {
                return Ok(frame);
            }
            let n = self.stream.read(&mut self.chunk)?;
            match self.chunk.get(..n) {
                Some([]) => return Err("the server closed the connection".into()),
                Some(read) => self.frames.read.extend_from_slice(read),
                None => return Err(format!("read reports {n} bytes into {READ_ROOM}").into()),
            }
        }
    }
}

/// One connection on tokio's socket, driven by the calling task.
struct Async {
    stream: tokio::net::TcpStream,
    frames: Frames,
}

impl Async {
    async fn connect(addr: SocketAddr) -> Res<Async> {
        let stream = tokio::net::TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        let mut raw = Async {
            stream,
            frames: Frames::new(),
        };
        raw.stream.write_all(raw.frames.hello()).await?;
        raw.read_frame().await?;
        Ok(raw)
    }

    /// Sends one request and waits for its reply.
    async fn call(&mut self, op: OpCode, body: &impl Record) -> Res<()> {
        self.stream.write_all(self.frames.request(op, body)).await?;
        let frame = self.read_frame().await?;
        self.frames.check(op, frame)
    }

    async fn read_frame(&mut self) -> Res<Bytes> {
        loop {
            if let Some(frame) = self.frames.frame()? {
                return Ok(frame);
            }
            if self.stream.read_buf(self.frames.room()).await? == 0 {
                return Err("the server closed the connection".into());
            }
        }
    }
}

/// W3's bodies: the parent's create, the node's create and its delete.
struct Bodies {
    parent: CreateRequest,
    node: CreateRequest,
    delete: DeleteRequest,
}

impl Bodies {
    fn new(parent: &str) -> Bodies {
        let create = |path: String| CreateRequest {
            path,
            data: Bytes::from_static(&[7; 100]),
            acl: Acl::open_unsafe().to_vec(),
            flags: 0,
        };
        let node = format!("{parent}/n");
        Bodies {
            parent: create(parent.to_owned()),
            node: create(node.clone()),
            delete: DeleteRequest {
                path: node,
                version: -1,
            },
        }
    }

    /// The parent's delete, when the run is over.
    fn gone(&self) -> DeleteRequest {
        DeleteRequest {
            path: self.parent.path.clone(),
            version: -1,
        }
    }
}

/// W3tokio: W3's pairs over [`Async`] in the bench's task, on its runtime.
pub(crate) async fn tokio(ctx: &Ctx, round: usize) -> Res<Sample> {
    let bodies = Bodies::new(&format!("{}/w3-tokio-{round}", ctx.root));
    let mut raw = bounded(ctx.limits.step, "W3tokio connect", Async::connect(ctx.addr)).await?;
    raw.call(OpCode::Create, &bodies.parent).await?;
    let m = Meter::start(ctx.addr).await;
    bounded(ctx.limits.workload, "W3tokio", async {
        for _ in 0..ctx.sizes.w3_pairs {
            raw.call(OpCode::Create, &bodies.node).await?;
            raw.call(OpCode::Delete, &bodies.delete).await?;
        }
        Ok(())
    })
    .await?;
    let s = m.stop((ctx.sizes.w3_pairs * 2) as u64).await;
    bounded(ctx.limits.step, "W3tokio close", async {
        raw.call(OpCode::Delete, &bodies.gone()).await?;
        raw.call(OpCode::CloseSession, &Close).await
    })
    .await?;
    Ok(s)
}

/// W3floor: W3's pairs over [`Raw`], on a blocking thread (its CPU counts: the meter reads
/// the whole process).
pub(crate) async fn blocking(ctx: &Ctx, round: usize) -> Res<Sample> {
    let pairs = ctx.sizes.w3_pairs;
    let bodies = Bodies::new(&format!("{}/w3-floor-{round}", ctx.root));
    let addr = ctx.addr;
    let (mut raw, bodies) = tokio::task::spawn_blocking(move || -> Res<(Raw, Bodies)> {
        let mut raw = Raw::connect(addr)?;
        raw.call(OpCode::Create, &bodies.parent)?;
        Ok((raw, bodies))
    })
    .await
    .map_err(|e| format!("floor connect: {e}"))??;
    let m = Meter::start(ctx.addr).await;
    let run = tokio::task::spawn_blocking(move || -> Res<(Raw, Bodies)> {
        for _ in 0..pairs {
            raw.call(OpCode::Create, &bodies.node)?;
            raw.call(OpCode::Delete, &bodies.delete)?;
        }
        Ok((raw, bodies))
    });
    let (mut raw, bodies) = bounded(ctx.limits.workload, "W3floor", async {
        run.await.map_err(|e| format!("W3floor: {e}"))?
    })
    .await?;
    let s = m.stop((pairs * 2) as u64).await;
    tokio::task::spawn_blocking(move || -> Res<()> {
        raw.call(OpCode::Delete, &bodies.gone())?;
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
