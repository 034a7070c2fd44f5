//! One connection attempt: the pause before it, the resolution of a host into its addresses,
//! the connect to one address within its own connect timeout (and, with Kerberos, the
//! tickets), commands and timers served meanwhile.

use std::future::Future;
use std::time::{Duration, Instant};

use tokio::time::{sleep, timeout_at};
use tracing::{debug, trace};

#[cfg(feature = "sasl-gssapi")]
use super::kerberos;
#[cfg(feature = "sasl-gssapi")]
use super::transport;
use super::transport::{Connector, Endpoint, TlsFailure};
use super::{now, Driver};
use crate::hosts::Target;

impl<C: Connector> Driver<C> {
    /// The bound on one attempt (one address): the builder's, or by default the session
    /// timeout divided by the addresses of all hosts as last resolved (at least 100 ms).
    pub(super) fn connect_timeout(&self) -> Duration {
        match self.cfg.auto_connect_timeout {
            Some(session_timeout) => {
                crate::session::timers::connect_timeout(session_timeout, self.hosts.addresses())
            }
            None => self.session.connect_timeout(),
        }
    }

    /// Waits `delay`, resolves the host when `target` is one to resolve (within the connect
    /// timeout), then connects to the address, serving commands and timers meanwhile. The
    /// connect and the handshake that follows share one deadline, the connect timeout. A
    /// failure carries the TLS message when it was one.
    pub(super) async fn attempt(
        &mut self,
        delay: Duration,
        target: Target,
    ) -> Result<(C::Stream, Instant, usize, Endpoint), Option<String>> {
        let connect_timeout = self.connect_timeout();
        let pause = async move {
            if !delay.is_zero() {
                sleep(delay).await;
            }
        };
        let (index, to) = match target {
            Target::Addr(index, host, addr) => {
                self.serving(pause).await.ok_or(None)?;
                (index, Endpoint { host, addr })
            }
            Target::Name(index, host) => {
                let resolver = self.hosts.resolver().clone();
                let name = host.clone();
                let resolve = async move {
                    pause.await;
                    timeout_at(
                        tokio::time::Instant::now() + connect_timeout,
                        resolver.resolve(&name),
                    )
                    .await
                };
                let addrs = match self.serving(resolve).await.ok_or(None)? {
                    Ok(Ok(addrs)) => addrs,
                    Ok(Err(err)) => {
                        debug!(host, %err, "cannot resolve");
                        return Err(None);
                    }
                    Err(_) => {
                        debug!(host, "resolving timed out");
                        return Err(None);
                    }
                };
                trace!(host, ?addrs, "resolved");
                let addr = self.hosts.resolved(index, addrs).ok_or(None)?;
                self.publish_round();
                (index, Endpoint { host, addr })
            }
        };
        // The addresses just resolved may change the default bound.
        let connect_timeout = self.connect_timeout();
        let connector = self.connector.clone();
        let endpoint = to.clone();
        let connect = async move {
            let addr = &endpoint.addr;
            trace!(host = endpoint.host, %addr, "connecting");
            let deadline = now() + connect_timeout;
            let at = tokio::time::Instant::from_std(deadline);
            match timeout_at(at, connector.connect(&endpoint)).await {
                Ok(Ok(stream)) => Ok((stream, deadline)),
                Ok(Err(err)) => {
                    debug!(host = endpoint.host, %addr, %err, "connect failed");
                    Err(TlsFailure::message(&err))
                }
                Err(_) => {
                    debug!(host = endpoint.host, %addr, "connect timed out");
                    Err(None)
                }
            }
        };
        crate::metrics::connect_attempt();
        let (stream, deadline) = self.serving(connect).await.ok_or(None)??;
        #[cfg(feature = "sasl-gssapi")]
        self.prepare_sasl(&to.host, to.addr.ip(), deadline).await?;
        Ok((stream, deadline, index, to))
    }

    /// Awaits `fut` while serving commands and timers; `None` when the session is done
    /// meanwhile.
    async fn serving<F: Future>(&mut self, fut: F) -> Option<F::Output> {
        tokio::pin!(fut);
        loop {
            self.arm_timer();
            tokio::select! {
                out = &mut fut => return Some(out),
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

    /// Tells [`connect`](crate::ClientBuilder::connect) how many attempts make one round
    /// over the hosts (for its early TLS failure).
    fn publish_round(&mut self) {
        let round = self.hosts.addresses();
        if let Some(tx) = &self.tls_failures {
            tx.send_if_modified(|f| std::mem::replace(&mut f.round, round) != round);
        }
    }

    /// SASL GSSAPI: the Kerberos tickets for the connection to `host` at `connected`, within its connect
    /// deadline. Refused credentials end the session (`AuthFailed`, no reconnect storm); an
    /// unreachable KDC fails this attempt like a connection failure.
    #[cfg(feature = "sasl-gssapi")]
    async fn prepare_sasl(
        &mut self,
        host: &str,
        connected: std::net::IpAddr,
        deadline: Instant,
    ) -> Result<(), Option<String>> {
        let Some(cfg) = self.session.gssapi() else {
            return Ok(());
        };
        let at = tokio::time::Instant::from_std(deadline);
        // A task of its own: a panic in the Kerberos library (krb5-gss 0.2.0 panics on some
        // keytab/reply combinations) fails this preparation instead of the connection task.
        let host = transport::host_of(host).to_owned();
        let resolver = self.hosts.resolver().clone();
        let mut task =
            tokio::spawn(async move { kerberos::prepare(&cfg, &host, connected, &resolver).await });
        let prepared = match timeout_at(at, &mut task).await {
            Ok(Ok(prepared)) => Ok(prepared),
            Ok(Err(e)) => Ok(Err(kerberos::Unprepared::Refused(format!(
                "the Kerberos library failed: {e}"
            )))),
            Err(elapsed) => {
                task.abort();
                Err(elapsed)
            }
        };
        match prepared {
            Ok(Ok(mech)) => {
                self.session.handle_sasl_prepared(mech);
                Ok(())
            }
            Ok(Err(kerberos::Unprepared::Refused(msg))) => {
                self.session.handle_sasl_refused(&msg);
                self.deliver();
                Err(None)
            }
            Ok(Err(kerberos::Unprepared::Unreachable(msg))) => {
                tracing::warn!(error = %msg, "Kerberos: KDC unreachable");
                Err(None)
            }
            Err(_) => {
                debug!("Kerberos: no tickets within the connect timeout");
                Err(None)
            }
        }
    }
}
