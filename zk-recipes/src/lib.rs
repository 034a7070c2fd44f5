//! ZooKeeper coordination recipes (under construction).
#![forbid(unsafe_code)]

pub mod lock;
