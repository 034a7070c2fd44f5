//! The test kit: what the real-server test binaries share, imported with
//! `use integration_tests::prelude::*;`.
//!
//! * [`limits`]: the time classes every wait uses ([`SOON`], [`LIMIT`], [`LONG`]) and the one
//!   [`within`].
//! * [`session`]: the prologue ([`test_root`]: the shared server, a fresh chroot, its connect
//!   string), [`connect`], [`managed`] and waits on a session's state.
//! * [`tree`]: listings, counters and watch counts read back from the server.
//! * [`recipes`]: helpers of the lock, semaphore and leader tests.
//! * [`cache`]: a cache's view checked against the server's tree and by replaying its events.
//! * [`java`] and [`interop`]: Curator (and kazoo) peers run as real processes.

pub mod cache;
pub mod interop;
pub mod java;
pub mod limits;
pub mod recipes;
pub mod session;
pub mod tree;

pub use java::JavaPeer;
pub use limits::{curve_max, eventually, within, within_for, LIMIT, LONG, SOON};
pub use recipes::{
    enter, join, leaders, leads, participant_ids, wait_lock_state, TermLog, TermRecord,
};
pub use session::{
    answered, assert_no_state_change, assert_read_only_session, back_to_read_write, connect,
    connect_for_faults, connect_with_timeout, expire_client, leave_member_0_read_only, managed,
    manager, manager_with_session, passwd, server_of, test_root, wait_state, write_until_done,
    TestRoot, SESSION,
};
pub use tree::{
    bump_counter, children, make_counter, mntr_value, notifications, read_counter, wait_children,
    wait_nodes, wait_watches, watch_count,
};
