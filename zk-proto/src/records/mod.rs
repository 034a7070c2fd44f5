//! Every request and response record of the client protocol, one family per file.
//!
//! Names follow `zookeeper.jute` (`GetDataRequest`, `Create2Response`...) so they can be
//! diffed against it; fields are in jute order with Rust names.

mod acl;
mod auth;
mod children;
mod config;
mod connect;
mod multi;
mod node;
mod watch;

pub use acl::{GetAclRequest, GetAclResponse, SetAclRequest, SetAclResponse};
pub use auth::{AuthPacket, ClientInfo, GetSaslRequest, SetSaslResponse, WhoAmIResponse};
pub use children::{
    GetAllChildrenNumberRequest, GetAllChildrenNumberResponse, GetChildren2Request,
    GetChildren2Response, GetChildrenRequest, GetChildrenResponse, GetEphemeralsRequest,
    GetEphemeralsResponse,
};
pub use config::{ReconfigRequest, CONFIG_NODE};
pub use connect::{ConnectRequest, ConnectResponse};
pub use multi::{ErrorResponse, MultiHeader, MultiOp, MultiRequest, MultiResponse, MultiResult};
pub use node::{
    CheckVersionRequest, Create2Response, CreateMode, CreateRequest, CreateResponse,
    CreateTtlRequest, DeleteRequest, ExistsRequest, ExistsResponse, GetDataRequest,
    GetDataResponse, RemoveRecursiveRequest, SetDataRequest, SetDataResponse, SyncRequest,
    SyncResponse,
};
pub use watch::{
    AddWatchMode, AddWatchRequest, CheckWatchesRequest, EventType, KeeperState,
    RemoveWatchesRequest, SetWatches, SetWatches2, WatcherEvent, WatcherType,
};
