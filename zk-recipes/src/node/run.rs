//! The task behind a [`PersistentNode`](super::PersistentNode): create, watch, re-create,
//! touch, and delete on close.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};
use uuid::Uuid;
use zk_client::{Client, CreateMode, CreateOptions, EventType, Stat, Watcher};

use super::shared::{Command, NodeEvent, Shared};
use crate::error::Error;
use crate::path::{join, name as name_of, parent as parent_of};
use crate::queue::{create_marked, delete_guaranteed, find_sequential, Mark, Protected};
use crate::retry::{gave_up, turns, wait_connected, Pacing, HEALTHY_AFTER};
use crate::session::{NoNext, Sessions};

/// Why a step stopped.
enum Stop {
    /// The handle closed (or was dropped).
    Closed,
    /// This client's session ended: go on with the manager's next one.
    SessionEnded,
    /// An error the node cannot repair (`NoAuth`, invalid ACL, ...).
    Failed(Error),
}

type Step<T> = std::result::Result<T, Stop>;

struct Run {
    shared: Arc<Shared>,
    client: Client,
    commands: mpsc::UnboundedReceiver<Command>,
    stop: CancellationToken,
    /// The node's full path once the server named it.
    actual: Option<String>,
    /// The guid of a protected first create.
    guid: Uuid,
    /// A first create was sent and its outcome is unknown (its reply was lost).
    uncertain: bool,
    /// Whether the node was ever created (later creates are re-creates).
    created_once: bool,
    /// The data last seen in the node (to report changes once).
    seen: Option<Bytes>,
    /// Paces the tries after connection losses in a row (a request the server answers by
    /// dropping the connection is not sent again at reconnect speed).
    pacing: Pacing,
    /// When the last connection loss was waited out.
    last_loss: Option<Instant>,
}

/// The task: keeps the node on each session's client until stopped.
pub(crate) async fn run(
    shared: Arc<Shared>,
    mut sessions: Sessions,
    commands: mpsc::UnboundedReceiver<Command>,
    stop: CancellationToken,
) {
    let mut run = Run {
        client: sessions.client().clone(),
        shared,
        commands,
        stop,
        actual: None,
        guid: Uuid::new_v4(),
        uncertain: false,
        created_once: false,
        seen: None,
        pacing: Pacing::new(),
        last_loss: None,
    };
    let ended = loop {
        match run.keep().await {
            Stop::Closed => {
                let kept = run
                    .shared
                    .keep_on_close
                    .load(std::sync::atomic::Ordering::SeqCst);
                let removed = if kept { Ok(()) } else { run.remove().await };
                // A node the close could not delete says why (`NoAuth`, say).
                break removed
                    .err()
                    .unwrap_or(Error::Client(zk_client::Error::Closed));
            }
            Stop::Failed(e) => {
                warn!(path = %run.shared.base, error = %e, "persistent node gives up");
                break e;
            }
            Stop::SessionEnded => {
                run.went_with_session();
                // A session ended by the server dropping our create keeps saying so.
                let refused = matches!(
                    &run.shared.status.borrow().failing,
                    Some(Error::Client(e)) if crate::retry::refused_for(e).is_some()
                );
                if !refused {
                    run.fail(crate::retry::session_ended(&run.client));
                }
                // Paced: sessions that die at once are not renewed at full speed.
                match sessions.next(&run.stop).await {
                    Ok(client) => {
                        debug!(path = %run.shared.base, "re-creating on a new session");
                        run.client = client;
                    }
                    Err(NoNext::Stopped) => break Error::Client(zk_client::Error::Closed),
                    Err(NoNext::Ended(e)) => break e,
                }
            }
        }
    };
    run.shared.status.send_modify(|s| {
        s.path = None;
        s.ended = Some(ended);
    });
    // Answer the commands still queued.
    run.commands.close();
    while let Ok(Command::SetData(_, reply)) = run.commands.try_recv() {
        let _ = reply.send(Err(Error::Client(zk_client::Error::Closed)));
    }
}

impl Run {
    fn mode(&self) -> CreateMode {
        self.shared.options.mode
    }

    /// Whether a node with `stat` is ours to keep: an ephemeral node of this session, or
    /// any persistent node (whose owner cannot be told) when we keep a persistent one.
    fn owns(&self, stat: &Stat) -> bool {
        if self.mode().is_ephemeral() {
            stat.ephemeral_owner == self.client.session_id()
        } else {
            // Persistent, container and TTL nodes have no session owner (servers report 0;
            // the top byte 0xff marks the extended types in the raw field).
            stat.ephemeral_owner == 0 || (stat.ephemeral_owner >> 56) & 0xff == 0xff
        }
    }

    /// Turns a client error into a step outcome: a connection loss is waited out (`Ok`: try
    /// again; paced when losses come in a row), a session end or close stops the step.
    async fn recover(&mut self, error: zk_client::Error) -> Step<()> {
        if error.is_connection_loss() {
            tokio::select! {
                _ = self.stop.cancelled() => return Err(Stop::Closed),
                r = wait_connected(&self.client) => r.map_err(|_| Stop::SessionEnded)?,
            }
            // The first loss in a while goes on at once; losses in a row back off.
            let lived = self
                .last_loss
                .replace(Instant::now())
                .map_or(HEALTHY_AFTER, |at| at.elapsed());
            match self.pacing.wait(lived, &self.stop).await {
                Ok(true) => Ok(()),
                Ok(false) => Err(Stop::Closed),
                Err(e) => Err(Stop::Failed(e)),
            }
        } else if error.is_terminal() {
            Err(Stop::SessionEnded)
        } else if crate::retry::refused_for(&error).is_some() {
            // The server drops the connection on this request: the client refuses it for
            // a while. Waited out (and the pacing grows), never given up on: the node
            // comes back once the server takes the request again.
            warn!(path = %self.shared.base, error = %error, "persistent node: waiting before trying again");
            self.fail(Error::Client(error.clone()));
            let lived = self
                .last_loss
                .replace(Instant::now())
                .map_or(HEALTHY_AFTER, |at| at.elapsed());
            match self.pacing.wait_after(lived, &error, &self.stop).await {
                Ok(true) => Ok(()),
                Ok(false) => Err(Stop::Closed),
                Err(e) => Err(Stop::Failed(e)),
            }
        } else {
            Err(Stop::Failed(error.into()))
        }
    }

    /// Publishes why the node is not there now ([`PersistentNode::last_error`](super::PersistentNode::last_error)).
    fn fail(&self, error: Error) {
        self.shared.status.send_modify(|s| s.failing = Some(error));
    }

    fn publish(&self, path: Option<String>) {
        self.shared.status.send_if_modified(|s| {
            let changed = s.path != path;
            if path.is_some() {
                s.failing = None;
            }
            s.path = path;
            changed
        });
    }

    /// Keeps the node on the current client until the session ends or we stop.
    async fn keep(&mut self) -> Stop {
        for _ in turns() {
            if self.stop.is_cancelled() {
                return Stop::Closed;
            }
            if let Err(stop) = self.ensure().await {
                return stop;
            }
            match self.watch().await {
                Ok(()) => {}
                Err(stop) => return stop,
            }
        }
        Stop::Failed(gave_up())
    }

    /// Makes sure our node exists (creating, adopting or replacing).
    async fn ensure(&mut self) -> Step<()> {
        for _ in turns() {
            let done = match self.actual.clone() {
                None => self.first_create().await?,
                Some(path) => self.recreate(&path).await?,
            };
            if done {
                return Ok(());
            }
        }
        Err(Stop::Failed(gave_up()))
    }

    /// Our protected nodes under `parent` (the guid of this node's first create).
    fn protected(&self, parent: &str) -> Protected {
        Protected {
            base: parent.to_owned(),
            guid: self.guid,
        }
    }

    fn create_options(&self, mode: CreateMode) -> CreateOptions {
        let mut options = CreateOptions::new(mode)
            .with_acl(self.shared.options.acl.clone())
            .with_container_parents(true);
        options.ttl = self.shared.options.ttl;
        options
    }

    fn created(&mut self, path: String, data: Bytes) {
        self.actual = Some(path.clone());
        self.seen = Some(data);
        self.publish(Some(path.clone()));
        let event = if self.created_once {
            NodeEvent::Recreated { path }
        } else {
            NodeEvent::Created { path }
        };
        self.created_once = true;
        self.shared.emit(event);
    }

    /// Whether the node is a plain (unprotected) ephemeral sequential one: found after a lost
    /// reply by its name's prefix and our session ([`Mark::Sequence`]).
    fn plain_ephemeral_sequential(&self) -> bool {
        let mode = self.mode();
        !self.shared.options.protected && mode.is_sequential() && mode.is_ephemeral()
    }

    /// The first create: `Ok(true)` when the node is there and ours.
    async fn first_create(&mut self) -> Step<bool> {
        let protected = self.shared.options.protected;
        let parent = parent_of(&self.shared.base).to_owned();
        let name = name_of(&self.shared.base);
        let path = if protected {
            let nodes = self.protected(&parent);
            nodes.path_of(&nodes.name(name))
        } else {
            self.shared.base.clone()
        };
        if self.uncertain && protected {
            // An earlier create's reply was lost: look for it before creating again.
            let found = self.protected(&parent).find(&self.client).await;
            match found {
                Ok(Some(found)) => {
                    let full = join(&parent, &found);
                    // Known by name now; the re-create path checks its owner.
                    self.actual = Some(full);
                    self.uncertain = false;
                    return Ok(false);
                }
                Ok(None) => self.uncertain = false,
                Err(Error::Client(e)) => {
                    self.recover(e).await?;
                    return Ok(false);
                }
                Err(e) => return Err(Stop::Failed(e)),
            }
        }
        let data = self.shared.data();
        let options = self.create_options(self.mode());
        // Our node is recognised after a lost reply by its guid (protected), by its name
        // and owner (a fixed name), or by its name's prefix and owner (a plain ephemeral
        // sequential name).
        let mark = if protected {
            Mark::Guid(self.guid)
        } else if self.plain_ephemeral_sequential() {
            Mark::Sequence
        } else {
            Mark::Name
        };
        // Until the create answers, a close must look for what it may have made.
        if protected || matches!(mark, Mark::Sequence) {
            self.uncertain = true;
        } else if !self.mode().is_sequential() {
            self.actual = Some(path.clone());
        }
        let made = tokio::select! {
            _ = self.stop.cancelled() => return Err(Stop::Closed),
            made = create_marked(&self.client, &parent, &path, &data, &options, mark, false) => made,
        };
        self.uncertain = false;
        match made {
            Ok(made) if made.recovered => {
                // Found after a lost reply: known by name now; the re-create path checks
                // its owner and data.
                self.actual = Some(join(&parent, &made.name));
                Ok(false)
            }
            Ok(made) => {
                let created = join(&parent, &made.name);
                debug!(path = %created, "persistent node created");
                self.created(created, data);
                Ok(true)
            }
            // A fixed name held by someone else (or our expired session): the re-create
            // path replaces it.
            Err(Error::Client(zk_client::Error::NodeExists)) if !self.mode().is_sequential() => {
                self.actual = Some(path);
                Ok(false)
            }
            Err(e) if e.is_session_end() => {
                // The create may have applied on the session that ended: a protected
                // persistent node is looked for by its guid on the next one.
                self.uncertain = protected;
                Err(Stop::SessionEnded)
            }
            Err(Error::Client(e)) => self.recover(e).await.map(|()| false),
            Err(e) => Err(Stop::Failed(e)),
        }
    }

    /// The node's name is known: make sure it is there and ours.
    async fn recreate(&mut self, path: &str) -> Step<bool> {
        match self.client.get_data(path).await {
            Ok((data, stat)) if self.owns(&stat) => {
                // Not seen since it was (re)created or adopted: its data may be a lost
                // create's or a write we lost track of. Once seen, a change is someone
                // else's edit, which is kept (as Curator keeps it).
                let adopting = self.seen.is_none();
                if !self.created_once {
                    // A node of ours we could not know was created (a lost reply).
                    self.created(path.to_owned(), data.clone());
                }
                let ours = self.shared.data();
                if adopting && data != ours {
                    // Ours, with other data: a create or write we lost track of, or a
                    // persistent node adopted (Curator writes its data over it too).
                    match self.client.set_data(path, &ours, None).await {
                        Ok(_) => self.seen = Some(ours),
                        Err(zk_client::Error::NoNode) => return Ok(false),
                        Err(e) => {
                            self.recover(e).await?;
                            return Ok(false);
                        }
                    }
                }
                self.publish(Some(path.to_owned()));
                Ok(true)
            }
            Ok((_, stat)) => {
                // Held by another session (our expired one, or a stranger with our name):
                // replace it, at the version seen, so a newer node is never removed blindly.
                debug!(%path, owner = stat.ephemeral_owner, "replacing a node of another session");
                match self.client.delete(path, Some(stat.version)).await {
                    Ok(()) | Err(zk_client::Error::NoNode | zk_client::Error::BadVersion) => {
                        Ok(false)
                    }
                    Err(e) => self.recover(e).await.map(|()| false),
                }
            }
            Err(zk_client::Error::NoNode) => {
                let data = self.shared.data();
                let mode = downgrade(self.mode());
                match self
                    .client
                    .create_all(path, &data, &self.create_options(mode))
                    .await
                {
                    Ok((created, _)) => {
                        debug!(path = %created, "persistent node re-created");
                        self.created(created, data);
                        Ok(true)
                    }
                    // Someone's (or ours after a lost reply): look again.
                    Err(zk_client::Error::NodeExists) => Ok(false),
                    Err(e) => self.recover(e).await.map(|()| false),
                }
            }
            Err(e) => self.recover(e).await.map(|()| false),
        }
    }

    /// Watches the node until it changes, a command arrives, or it is time to touch it.
    /// `Ok` means "check the node again".
    async fn watch(&mut self) -> Step<()> {
        let Some(path) = self.actual.clone() else {
            return Ok(());
        };
        let watcher: Watcher = match self.client.get_data_watch(&path).await {
            Ok((data, stat, watcher)) => {
                if !self.owns(&stat) {
                    return Ok(());
                }
                if self.seen.as_ref() != Some(&data) {
                    self.seen = Some(data.clone());
                    self.shared.emit(NodeEvent::DataChanged {
                        path: path.clone(),
                        data,
                    });
                }
                watcher
            }
            Err(zk_client::Error::NoNode) => {
                self.gone(&path);
                return Ok(());
            }
            Err(e) => return self.recover(e).await,
        };
        let touch = self.shared.options.ttl.map(|ttl| ttl / 2);
        let mut watcher = watcher;
        for _ in turns() {
            let sleep = tokio::time::sleep(touch.unwrap_or(Duration::from_secs(3600)));
            tokio::select! {
                _ = self.stop.cancelled() => return Err(Stop::Closed),
                command = self.commands.recv() => match command {
                    Some(Command::SetData(data, reply)) => {
                        let result = self.write(&path, &data).await;
                        let (answer, stop) = match result {
                            Ok(written) => (written, None),
                            // The next session's re-create writes these bytes.
                            Err(Stop::SessionEnded) => (Ok(()), Some(Stop::SessionEnded)),
                            Err(Stop::Failed(e)) => (Err(e.clone()), Some(Stop::Failed(e))),
                            Err(Stop::Closed) => {
                                (Err(Error::Client(zk_client::Error::Closed)), Some(Stop::Closed))
                            }
                        };
                        let _ = reply.send(answer);
                        if let Some(stop) = stop {
                            return Err(stop);
                        }
                    }
                    // Every handle is gone: the stop token is cancelled too.
                    None => return Err(Stop::Closed),
                },
                event = &mut watcher => return match event {
                    Ok(e) if e.event_type == EventType::NodeDeleted => {
                        self.gone(&path);
                        Ok(())
                    }
                    Ok(_) => Ok(()),
                    Err(e) => self.recover(e).await,
                },
                _ = sleep, if touch.is_some() => {
                    // Touch: writing the data again moves mtime, which restarts the TTL.
                    let data = self.shared.data();
                    if let Err(e) = self.write(&path, &data).await? {
                        warn!(%path, error = %e, "persistent node: the touch was refused");
                    }
                }
            }
        }
        Ok(())
    }

    /// Writes the node's data (a `set_data`, or a touch).
    /// `Ok(Err(e))`: the client refuses the write (the server drops the connection on
    /// it): the caller gets `e` and the node goes on.
    async fn write(&mut self, path: &str, data: &Bytes) -> Step<Result<(), Error>> {
        for _ in turns() {
            match self.client.set_data(path, data, None).await {
                Ok(_) => return Ok(Ok(())),
                // Gone: the watch sees it and the re-create writes these bytes.
                Err(zk_client::Error::NoNode) => return Ok(Ok(())),
                Err(e) if crate::retry::refused_for(&e).is_some() => {
                    return Ok(Err(Error::Client(e)))
                }
                Err(e) => self.recover(e).await?,
            }
        }
        Err(Stop::Failed(gave_up()))
    }

    fn gone(&mut self, path: &str) {
        self.publish(None);
        self.seen = None;
        self.shared.emit(NodeEvent::Deleted {
            path: path.to_owned(),
        });
    }

    /// The session ended: an ephemeral node went with it.
    fn went_with_session(&mut self) {
        if let Some(path) = self.actual.clone() {
            if self.mode().is_ephemeral() && self.shared.status.borrow().path.is_some() {
                self.gone(&path);
            }
        }
        self.publish(None);
    }

    /// On close: delete the node (or the one a lost create may have made). A session that
    /// ended meanwhile took an ephemeral node with it and counts as deleted; the delete's
    /// other errors are returned.
    async fn remove(&mut self) -> Result<(), Error> {
        self.publish(None);
        let client = self.client.clone();
        let path = match self.actual.clone() {
            Some(path) => Some(path),
            None if self.uncertain && self.shared.options.protected => {
                let parent = parent_of(&self.shared.base).to_owned();
                match self.protected(&parent).find(&client).await {
                    Ok(Some(name)) => Some(join(&parent, &name)),
                    _ => None,
                }
            }
            None if self.uncertain && self.plain_ephemeral_sequential() => {
                let parent = parent_of(&self.shared.base);
                let prefix = name_of(&self.shared.base);
                match find_sequential(&client, parent, prefix).await {
                    Ok(Some(name)) => Some(join(parent, &name)),
                    _ => None,
                }
            }
            None => None,
        };
        let Some(path) = path else { return Ok(()) };
        // Only our own node: never delete a node of our name someone else holds.
        match client.exists(&path).await {
            Ok(Some(stat)) if !self.owns(&stat) => return Ok(()),
            _ => {}
        }
        match delete_guaranteed(&client, &path, None).await {
            Ok(_) => {
                debug!(%path, "persistent node deleted on close");
                Ok(())
            }
            Err(e) => {
                warn!(%path, error = %e, "could not delete the persistent node on close");
                Err(e)
            }
        }
    }
}

/// The mode for a re-create at a known name: the sequence was given by the first create.
fn downgrade(mode: CreateMode) -> CreateMode {
    match mode {
        CreateMode::EphemeralSequential => CreateMode::Ephemeral,
        CreateMode::PersistentSequential => CreateMode::Persistent,
        CreateMode::PersistentSequentialWithTtl => CreateMode::PersistentWithTtl,
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn re_creates_keep_the_sequence_the_first_create_got() {
        assert_eq!(
            downgrade(CreateMode::EphemeralSequential),
            CreateMode::Ephemeral
        );
        assert_eq!(
            downgrade(CreateMode::PersistentSequential),
            CreateMode::Persistent
        );
        assert_eq!(
            downgrade(CreateMode::PersistentSequentialWithTtl),
            CreateMode::PersistentWithTtl
        );
        assert_eq!(downgrade(CreateMode::Ephemeral), CreateMode::Ephemeral);
        assert_eq!(downgrade(CreateMode::Container), CreateMode::Container);
    }
}
