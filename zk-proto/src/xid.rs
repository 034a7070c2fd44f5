//! Special xids: request ids the Java client reserves for packets that are not ordinary
//! requests. Ordinary requests use xids from 1 upwards.
//!
//! Values from `ClientCnxn.java` (3.8), where the reader dispatches on them before matching a
//! reply to the pending queue.

/// A watch notification pushed by the server (`ClientCnxn.NOTIFICATION_XID`).
pub const NOTIFICATION: i32 = -1;
/// A ping and its reply (`ClientCnxn.PING_XID`).
pub const PING: i32 = -2;
/// An `AuthPacket` and its reply (`ClientCnxn.AUTHPACKET_XID`).
pub const AUTH: i32 = -4;
/// `SetWatches`/`SetWatches2` sent on reconnect, and its reply (`ClientCnxn.SET_WATCHES_XID`).
///
/// The 3.8 Java client builds its SetWatches packet with this xid, but `ClientCnxnSocketNIO`
/// then gives every packet other than ping and auth the next ordinary xid, so what a 3.8
/// client actually sends (and the server echoes) is an ordinary xid; see the
/// `watch.reconnect.*` golden vectors. The server accepts either.
pub const SET_WATCHES: i32 = -8;

/// SASL tokens (`GetSASLRequest`, opcode 102) and their replies: the Java client writes them
/// straight to the socket, outside its queue, leaving the header's xid at 0; they all come
/// before any ordinary request of the connection (ordinary xids start at 1).
pub const SASL: i32 = 0;

/// Whether `xid` is one of the special values above rather than an ordinary request id.
pub const fn is_special(xid: i32) -> bool {
    matches!(xid, NOTIFICATION | PING | AUTH | SET_WATCHES)
}
