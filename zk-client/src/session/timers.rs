//! Deadlines derived from the session timeout, computed in one place.
//!
//! The ratios follow the reference clients (`ClientCnxn` in Java, `zookeeper.c` in C):
//!
//! * **Read timeout = 2/3 of the negotiated session timeout.** If nothing at all arrives from
//!   the server for that long, the connection is considered dead and dropped. Leaving the
//!   last third of the session timeout lets the client reach another server and resume the
//!   session before the ensemble expires it.
//! * **Ping interval = 1/3 of the negotiated session timeout** (half the read timeout) of
//!   send silence. A healthy but idle server then answers at least once per read-timeout
//!   window, so idleness never trips the read timeout, and the server, which expires a
//!   session after a full timeout without hearing from it, hears from us three times as often.
//! * **Connect timeout = session timeout / number of addresses, at most a third of it.**
//!   Java's rule (one sweep over every host fits in one session timeout), with at least three
//!   attempts per session timeout for one or two addresses: one attempt that hangs (a server
//!   that accepts the connection and never answers, as ZooKeeper does to a connection that
//!   arrives while it loads its data, ZOOKEEPER-5051) is left while two thirds of the session
//!   timeout remain, instead of using it up, after which the client gives the session up.

use std::time::Duration;

/// Read timeout and ping interval for a negotiated session timeout.
pub(crate) fn connection_timers(negotiated: Duration) -> (Duration, Duration) {
    (negotiated * 2 / 3, negotiated / 3)
}

/// Per-attempt connect timeout (TCP connect plus handshake): the session timeout over the
/// addresses, over three when there are fewer.
pub(crate) fn connect_timeout(session_timeout: Duration, hosts: usize) -> Duration {
    let per_host = session_timeout / (hosts.max(3) as u32);
    per_host.max(Duration::from_millis(100))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios() {
        let (read, ping) = connection_timers(Duration::from_secs(9));
        assert_eq!(read, Duration::from_secs(6));
        assert_eq!(ping, Duration::from_secs(3));
        assert_eq!(
            connect_timeout(Duration::from_secs(9), 3),
            Duration::from_secs(3)
        );
        assert_eq!(
            connect_timeout(Duration::from_millis(10), 3),
            Duration::from_millis(100)
        );
        // One or two addresses: still three attempts per session timeout.
        for hosts in [0, 1, 2] {
            assert_eq!(
                connect_timeout(Duration::from_secs(9), hosts),
                Duration::from_secs(3)
            );
        }
        assert_eq!(
            connect_timeout(Duration::from_secs(9), 4),
            Duration::from_millis(2250)
        );
    }
}
