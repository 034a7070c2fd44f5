//! The xid allocator.

/// Hands out request ids 1, 2, ... `i32::MAX`, then wraps to 1.
///
/// Ids never collide with the special negative xids of [`zk_proto::xid`], and 0 is skipped
/// too. Replies are matched FIFO, so a wrapped id can never be confused with an old one still
/// pending (at most `max_outstanding` ids are in flight).
#[derive(Debug, Clone)]
pub(crate) struct XidAllocator {
    next: i32,
}

impl Default for XidAllocator {
    fn default() -> Self {
        Self { next: 1 }
    }
}

impl XidAllocator {
    /// The next xid.
    pub(crate) fn next_xid(&mut self) -> i32 {
        let xid = self.next;
        self.next = if xid == i32::MAX { 1 } else { xid + 1 };
        xid
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_at_one_and_wraps_to_one() {
        let mut x = XidAllocator::default();
        assert_eq!(x.next_xid(), 1);
        assert_eq!(x.next_xid(), 2);
        x.next = i32::MAX;
        assert_eq!(x.next_xid(), i32::MAX);
        assert_eq!(x.next_xid(), 1);
    }
}
