//! The connection task: the only code with sockets, `select!` and sleeps.
//!
//! It owns the [`Session`] and feeds it: commands from the client handles, frames read from
//! the socket, timer expiries, connection events. After each input it writes what the
//! session queued, publishes state changes and re-arms the one timer.
//!
//! Cheap per request by construction: all commands waiting in the channel are handed to the
//! session in one go, everything they encode goes out in one `write`, the socket is read in
//! 64 KiB chunks and every complete frame in a chunk is handled before the next poll.

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{broadcast, mpsc, watch};
use tokio::time::{sleep, timeout, Sleep};
use tracing::{debug, trace};
use zk_proto::frame::decode_frame;

use crate::command::Command;
use crate::hosts::{HostList, MAX_BACKOFF};
use crate::session::{Disconnect, Session};
use crate::state::{SessionInfo, SessionState};

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
/// Read-only probing: first pause, doubling up to the max (Java: 100 ms .. 60 s).
const PROBE_MIN: Duration = Duration::from_millis(100);
const PROBE_MAX: Duration = Duration::from_secs(5);
/// Longest pause between attempts to reach a server while closing a given-up session: the
/// quorum may be back any moment, and the session's nodes block others until it is closed.
const REAP_MAX_BACKOFF: Duration = Duration::from_millis(500);

type Probe = Pin<Box<dyn Future<Output = Option<usize>> + Send>>;

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
}

pub(crate) struct Driver {
    session: Session,
    hosts: HostList,
    rx: mpsc::UnboundedReceiver<Command>,
    rx_closed: bool,
    info: watch::Sender<SessionInfo>,
    transitions: broadcast::Sender<SessionState>,
    cfg: DriverConfig,
    timer: Pin<Box<Sleep>>,
    deadline: Option<Instant>,
}

impl Driver {
    pub(crate) fn new(
        session: Session,
        hosts: HostList,
        rx: mpsc::UnboundedReceiver<Command>,
        info: watch::Sender<SessionInfo>,
        transitions: broadcast::Sender<SessionState>,
        cfg: DriverConfig,
    ) -> Self {
        Self {
            session,
            hosts,
            rx,
            rx_closed: false,
            info,
            transitions,
            cfg,
            timer: Box::pin(sleep(Duration::from_secs(86400))),
            deadline: None,
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
            let (index, addr) = self.hosts.next_host();
            let addr = addr.to_owned();
            match self.attempt(delay, &addr).await {
                Some(stream) => self.serve(stream, index, &addr).await,
                None => self.hosts.on_failure(),
            }
        }
        self.deliver();
        debug!(state = ?self.session.state(), "session over");
    }

    /// Waits `delay`, then connects to `addr`, serving commands and timers meanwhile.
    async fn attempt(&mut self, delay: Duration, addr: &str) -> Option<TcpStream> {
        let connect_timeout = self.session.connect_timeout();
        let connect = async move {
            if !delay.is_zero() {
                sleep(delay).await;
            }
            trace!(addr, "connecting");
            match timeout(connect_timeout, TcpStream::connect(addr)).await {
                Ok(Ok(stream)) => Some(stream),
                Ok(Err(err)) => {
                    debug!(addr, %err, "connect failed");
                    None
                }
                Err(_) => {
                    debug!(addr, "connect timed out");
                    None
                }
            }
        };
        tokio::pin!(connect);
        loop {
            self.arm_timer();
            tokio::select! {
                stream = &mut connect => return stream,
                cmd = self.rx.recv(), if !self.rx_closed => self.on_command(cmd),
                () = self.timer.as_mut() => {
                    let _ = self.on_timer();
                }
            }
            self.deliver();
            if self.session.is_done() {
                return None;
            }
        }
    }

    /// Runs one connection until it drops or the session ends.
    async fn serve(&mut self, stream: TcpStream, index: usize, addr: &str) {
        let _ = stream.set_nodelay(true);
        // `None` while the socket sits out a deep-pipeline pause, deregistered.
        let mut stream = Some(stream);
        self.session.handle_connected(now());
        let mut rbuf = BytesMut::with_capacity(READ_BUF);
        let mut wbuf = Bytes::new();
        let mut established: Option<Instant> = None;
        let mut probe: Option<Probe> = None;
        let mut probe_delay = PROBE_MIN;
        let mut pause = false;
        let reason = loop {
            if wbuf.is_empty() {
                if let Some(bytes) = self.session.poll_transmit() {
                    wbuf = bytes;
                }
            }
            self.deliver();
            if self.session.is_done() {
                // Best effort: e.g. nothing, or the tail of a reply we no longer need.
                return;
            }
            if established.is_none() && self.session.is_connected() {
                established = Some(now());
                debug!(addr, "connected");
            }
            if self.session.is_read_only() && probe.is_none() && self.hosts.len() > 1 {
                probe = Some(Box::pin(probe_read_write(
                    self.hosts.others(index),
                    probe_delay,
                    self.session.connect_timeout(),
                )));
                probe_delay = (probe_delay * 2).min(PROBE_MAX);
            }
            if std::mem::take(&mut pause) {
                let registered = stream.take().expect("registered");
                // Flush what the replies just freed; pause only with nothing left to write.
                while !wbuf.is_empty() {
                    match registered.try_write(&wbuf) {
                        Ok(n) => wbuf.advance(n),
                        Err(_) => break,
                    }
                }
                if !wbuf.is_empty() {
                    stream = Some(registered);
                    continue;
                }
                let Ok(parked) = registered.into_std() else {
                    break Disconnect::Transport;
                };
                if let Err(reason) = self.sit_out(READ_DEFER).await {
                    break reason;
                }
                match TcpStream::from_std(parked) {
                    Ok(s) => stream = Some(s),
                    Err(_) => break Disconnect::Transport,
                }
                continue;
            }
            let (mut rd, mut wr) = stream.as_mut().expect("registered").split();
            self.arm_timer();
            tokio::select! {
                r = rd.read_buf(&mut rbuf) => match r {
                    Ok(0) | Err(_) => break Disconnect::Transport,
                    Ok(_) => {
                        if let Err(reason) = self.on_read(&mut rbuf) {
                            break reason;
                        }
                        pause = self.cfg.batch_reads
                            && self.session.in_flight() >= DEEP_PIPELINE;
                    }
                },
                r = wr.write(&wbuf), if !wbuf.is_empty() => match r {
                    Ok(n) => wbuf.advance(n),
                    Err(_) => break Disconnect::Transport,
                },
                cmd = self.rx.recv(), if !self.rx_closed => self.on_command(cmd),
                () = self.timer.as_mut() => {
                    if let Err(reason) = self.on_timer() {
                        break reason;
                    }
                }
                found = async { probe.as_mut().expect("guarded").await }, if probe.is_some() => {
                    probe = None;
                    if let Some(i) = found {
                        debug!(addr, "found a read/write server: moving");
                        self.hosts.prefer(i);
                        break Disconnect::ToReadWrite;
                    }
                }
            }
        };
        let now = now();
        self.session.handle_disconnect(&reason, now);
        self.hosts.on_connection_end(
            established.map(|t| now.saturating_duration_since(t)),
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

    fn on_read(&mut self, rbuf: &mut BytesMut) -> Result<(), Disconnect> {
        let now = now();
        while !self.session.is_done() {
            match decode_frame(rbuf, self.cfg.max_frame_len) {
                Ok(Some(frame)) => self.session.handle_frame(frame, now)?,
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
                self.session.handle_command(cmd, now);
                for _ in 0..MAX_DRAIN {
                    match self.rx.try_recv() {
                        Ok(cmd) => self.session.handle_command(cmd, now),
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

    /// The timer fired: it is disarmed and the session handles its deadlines (an `Err` ends
    /// the connection).
    fn on_timer(&mut self) -> Result<(), Disconnect> {
        self.deadline = None;
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
            let at = deadline.unwrap_or_else(|| now() + Duration::from_secs(86400));
            self.timer
                .as_mut()
                .reset(tokio::time::Instant::from_std(at));
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

/// Asks each host whether it is a read/write server (`isro` four-letter word, answered
/// `rw` or `ro`), like the Java client's `pingRwServer`. Returns the first read/write one.
async fn probe_read_write(
    hosts: Vec<(usize, String)>,
    delay: Duration,
    per_host: Duration,
) -> Option<usize> {
    sleep(delay).await;
    for (index, addr) in hosts {
        let answer = timeout(per_host, async {
            let mut stream = TcpStream::connect(&addr).await.ok()?;
            stream.write_all(b"isro").await.ok()?;
            let mut buf = Vec::with_capacity(4);
            (&mut stream).take(16).read_to_end(&mut buf).await.ok()?;
            Some(buf)
        })
        .await;
        if let Ok(Some(answer)) = answer {
            trace!(addr, answer = %String::from_utf8_lossy(&answer), "isro");
            if answer.starts_with(b"rw") {
                return Some(index);
            }
        }
    }
    None
}
