//! The pair heap: a binary max-heap whose order looks at the tokens' bytes.

#[derive(Clone, Copy, Debug)]
pub(super) struct Entry {
    pub(super) count: u64,
    pub(super) a: u32,
    pub(super) b: u32,
}

/// `x` must be popped before `y`: higher count, then smaller (left, right) bytes.
#[inline]
pub(super) fn before(x: &Entry, y: &Entry, tokens: &[Vec<u8>]) -> bool {
    if x.count != y.count {
        return x.count > y.count;
    }
    if x.a != y.a {
        return tokens[x.a as usize] < tokens[y.a as usize];
    }
    tokens[x.b as usize] < tokens[y.b as usize]
}

/// A binary heap with a comparator that looks at the token table.
#[derive(Default)]
pub(super) struct PairHeap {
    pub(super) v: Vec<Entry>,
}

impl PairHeap {
    pub(super) fn push(&mut self, e: Entry, tokens: &[Vec<u8>]) {
        self.v.push(e);
        let mut i = self.v.len() - 1;
        while i > 0 {
            let parent = (i - 1) / 2;
            if before(&self.v[i], &self.v[parent], tokens) {
                self.v.swap(i, parent);
                i = parent;
            } else {
                break;
            }
        }
    }

    /// Orders the entries already in `v` into a heap in O(n) (Floyd), where
    /// n pushes cost O(n log n) comparisons, many of them byte compares of
    /// tied counts. The pop order does not depend on the layout: `before` is
    /// a total order (no two pairs have the same bytes).
    pub(super) fn heapify(&mut self, tokens: &[Vec<u8>]) {
        for i in (0..self.v.len() / 2).rev() {
            self.sift_down(i, tokens);
        }
    }

    pub(super) fn pop(&mut self, tokens: &[Vec<u8>]) -> Option<Entry> {
        let last = self.v.pop()?;
        if self.v.is_empty() {
            return Some(last);
        }
        let top = std::mem::replace(&mut self.v[0], last);
        self.sift_down(0, tokens);
        Some(top)
    }

    pub(super) fn sift_down(&mut self, mut i: usize, tokens: &[Vec<u8>]) {
        let n = self.v.len();
        loop {
            let l = 2 * i + 1;
            if l >= n {
                break;
            }
            let r = l + 1;
            let c = if r < n && before(&self.v[r], &self.v[l], tokens) { r } else { l };
            if before(&self.v[c], &self.v[i], tokens) {
                self.v.swap(c, i);
                i = c;
            } else {
                break;
            }
        }
    }

}
