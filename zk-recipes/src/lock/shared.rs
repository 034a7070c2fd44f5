//! The shared (read/write) lock, Curator's `InterProcessReadWriteLock` layout.

use zk_client::Client;

use super::fair::FairLock;
use crate::error::Result;
use crate::path::check_base;
use crate::queue::naming::{Intent, READ_LOCK_NAME, WRITE_LOCK_NAME};
use crate::queue::{HandOff, Participant, QueueSpec};
use bytes::Bytes;

/// A fair read/write lock: readers hold it together unless a writer queued before them;
/// a writer holds it alone.
///
/// Nodes are `<path>/_c_<uuid>-__READ__<seq>` and `<path>/_c_<uuid>-__WRIT__<seq>`, Curator's
/// layout, in one queue ordered by sequence number. A writer waits for its immediate
/// predecessor; a reader waits only for the nearest write node queued before it. So a
/// writer's release wakes exactly the readers it unblocks (and a reader's release wakes at
/// most the writer right behind it); with [`HandOff::Prepared`](crate::lock::HandOff::Prepared),
/// also the writer two blockers behind (readers never take a second watch). Curator's readers
/// watch the lowest write node instead, which is equally safe.
///
/// The owner of the write lock may also take the read lock (a downgrade): the read node is
/// then a plain ephemeral node named with the write node's sequence number
/// (`_c_<uuid>-__READ__<write seq>`), so it sorts at the write node's position and holds at
/// once, as in Curator 5.5.0+ (CURATOR-621). A writer queued behind the write node waits for
/// both nodes; releasing the write lock first leaves the read lock held (the downgrade is
/// complete). Both sides are re-entrant per task, like [`FairLock`].
///
/// A downgrade needs the write lock still held: after its guard is dropped (its release may
/// still be under way) the read lock queues as any reader's. If the write node is found gone
/// when the downgrade looks (deleted by someone, its session ended), the read acquisition
/// fails with [`Error::LockLost`](crate::Error::LockLost)`(NodeDeleted)`: another writer
/// may hold the lock.
/// Taking the write lock while holding only the read lock (an upgrade) waits for the read
/// node forever, as in Curator: release the read lock first.
///
/// Curator before 5.5.0 (Debian's 5.4.0, for one) creates a downgrade's read node as a
/// sequential node at the end of the queue. A writer queued between its write node and
/// that read node, Curator's or ours, then gets the lock as soon as the write node goes,
/// while that process still holds its read lock: the old Curator's own bug, which no
/// contender can reliably detect from the node layout.
///
/// # Example
///
/// ```no_run
/// # async fn demo(client: zk_client::Client) -> Result<(), zk_recipes::Error> {
/// use zk_recipes::lock::ReadWriteLock;
///
/// let lock = ReadWriteLock::new(client, "/locks/catalog")?;
/// let reading = lock.read_lock().acquire().await?;   // shared with other readers
/// reading.release().await?;
/// let writing = lock.write_lock().acquire().await?;  // alone
/// writing.release().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct ReadWriteLock {
    read: FairLock,
    write: FairLock,
}

impl ReadWriteLock {
    /// A read/write lock on `path`.
    pub fn new(client: Client, path: &str) -> Result<ReadWriteLock> {
        let base = check_base(path)?;
        let write = FairLock::with_spec(
            client.clone(),
            QueueSpec {
                base: base.clone(),
                lock_name: WRITE_LOCK_NAME,
                intent: Intent::Write,
                data: None,
                hand_off: HandOff::default(),
            },
            None,
        );
        let read = FairLock::with_spec(
            client,
            QueueSpec {
                base,
                lock_name: READ_LOCK_NAME,
                intent: Intent::Read,
                data: None,
                hand_off: HandOff::default(),
            },
            Some(&write),
        );
        Ok(ReadWriteLock { read, write })
    }

    /// The shared side.
    pub fn read_lock(&self) -> &FairLock {
        &self.read
    }

    /// The exclusive side.
    pub fn write_lock(&self) -> &FairLock {
        &self.write
    }

    /// This lock with `data` as the owner data of both sides' nodes (see
    /// [`FairLock::with_owner_data`]). Returns a new instance.
    pub fn with_owner_data(&self, data: impl Into<Bytes>) -> ReadWriteLock {
        let data = data.into();
        self.edited(|spec| spec.data = Some(data.clone()))
    }

    /// This lock with `hand_off` for both sides (see [`FairLock::with_hand_off`]). Returns a
    /// new instance.
    pub fn with_hand_off(&self, hand_off: HandOff) -> ReadWriteLock {
        self.edited(|spec| spec.hand_off = hand_off)
    }

    /// A new instance with both sides' specs changed by `edit`; the new read side's
    /// companion is the new write side.
    fn edited(&self, edit: impl Fn(&mut QueueSpec)) -> ReadWriteLock {
        let write = self.write.edited(&edit);
        let mut spec = self.read.spec().clone();
        edit(&mut spec);
        let read = FairLock::with_source(self.read.source().clone(), spec, Some(&write));
        ReadWriteLock { read, write }
    }

    /// Readers and writers queued on this lock, in queue order, with their owner data (see
    /// [`FairLock::participants`]).
    ///
    /// # Errors
    ///
    /// As [`FairLock::participants`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only reads.
    pub async fn participants(&self) -> Result<Vec<Participant>> {
        self.write.participants().await
    }
}
