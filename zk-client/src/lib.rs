//! Async ZooKeeper client (under construction).
#![forbid(unsafe_code)]
