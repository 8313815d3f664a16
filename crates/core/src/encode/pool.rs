//! An encoder's pool of batch caches: each thread of a batch (or of a
//! file's encoding) takes one and gives it back when it ends.

use super::cache::Cache;
use std::sync::Mutex;

/// An encoder's caches between batches: each thread of a batch takes one
/// (or a new, empty one) and gives it back when the batch ends, so a
/// program that encodes its corpus one batch or file after another (a few
/// thousand lines each) starts each with what the ones before it learned.
/// At most one idle cache per core is kept (each at most `BATCH_MAX_SLOTS`).
#[derive(Default)]
pub(crate) struct CachePool {
    idle: Mutex<Vec<Cache>>,
}

impl CachePool {
    /// An idle cache, or a new one from `new`; given back when the
    /// `Pooled` is dropped.
    pub(crate) fn take(&self, new: impl FnOnce() -> Cache) -> Pooled<'_> {
        let cache = self.lock().and_then(|mut idle| idle.pop()).unwrap_or_else(new);
        Pooled { pool: self, cache: Some(cache) }
    }

    /// The idle caches, unless another thread holds them: the lock is only
    /// held for a push or a pop, and never waiting on it means a process
    /// forked while another thread held it cannot hang on it (the caller
    /// then makes a new cache, or drops the one it would give back).
    fn lock(&self) -> Option<std::sync::MutexGuard<'_, Vec<Cache>>> {
        match self.idle.try_lock() {
            Ok(idle) => Some(idle),
            // A thread that panicked while holding the lock left a valid list.
            Err(std::sync::TryLockError::Poisoned(e)) => Some(e.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    }
}

/// A cache taken from a `CachePool`, given back when dropped.
pub(crate) struct Pooled<'a> {
    pool: &'a CachePool,
    cache: Option<Cache>,
}

impl std::ops::Deref for Pooled<'_> {
    type Target = Cache;
    fn deref(&self) -> &Cache {
        self.cache.as_ref().expect("a pooled cache is held until dropped")
    }
}

impl std::ops::DerefMut for Pooled<'_> {
    fn deref_mut(&mut self) -> &mut Cache {
        self.cache.as_mut().expect("a pooled cache is held until dropped")
    }
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        let (Some(cache), Some(mut idle)) = (self.cache.take(), self.pool.lock()) else { return };
        if idle.len() < crate::util::default_threads() {
            idle.push(cache);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::key::PieceKey;

    fn k(piece: &[u8]) -> PieceKey {
        PieceKey::new(piece)
    }

    #[test]
    fn a_pool_hands_back_what_a_batch_left() {
        let pool = CachePool::default();
        {
            let mut cache = pool.take(Cache::new);
            cache.put(&k(b"piece"), b"piece", &[4, 2]);
        }
        assert_eq!(pool.take(Cache::new).get(&k(b"piece"), b"piece"), Some(&[4u32, 2][..]));
        // Two at once: the second is a new one; both come back.
        let (first, second) = (pool.take(Cache::new), pool.take(Cache::new));
        assert!(first.get(&k(b"piece"), b"piece").is_some() != second.get(&k(b"piece"), b"piece").is_some());
        drop((first, second));
        let idle = pool.lock().map(|idle| idle.len());
        assert_eq!(idle, Some(2.min(crate::util::default_threads())));
    }
}
