//! Security against servers configured for it: ACLs, TLS, SASL DIGEST-MD5, Kerberos.
//!
//! One test binary; each module was a binary of its own before (see `docs/testing.md`).

mod acl;
mod kerberos;
mod sasl;
mod tls;
