//! Looking for a read/write server while connected to a read-only one.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::{sleep, timeout};
use tracing::trace;

use super::transport::{Connector, Endpoint};
use crate::resolve::Resolver;

/// Read-only probing: first pause, doubling up to the max (Java: 100 ms .. 60 s).
const PROBE_MIN: Duration = Duration::from_millis(100);
const PROBE_MAX: Duration = Duration::from_secs(5);

/// When to probe next: 100 ms after the read-only connection is up, then twice as long after
/// each probe that found no read/write server, up to 5 s. Clock-free.
#[derive(Debug)]
pub(crate) struct ProbeSchedule {
    next: Duration,
}

impl Default for ProbeSchedule {
    fn default() -> Self {
        Self { next: PROBE_MIN }
    }
}

impl ProbeSchedule {
    /// The pause before the next probe.
    pub(crate) fn next_delay(&mut self) -> Duration {
        let delay = self.next;
        self.next = (self.next * 2).min(PROBE_MAX);
        delay
    }
}

/// After `delay`, asks each host whether it is a read/write server (`isro` four-letter word,
/// answered `rw` or `ro`), like the Java client's `pingRwServer`. Returns the first
/// read/write one's index. Each host is resolved (within `per_host`) and each of its
/// addresses asked (within `per_host` each).
pub(crate) async fn probe_read_write<C: Connector>(
    connector: C,
    resolver: Resolver,
    hosts: Vec<(usize, String)>,
    delay: Duration,
    per_host: Duration,
) -> Option<usize> {
    sleep(delay).await;
    for (index, host) in hosts {
        let Ok(Ok(addrs)) = timeout(per_host, resolver.resolve(&host)).await else {
            continue;
        };
        for addr in addrs {
            let to = Endpoint {
                host: host.clone(),
                addr,
            };
            let answer = timeout(per_host, async {
                let mut stream = connector.connect(&to).await.ok()?;
                stream.write_all(b"isro").await.ok()?;
                let mut buf = Vec::with_capacity(4);
                (&mut stream).take(16).read_to_end(&mut buf).await.ok()?;
                Some(buf)
            })
            .await;
            if let Ok(Some(answer)) = answer {
                trace!(host, %addr, answer = %String::from_utf8_lossy(&answer), "isro");
                if answer.starts_with(b"rw") {
                    return Some(index);
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_back_off_from_100_ms_to_5_s() {
        let mut s = ProbeSchedule::default();
        let delays: Vec<u64> = (0..8).map(|_| s.next_delay().as_millis() as u64).collect();
        assert_eq!(delays, [100, 200, 400, 800, 1600, 3200, 5000, 5000]);
    }
}
