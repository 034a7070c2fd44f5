//! Barriers in Curator's layouts: [`DistributedBarrier`] (one node: present = closed) and
//! [`DistributedDoubleBarrier`] (members enter together and leave together).
//!
//! Both interoperate with Curator's classes on the same path. Unlike Curator, waits survive
//! connection losses (they resume after the reconnect instead of throwing), a double
//! barrier's `enter` checks again after every wake-up (GH-1290), and a member whose `enter` or
//! `leave` fails or times out removes its node (CURATOR-80, CURATOR-318).

mod double;
mod single;

pub use double::DistributedDoubleBarrier;
pub use single::DistributedBarrier;
