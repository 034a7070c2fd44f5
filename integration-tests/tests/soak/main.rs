//! Randomized soaks (short in CI; `SOAK_SECS` / `MEMBERSHIP_SOAK_SECS` for long runs).
//!
//! One test binary; each module was a binary of its own before (see `docs/testing.md`).

mod lock_soak;
mod locks;
mod membership;
