//! [`ScratchDir`]: a temporary directory for files a server reads (JAAS configs...), removed
//! on drop and, should the test binary die first, by the harness' reaper.

use std::fs;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::runtime::{self, Reap};

/// A temporary directory; removed on drop.
#[derive(Debug)]
pub struct ScratchDir {
    dir: PathBuf,
}

impl ScratchDir {
    /// A new empty directory named after `tag`.
    pub fn new(tag: &str) -> ScratchDir {
        static SEQ: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "zkrs-it-{tag}-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        fs::create_dir_all(&dir).expect("create scratch dir");
        runtime::register(Reap::Dir(&dir.to_string_lossy()));
        ScratchDir { dir }
    }

    /// Writes `contents` to `name` in the directory and returns its path.
    pub fn write(&self, name: &str, contents: &str) -> PathBuf {
        let path = self.dir.join(name);
        fs::write(&path, contents).expect("write scratch file");
        path
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}
