//! Locks and semaphores on real servers: fairness, hand-off, herds, faults, quorum loss.
//!
//! One test binary; each module was a binary of its own before (see `docs/testing.md`).

mod depth;
mod exclusive_reuse;
mod faults;
mod give_ups;
mod hand_off;
mod herd;
mod lock_edges;
mod locks;
mod quorum_loss;
mod semaphore;
