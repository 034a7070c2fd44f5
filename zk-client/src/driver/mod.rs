//! The connection task: the only code with sockets, `select!` and sleeps.
//!
//! It owns the [`Session`] and feeds it: commands from the client handles, frames read from
//! the socket, timer expiries, connection events. After each input it writes what the
//! session queued, delivers the session's events (replies, watch events, state changes) and
//! re-arms the one timer.
//!
//! One connection is one loop of named steps ([`Driver::serve`]): `feed` (session output to
//! the write buffer and the handles), `pause` (deep pipelines only) or `wait` (the next
//! input: bytes read or written, a command, the timer, the read-only probe) and `handle`.
//!
//! Cheap per request by construction: all commands waiting in the channel are handed to the
//! session in one go, everything they encode goes out in one `write`, the socket is read in
//! 64 KiB chunks and every complete frame in a chunk is handled before the next poll.

mod attempt;
#[cfg(feature = "sasl-gssapi")]
mod kerberos;
mod probe;
#[cfg(feature = "tls")]
pub(crate) mod tls;
#[cfg(feature = "tls")]
mod tls_records;
#[cfg(feature = "tls")]
mod tls_stream;
pub(crate) mod transport;

#[cfg(test)]
mod dns_tests;
#[cfg(test)]
mod tests;

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::Poll;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes, BytesMut};
use tokio::io::AsyncWrite;
use tokio::sync::{broadcast, mpsc, watch};
use tokio::time::{sleep, Sleep};
use tracing::debug;
use zk_proto::frame::{FrameReader, Inbound};
use zk_proto::REPLY_HEADER_LEN;

use crate::command::Command;
use crate::hosts::{HostList, MAX_BACKOFF};
use crate::session::{Disconnect, Session};
use crate::state::{SessionInfo, SessionState};
use probe::{probe_read_write, ProbeSchedule};
use transport::{write_now, Connector, Endpoint, TcpConnector, TlsFailure, Transport};

/// Read buffer size (and the spare room kept before each read).
const READ_BUF: usize = 64 * 1024;
const MIN_READ_SPACE: usize = 8 * 1024;
/// Most commands taken from the channel before the socket is looked at again.
const MAX_DRAIN: usize = 4096;
/// With at least this many requests in flight after a read (and `batch_reads` on), the
/// connection pauses for [`READ_DEFER`] with its socket deregistered from the reactor: the
/// task is no longer woken by every reply segment the server writes, each wake-up handles
/// tens of replies and the requests they free go out in one write (~2-3 µs of CPU per call
/// instead of ~8-9 µs). The server has plenty queued meanwhile, but on an idle VM its
/// per-connection loop was measured 10-25 % slower while the client slept (see
/// `bench/README.md`), hence the builder switch. Tokio's timer makes the pause 1-2 ms.
/// Shallow pipelines (sequential calls, a few concurrent callers) never pause.
const DEEP_PIPELINE: usize = 64;
const READ_DEFER: Duration = Duration::from_millis(1);
/// The inputs [`Driver::wait`] polls: the stream, the commands, the timer, the probe.
const INPUTS: usize = 4;
/// Longest pause between attempts to reach a server while closing a given-up session: the
/// quorum may be back any moment, and the session's nodes block others until it is closed.
const REAP_MAX_BACKOFF: Duration = Duration::from_millis(500);

type Probe = Pin<Box<dyn Future<Output = Option<usize>> + Send>>;

/// A timer that never fires in practice (a day away).
fn far_future() -> tokio::time::Instant {
    tokio::time::Instant::now() + Duration::from_secs(86400)
}

/// The current time, from tokio's clock so paused-time tests control it.
pub(crate) fn now() -> Instant {
    tokio::time::Instant::now().into_std()
}

/// Connection-level settings from the [`ClientBuilder`](crate::ClientBuilder).
#[derive(Debug, Clone, Copy)]
pub(crate) struct DriverConfig {
    /// Largest frame accepted from the server.
    pub(crate) max_frame_len: usize,
    /// Pause reading deep pipelines for [`READ_DEFER`] (see `ClientBuilder::batch_reads`).
    pub(crate) batch_reads: bool,
    /// The session timeout when the builder set no connect timeout: the default one is
    /// derived per attempt from it and the addresses last resolved.
    pub(crate) auto_connect_timeout: Option<Duration>,
}

/// TLS failures of the connection attempts, for [`connect`](crate::ClientBuilder::connect)
/// to report a certificate problem at once instead of timing out.
#[derive(Debug, Clone, Default)]
pub(crate) struct TlsFailures {
    /// Attempts in a row that failed in TLS (reset when a session is established).
    pub(crate) in_a_row: usize,
    /// The last one's message.
    pub(crate) last: Option<String>,
    /// Attempts in one round over the hosts (their addresses as last resolved; 0 before
    /// the first resolution).
    pub(crate) round: usize,
}

pub(crate) struct Driver<C: Connector = TcpConnector> {
    connector: C,
    session: Session,
    hosts: HostList,
    rx: mpsc::UnboundedReceiver<Command>,
    rx_closed: bool,
    info: watch::Sender<SessionInfo>,
    transitions: broadcast::Sender<SessionState>,
    cfg: DriverConfig,
    timer: Pin<Box<Sleep>>,
    deadline: Option<Instant>,
    tls_failures: Option<watch::Sender<TlsFailures>>,
    /// Which input [`wait`](Self::wait) polls first next time (round-robin).
    turn: usize,
    /// The host the session was last established on (the "current" host of an update).
    last_host: Option<String>,
    /// A host-list update asked the client to leave its server.
    rebalance: bool,
}

/// One connection: its stream (taken out while parked), buffers, and what the loop knows.
struct Link<S> {
    stream: Option<S>,
    rbuf: BytesMut,
    /// Cuts frames off `rbuf`, passing over replies longer than `max_frame_len`.
    frames: FrameReader,
    wbuf: Bytes,
    /// Written bytes wait in the transport for a flush (see `Transport::needs_flush`).
    unflushed: bool,
    /// Sit out a deep-pipeline pause before the next read.
    pause: bool,
    /// When the session was established on it.
    established: Option<Instant>,
    index: usize,
    /// The host as written in the connect string.
    addr: String,
    /// The address connected to.
    ip: std::net::SocketAddr,
    probe: Option<Probe>,
    probes: ProbeSchedule,
}

/// What woke the connection loop.
enum Input {
    Read(io::Result<usize>),
    /// A write or flush failed (one that succeeds is accounted for inside `wait`).
    WriteFailed(io::Error),
    Command(Option<Command>),
    Timer,
    Probe(Option<usize>),
}

impl<C: Connector> Driver<C> {
    pub(crate) fn new(
        connector: C,
        session: Session,
        hosts: HostList,
        rx: mpsc::UnboundedReceiver<Command>,
        info: watch::Sender<SessionInfo>,
        transitions: broadcast::Sender<SessionState>,
        cfg: DriverConfig,
    ) -> Self {
        Self {
            connector,
            session,
            hosts,
            rx,
            rx_closed: false,
            info,
            transitions,
            cfg,
            timer: Box::pin(tokio::time::sleep_until(far_future())),
            deadline: None,
            tls_failures: None,
            turn: 0,
            last_host: None,
            rebalance: false,
        }
    }

    /// Publishes TLS failures of connection attempts to `tx`.
    pub(crate) fn report_tls_failures(mut self, tx: watch::Sender<TlsFailures>) -> Self {
        self.tls_failures = Some(tx);
        self
    }

    /// Counts a TLS failure (`Some`) or, with `None`, an established session (resets the
    /// count).
    fn note_tls(&mut self, failure: Option<String>) {
        let Some(tx) = &self.tls_failures else {
            return;
        };
        match failure {
            Some(msg) => {
                tracing::warn!(error = %msg, "TLS failure");
                tx.send_modify(|f| {
                    f.in_a_row += 1;
                    f.last = Some(msg);
                });
            }
            None => {
                tx.send_if_modified(|f| std::mem::take(&mut f.in_a_row) != 0);
            }
        }
    }

    /// Runs until the session is over and nothing is left to do (see `Session::is_done`).
    pub(crate) async fn run(mut self) {
        while !self.session.is_done() {
            let max = if self.session.is_reaping() {
                REAP_MAX_BACKOFF
            } else {
                MAX_BACKOFF
            };
            let delay = self.hosts.backoff(max);
            let target = self.hosts.next_target();
            match self.attempt(delay, target).await {
                Ok((stream, deadline, index, to)) => self.serve(stream, deadline, index, to).await,
                Err(tls) => {
                    if tls.is_some() {
                        self.note_tls(tls);
                    }
                    self.hosts.on_failure();
                }
            }
        }
        self.deliver();
        debug!(state = ?self.session.state(), "session over");
    }

    /// Runs one connection until it drops or the session ends: one loop of named steps.
    async fn serve(&mut self, stream: C::Stream, deadline: Instant, index: usize, to: Endpoint) {
        self.session.handle_connected(now(), deadline);
        let mut link = Link {
            stream: Some(stream),
            rbuf: BytesMut::with_capacity(READ_BUF),
            frames: FrameReader::new(self.cfg.max_frame_len, REPLY_HEADER_LEN),
            wbuf: Bytes::new(),
            unflushed: false,
            pause: false,
            established: None,
            index,
            addr: to.host,
            ip: to.addr,
            probe: None,
            probes: ProbeSchedule::default(),
        };
        let reason = loop {
            if !self.feed(&mut link) {
                // Done: nothing is owed on this connection any more.
                return;
            }
            let step = if std::mem::take(&mut link.pause) {
                self.pause(&mut link).await
            } else {
                let input = self.wait(&mut link).await;
                self.handle(input, &mut link)
            };
            if let Err(reason) = step {
                break reason;
            }
        };
        self.end(reason, &link);
    }

    /// Moves the session's output to the write buffer and its events to the handles; notes
    /// the established session; starts a read-only probe when due. False when the session is
    /// done.
    fn feed(&mut self, link: &mut Link<C::Stream>) -> bool {
        if link.wbuf.is_empty() {
            if let Some(bytes) = self.session.poll_transmit() {
                link.wbuf = bytes;
            }
        }
        self.deliver();
        if self.session.is_done() {
            return false;
        }
        if link.established.is_none() && self.session.is_connected() {
            link.established = Some(now());
            self.hosts.on_connected(link.index, Some(link.ip));
            self.last_host = Some(link.addr.clone());
            debug!(addr = %link.addr, ip = %link.ip, "connected");
            crate::metrics::connected();
            self.note_tls(None);
        }
        if self.session.is_read_only() && link.probe.is_none() && self.hosts.len() > 1 {
            link.probe = Some(Box::pin(probe_read_write(
                self.connector.clone(),
                self.hosts.resolver().clone(),
                self.hosts.others(link.index),
                link.probes.next_delay(),
                self.connect_timeout(),
            )));
        }
        true
    }

    /// Waits for the next input on this connection.
    async fn wait(&mut self, link: &mut Link<C::Stream>) -> Input {
        let Some(stream) = link.stream.as_mut() else {
            return Input::Read(Err(io::ErrorKind::NotConnected.into()));
        };
        let (rbuf, wbuf, probe) = (&mut link.rbuf, &mut link.wbuf, &mut link.probe);
        let unflushed = &mut link.unflushed;
        // Reading and writing poll the one stream in turn (no split halves to allocate). A
        // write or flush that completes is accounted for here and the stream polled on,
        // rather than going round the loop (feed, timer, select) once more per request: a
        // write changes nothing the session or `feed` look at.
        let mut io = |cx: &mut std::task::Context<'_>| {
            loop {
                if !wbuf.is_empty() {
                    match Pin::new(&mut *stream).poll_write(cx, wbuf) {
                        // A transport that takes no bytes of a non-empty buffer is broken
                        // (as `transport::write_now` says too); polling it again would spin.
                        Poll::Ready(Ok(0)) => {
                            return Poll::Ready(Input::WriteFailed(io::ErrorKind::WriteZero.into()))
                        }
                        Poll::Ready(Ok(n)) => {
                            crate::metrics::bytes_sent(n);
                            wbuf.advance(n);
                            *unflushed = Transport::needs_flush(&*stream);
                        }
                        Poll::Ready(Err(e)) => return Poll::Ready(Input::WriteFailed(e)),
                        Poll::Pending => break,
                    }
                } else if *unflushed {
                    match Pin::new(&mut *stream).poll_flush(cx) {
                        Poll::Ready(Ok(())) => *unflushed = false,
                        Poll::Ready(Err(e)) => return Poll::Ready(Input::WriteFailed(e)),
                        Poll::Pending => break,
                    }
                } else {
                    break;
                }
            }
            stream.poll_read_into(cx, rbuf).map(Input::Read)
        };
        self.arm_timer();
        // A `select!` over the four inputs, by hand: the first input polled turns round-robin
        // (one counter step) where `select!` draws a random start from a thread-local
        // generator on every poll; either way none can starve the others.
        let start = self.turn;
        self.turn = self.turn.wrapping_add(1);
        let (rx, rx_closed, timer) = (&mut self.rx, self.rx_closed, &mut self.timer);
        std::future::poll_fn(|cx| {
            for i in 0..INPUTS {
                let ready = match (start + i) % INPUTS {
                    0 => io(cx),
                    1 if !rx_closed => rx.poll_recv(cx).map(Input::Command),
                    2 => timer.as_mut().poll(cx).map(|()| Input::Timer),
                    3 => match probe.as_mut() {
                        Some(probe) => probe.as_mut().poll(cx).map(Input::Probe),
                        None => Poll::Pending,
                    },
                    _ => Poll::Pending,
                };
                if ready.is_ready() {
                    return ready;
                }
            }
            Poll::Pending
        })
        .await
    }

    /// Feeds one input to the session; an `Err` ends the connection.
    fn handle(&mut self, input: Input, link: &mut Link<C::Stream>) -> Result<(), Disconnect> {
        match input {
            Input::Read(Err(e)) | Input::WriteFailed(e) => {
                if link.established.is_none() {
                    // A server rejecting the client certificate says so after the handshake.
                    if let Some(msg) = TlsFailure::message(&e) {
                        self.note_tls(Some(msg));
                    }
                }
                Err(Disconnect::Transport)
            }
            // End of stream: the server closed in order (a reset or failure is an error).
            Input::Read(Ok(0)) => Err(Disconnect::Closed),
            Input::Read(Ok(n)) => {
                crate::metrics::bytes_received(n);
                self.on_read(&mut link.rbuf, &mut link.frames)?;
                link.pause = self.cfg.batch_reads && self.session.in_flight() >= DEEP_PIPELINE;
                Ok(())
            }
            Input::Command(cmd) => {
                self.on_command(cmd);
                if let Some(i) = self.hosts.index_of(&link.addr) {
                    link.index = i;
                }
                if std::mem::take(&mut self.rebalance) {
                    debug!(addr = %link.addr, "host list updated: moving to even out the load");
                    return Err(Disconnect::Rebalance);
                }
                Ok(())
            }
            Input::Timer => self.on_timer(),
            Input::Probe(found) => {
                link.probe = None;
                match found {
                    Some(i) => {
                        debug!(addr = %link.addr, "found a read/write server: moving");
                        self.hosts.prefer(i);
                        Err(Disconnect::ToReadWrite)
                    }
                    None => Ok(()),
                }
            }
        }
    }

    /// Deep-pipeline pause: flush what the replies just freed, then, with nothing left to
    /// write, sit out [`READ_DEFER`] with the stream out of the reactor.
    async fn pause(&mut self, link: &mut Link<C::Stream>) -> Result<(), Disconnect> {
        let Some(mut stream) = link.stream.take() else {
            return Err(Disconnect::Transport);
        };
        let unsent = link.wbuf.len();
        let flushed = write_now(&mut stream, &mut link.wbuf);
        crate::metrics::bytes_sent(unsent - link.wbuf.len());
        link.unflushed = stream.needs_flush();
        if flushed.is_err() {
            return Err(Disconnect::Transport);
        }
        if !link.wbuf.is_empty() {
            link.stream = Some(stream);
            return Ok(());
        }
        let parked = stream.park().map_err(|_| Disconnect::Transport)?;
        let sat = self.sit_out(READ_DEFER).await;
        link.stream = Some(C::Stream::unpark(parked).map_err(|_| Disconnect::Transport)?);
        sat
    }

    /// The connection is over: the session learns why, the host list how long it lasted.
    fn end(&mut self, reason: Disconnect, link: &Link<C::Stream>) {
        let now = now();
        self.session.handle_disconnect(&reason, now);
        self.hosts.on_connection_end(
            link.established.map(|t| now.saturating_duration_since(t)),
            self.session.stable_after(),
        );
        self.deliver();
    }

    /// Deep-pipeline pause: for `pause`, with the socket deregistered so that no arriving
    /// reply wakes the task, only commands and timers are handled (requests accumulate and
    /// go out in one write afterwards).
    async fn sit_out(&mut self, pause: Duration) -> Result<(), Disconnect> {
        let until = sleep(pause);
        tokio::pin!(until);
        loop {
            self.arm_timer();
            tokio::select! {
                () = &mut until => return Ok(()),
                cmd = self.rx.recv(), if !self.rx_closed => self.on_command(cmd),
                () = self.timer.as_mut() => self.on_timer()?,
            }
            self.deliver();
            if self.session.is_done() {
                return Ok(());
            }
        }
    }

    fn on_read(&mut self, rbuf: &mut BytesMut, frames: &mut FrameReader) -> Result<(), Disconnect> {
        let now = now();
        while !self.session.is_done() {
            match frames.next(rbuf) {
                Ok(Some(Inbound::Frame(frame))) => self.session.handle_frame(frame, now)?,
                Ok(Some(Inbound::Oversized { head, len })) => {
                    self.session
                        .handle_oversized(head, len, frames.max(), now)?;
                }
                Ok(None) => break,
                Err(e) => return Err(Disconnect::Protocol(e)),
            }
        }
        if rbuf.capacity() - rbuf.len() < MIN_READ_SPACE {
            rbuf.reserve(READ_BUF);
        }
        Ok(())
    }

    fn on_command(&mut self, cmd: Option<Command>) {
        let now = now();
        match cmd {
            Some(cmd) => {
                self.dispatch(cmd, now);
                for _ in 0..MAX_DRAIN {
                    match self.rx.try_recv() {
                        Ok(cmd) => self.dispatch(cmd, now),
                        Err(_) => break,
                    }
                }
            }
            None => {
                debug!("every client handle dropped: closing the session");
                self.rx_closed = true;
                self.session.handle_shutdown(now);
            }
        }
    }

    /// Host-list updates are the driver's; everything else goes to the session.
    fn dispatch(&mut self, cmd: Command, now: Instant) {
        match cmd {
            Command::UpdateHosts { hosts, reply } => {
                // Connected: the current host; between connections: the last one.
                let moving = self.hosts.update(hosts, self.last_host.as_deref());
                // Only a live connection is left; between connections the next attempt
                // already follows the update.
                self.rebalance = moving && self.session.is_connected();
                debug!(moving, hosts = self.hosts.len(), "host list updated");
                let _ = reply.send(moving);
            }
            cmd => self.session.handle_command(cmd, now),
        }
    }

    /// The timer fired: it is disarmed and the session handles its deadlines (an `Err` ends
    /// the connection).
    fn on_timer(&mut self) -> Result<(), Disconnect> {
        // Disarm for real: an elapsed `Sleep` stays ready, and with no next deadline (before
        // the first session, after a handshake timeout) `arm_timer` leaves it as it is, so
        // every `select!` would take it again at once: a busy loop through the backoff.
        self.deadline = None;
        self.timer.as_mut().reset(far_future());
        self.session.handle_timeout(now())
    }

    /// Points the timer at the session's next deadline. A deadline that moved later (the
    /// usual case: every send and receive pushes the ping and read deadlines back) is left
    /// armed at the earlier instant: the early `handle_timeout` is a no-op and re-arms, so
    /// the timer is touched about once per ping interval rather than once per request.
    fn arm_timer(&mut self) {
        let deadline = self.session.poll_timeout();
        let keep = match (self.deadline, deadline) {
            (Some(armed), Some(next)) => armed <= next,
            (a, b) => a == b,
        };
        if !keep {
            self.deadline = deadline;
            let at = deadline.map_or_else(far_future, tokio::time::Instant::from_std);
            self.timer.as_mut().reset(at);
        }
    }

    /// Delivers what the session produced, in order: replies, watch events, and state
    /// changes (published to the state watchers).
    fn deliver(&mut self) {
        while let Some(event) = self.session.poll_event() {
            if let Some(info) = event.deliver() {
                self.publish(info);
            }
        }
    }

    fn publish(&mut self, info: SessionInfo) {
        let (old_state, old_id) = {
            let old = self.info.borrow();
            (old.state, old.session_id)
        };
        if info.session_id != old_id {
            tracing::Span::current().record("session_id", format_args!("{:#x}", info.session_id));
        }
        let state = info.state;
        self.info.send_replace(info);
        if state != old_state {
            // No receiver is fine: nobody is watching.
            let _ = self.transitions.send(state);
        }
    }
}
