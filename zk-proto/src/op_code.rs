//! Request opcodes (`ZooDefs.OpCode` in the 3.8 Java sources).

use crate::DecodeError;

macro_rules! op_codes {
    ($( $(#[$m:meta])* $name:ident = $value:expr ),* $(,)?) => {
        /// The `type` field of a `RequestHeader` and of a multi `MultiHeader`.
        ///
        /// Values are `ZooDefs.OpCode` from ZooKeeper 3.8. An unknown value is a
        /// [`DecodeError::UnknownOpCode`] where an opcode must be understood.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[repr(i32)]
        #[non_exhaustive]
        pub enum OpCode {
            $( $(#[$m])* $name = $value, )*
        }

        impl OpCode {
            /// Every opcode, in declaration order.
            pub const ALL: &'static [OpCode] = &[$(OpCode::$name),*];
        }

        impl TryFrom<i32> for OpCode {
            type Error = DecodeError;
            fn try_from(value: i32) -> Result<Self, DecodeError> {
                match value {
                    $( $value => Ok(OpCode::$name), )*
                    other => Err(DecodeError::UnknownOpCode(other)),
                }
            }
        }
    };
}

op_codes! {
    /// Not a request: the type of a watch notification.
    Notification = 0,
    /// `CreateRequest` → `CreateResponse`.
    Create = 1,
    /// `DeleteRequest` → empty.
    Delete = 2,
    /// `ExistsRequest` → `ExistsResponse`.
    Exists = 3,
    /// `GetDataRequest` → `GetDataResponse`.
    GetData = 4,
    /// `SetDataRequest` → `SetDataResponse`.
    SetData = 5,
    /// `GetACLRequest` → `GetACLResponse`.
    GetAcl = 6,
    /// `SetACLRequest` → `SetACLResponse`.
    SetAcl = 7,
    /// `GetChildrenRequest` → `GetChildrenResponse`.
    GetChildren = 8,
    /// `SyncRequest` → `SyncResponse`.
    Sync = 9,
    /// Ping (xid -2), no body either way.
    Ping = 11,
    /// `GetChildren2Request` → `GetChildren2Response`.
    GetChildren2 = 12,
    /// `CheckVersionRequest`; only meaningful inside a multi.
    Check = 13,
    /// `MultiRequest` of write ops → `MultiResponse`.
    Multi = 14,
    /// `CreateRequest` → `Create2Response` (path and stat).
    Create2 = 15,
    /// `ReconfigRequest` → `GetDataResponse` of the new config.
    Reconfig = 16,
    /// `CheckWatchesRequest` → empty.
    CheckWatches = 17,
    /// `RemoveWatchesRequest` → empty.
    RemoveWatches = 18,
    /// `CreateRequest` with the container flag → `Create2Response`.
    CreateContainer = 19,
    /// Server-internal: deletes an empty container.
    DeleteContainer = 20,
    /// `CreateTTLRequest` → `Create2Response`.
    CreateTtl = 21,
    /// `MultiRequest` of read ops → `MultiResponse`.
    MultiRead = 22,
    /// `AuthPacket` (xid -4) → empty.
    Auth = 100,
    /// `SetWatches` (xid -8) → empty.
    SetWatches = 101,
    /// SASL token exchange.
    Sasl = 102,
    /// `GetEphemeralsRequest` → `GetEphemeralsResponse`.
    GetEphemerals = 103,
    /// `GetAllChildrenNumberRequest` → `GetAllChildrenNumberResponse`.
    GetAllChildrenNumber = 104,
    /// `SetWatches2` (xid -8) → empty.
    SetWatches2 = 105,
    /// `AddWatchRequest` → `ErrorResponse`.
    AddWatch = 106,
    /// No body → `WhoAmIResponse`.
    WhoAmI = 107,
    /// ClickHouse Keeper only (`OpNum::RemoveRecursive` in ClickHouse's
    /// `src/Common/ZooKeeper/ZooKeeperConstants.h`): `RemoveRecursiveRequest` → empty. Deletes
    /// a node and its whole subtree in one transaction; ZooKeeper does not know it.
    RemoveRecursive = 503,
    /// Server-internal: session creation.
    CreateSession = -10,
    /// Closes the session; no body either way.
    CloseSession = -11,
    /// The type of an error result inside a multi response.
    Error = -1,
}

impl OpCode {
    /// The wire value.
    pub const fn as_i32(self) -> i32 {
        self as i32
    }

    /// Whether this opcode creates a node.
    pub const fn is_create(self) -> bool {
        matches!(
            self,
            OpCode::Create | OpCode::Create2 | OpCode::CreateContainer | OpCode::CreateTtl
        )
    }
}

impl From<OpCode> for i32 {
    fn from(op: OpCode) -> i32 {
        op as i32
    }
}
