//! ACL operations: get_acl, set_acl.

use std::future::Future;

use zk_proto::records::{GetAclRequest, GetAclResponse, SetAclRequest, SetAclResponse};
use zk_proto::{decode_prefix, Acl, OpCode, Stat};

use super::{encode, Client};
use crate::error::{Error, Result};

impl Client {
    /// The node's ACL and `Stat`.
    ///
    /// ```no_run
    /// # async fn f(client: zk_client::Client) -> zk_client::Result<()> {
    /// let (acl, stat) = client.get_acl("/app").await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// `NoNode`, plus the session errors.
    ///
    /// # Cancel safety
    ///
    /// The request is sent when this is called: dropping the future discards only the reply;
    /// nothing is changed on the server.
    pub fn get_acl(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<Acl>, Stat)>> + Send + 'static {
        let reply = self
            .server_path(path)
            .map(|path| self.request(OpCode::GetAcl, encode(&GetAclRequest { path }), None));
        async move {
            let resp: GetAclResponse = decode_prefix(reply?.await?)?;
            Ok((resp.acl, resp.stat))
        }
    }

    /// Replaces the node's ACL, if its ACL version (`Stat::aversion`) is `version`
    /// (`None`: any).
    ///
    /// ```no_run
    /// # async fn f(client: zk_client::Client) -> zk_client::Result<()> {
    /// use zk_client::Acl;
    /// client.set_acl("/app", Acl::read_unsafe(), None).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// `NoNode`, `BadVersion`, `NoAuth`, `InvalidAcl` (also for an empty ACL), plus the
    /// session errors.
    ///
    /// # Cancel safety
    ///
    /// The request is sent when this is called: dropping the future discards only the reply; the
    /// new ACL may still be set.
    pub fn set_acl(
        &self,
        path: &str,
        acl: &[Acl],
        version: Option<i32>,
    ) -> impl Future<Output = Result<Stat>> + Send + 'static {
        let reply = if acl.is_empty() {
            Err(Error::InvalidAcl)
        } else {
            self.server_path(path).map(|path| {
                let body = encode(&SetAclRequest {
                    path,
                    acl: acl.to_vec(),
                    version: version.unwrap_or(-1),
                });
                self.request(OpCode::SetAcl, body, None)
            })
        };
        async move {
            let resp: SetAclResponse = decode_prefix(reply?.await?)?;
            Ok(resp.stat)
        }
    }
}
