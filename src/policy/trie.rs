//! A path-component prefix trie: the longest entry that is a prefix of a
//! path, compared component by component, decides it.
//!
//! Every node (every prefix of an entry) is found by a hash of its whole
//! prefix written canonically (`/a/b`, no `//`, no `.`), so a lookup need
//! not walk the path one component at a time: one pass over the path a
//! word at a time finds where its components end and hashes the words on
//! the way; the prefixes of a path that are nodes form a contiguous range
//! from the root, and the longest is found by a binary search over the
//! depth, then checked byte by byte against the node's stored path. Each
//! node carries the value of its nearest entry, so that node answers the
//! lookup. The hash is keyed per trie (a path cannot be made to collide on
//! purpose); a collision only costs time: when the check fails, the path
//! is walked component by component, every step checked, as is a path not
//! written canonically.

/// Index of a node in [`Trie::nodes`].
type NodeId = u32;

/// No node, and no value.
const NONE: u32 = u32::MAX;

/// The deepest path the binary search handles; deeper ones are walked.
const DEPTH: usize = 32;

#[derive(Debug, Clone)]
struct Node {
    /// The node this one is a child of (the root's is [`NONE`]).
    parent: NodeId,
    /// How many components its path has.
    depth: u16,
    /// Its whole path, components joined by `/` without a leading one:
    /// `paths[path.0..path.0 + path.1]`.
    path: (u32, u32),
    /// The value of an entry that ends at this node, or [`NONE`].
    value: u32,
    /// The value of the nearest entry at or above this node, or [`NONE`].
    best: u32,
}

/// The index: an open-addressed table of every node but the root under
/// the key of its path. A slot holds the key's top 32 bits (the tag) and
/// the node; the key's low bits choose where its probe starts. Nodes whose
/// keys share a tag lie along the same probe, in the order they were made.
#[derive(Debug, Clone, Default)]
struct Index {
    slots: Vec<u64>,
    len: usize,
}

/// A slot that holds no node.
const EMPTY: u64 = u64::MAX;

impl Index {
    /// The slots along `key`'s probe that carry its tag, first to last.
    fn matches(&self, key: u64) -> impl Iterator<Item = NodeId> + '_ {
        let mask = self.slots.len().wrapping_sub(1);
        let tag = key >> 32;
        let mut at = key as usize;
        std::iter::from_fn(move || loop {
            let slot = *self.slots.get(at & mask)?;
            if slot == EMPTY {
                return None;
            }
            at = (at & mask) + 1;
            if slot >> 32 == tag {
                return Some(slot as NodeId);
            }
        })
    }

    /// The first node along `key`'s probe that carries its tag.
    fn first(&self, key: u64) -> Option<NodeId> {
        self.matches(key).next()
    }

    /// Puts `node` under `key`, in the first empty slot along its probe
    /// (there is one: [`Trie::reserve`] keeps the table at most half full).
    fn put(&mut self, key: u64, node: NodeId) {
        let mask = self.slots.len() - 1;
        let mut at = key as usize & mask;
        while self.slots[at] != EMPTY {
            at = (at + 1) & mask;
        }
        self.slots[at] = key & !0xffff_ffff | u64::from(node);
        self.len += 1;
    }
}

/// The non-empty components of a `/`-separated path; `.` is skipped.
///
/// Paths given to the trie are canonical, so `..` never appears; if it does it
/// is kept as a name, which matches no entry and so cannot widen access.
pub fn components(path: &[u8]) -> impl Iterator<Item = &[u8]> {
    path.split(|&c| c == b'/').filter(|c| !c.is_empty() && *c != b".")
}

const K: u64 = 0x9e37_79b9_7f4a_7c15;

/// The running hash of a path extended by its next 8 bytes: one
/// multiplication on the chain from one word to the next.
fn mix(h: u64, word: u64) -> u64 {
    (h.rotate_left(23) ^ word).wrapping_mul(K)
}

/// The table key of a prefix `len` bytes long whose running hash over its
/// whole words is `h` and whose last `len % 8` bytes are `tail` (the low
/// bytes, little-endian): keyed by length, then an avalanche (the table
/// uses the top bits as tags and the low bits as where to probe).
fn key_of(h: u64, tail: u64, len: usize) -> u64 {
    let h = mix(h, tail) ^ len as u64;
    let h = (h ^ (h >> 33)).wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// The word of `path` at `at`, little-endian.
fn word(path: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(path[at..at + 8].try_into().expect("8 bytes"))
}

/// The last `len % 8` bytes of `path[..len]` as the low bytes of a word.
fn tail(path: &[u8], len: usize) -> u64 {
    let r = len % 8;
    if r == 0 {
        0
    } else if len >= 8 {
        // Read in place, overlapping the word before: a copy to a buffer
        // stalls the load that follows it.
        word(path, len - 8) >> (8 * (8 - r))
    } else {
        let mut b = [0u8; 8];
        b[..r].copy_from_slice(&path[len - r..len]);
        u64::from_le_bytes(b)
    }
}

/// Bit 7 of each byte of `w` that is a `/`.
fn slashes(w: u64) -> u64 {
    const LOW: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    let x = w ^ 0x2f2f_2f2f_2f2f_2f2f;
    !(((x & LOW) + LOW) | x | LOW)
}

/// The key of every prefix of a canonical path, made a byte at a time:
/// for paths that are not written canonically (the walk) and for entries.
#[derive(Clone, Copy)]
struct Stream {
    h: u64,
    tail: [u8; 8],
    len: usize,
}

impl Stream {
    fn new(seed: u64) -> Self {
        Self { h: seed, tail: [0; 8], len: 0 }
    }

    fn push(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.tail[self.len % 8] = b;
            self.len += 1;
            if self.len % 8 == 0 {
                self.h = mix(self.h, u64::from_le_bytes(self.tail));
                self.tail = [0; 8];
            }
        }
    }

    /// Extended by one component: `/name`.
    fn then(mut self, name: &[u8]) -> Self {
        self.push(b"/");
        self.push(name);
        self
    }

    fn key(&self) -> u64 {
        key_of(self.h, u64::from_le_bytes(self.tail), self.len)
    }
}

/// Where the components of a path end, and the running hash there.
struct Ends {
    ends: [u32; DEPTH + 1],
    hashes: [u64; DEPTH + 1],
    n: usize,
}

impl Ends {
    /// Notes a `/` at `base + i` for every byte `i` whose bit 7 is set in
    /// `bits`; `None` past the depth the search handles.
    fn mark(&mut self, mut bits: u64, base: usize, h: u64) -> Option<()> {
        let mut n = self.n;
        while bits != 0 {
            if n == DEPTH + 1 {
                return None;
            }
            self.ends[n] = (base + bits.trailing_zeros() as usize / 8) as u32;
            self.hashes[n] = h;
            n += 1;
            bits &= bits - 1;
        }
        self.n = n;
        Some(())
    }
}

fn some(v: u32) -> Option<u32> {
    (v != NONE).then_some(v)
}

/// Maps absolute paths to `u32` values (rule indices) by longest prefix.
///
/// `/a/b` is a prefix of `/a/b` and `/a/b/c`, never of `/a/bc`. A lookup
/// costs one pass over the path, about log2(depth) probes and one
/// comparison with a stored path, whatever the number of entries. Lookups
/// do not allocate.
#[derive(Debug, Clone)]
pub struct Trie {
    nodes: Vec<Node>,
    paths: Vec<u8>,
    index: Index,
    /// The hash's key, random per trie.
    seed: u64,
}

impl Default for Trie {
    fn default() -> Self {
        use std::hash::BuildHasher;
        let seed = std::collections::hash_map::RandomState::new().hash_one(0x1e7e_u64);
        Self {
            nodes: vec![Node { parent: NONE, depth: 0, path: (0, 0), value: NONE, best: NONE }],
            paths: Vec::new(),
            index: Index::default(),
            seed,
        }
    }
}

impl Trie {
    /// An empty trie.
    pub fn new() -> Self {
        Self::default()
    }

    fn path_of(&self, node: &Node) -> &[u8] {
        &self.paths[node.path.0 as usize..(node.path.0 + node.path.1) as usize]
    }

    /// The key of `node`'s path, computed again (to grow the index).
    fn key_of_node(&self, node: &Node) -> u64 {
        let mut s = Stream::new(self.seed);
        s.push(b"/");
        s.push(self.path_of(node));
        s.key()
    }

    /// The child of `parent` named `name`, whose path's key is `key`.
    fn child(&self, parent: NodeId, key: u64, name: &[u8]) -> Option<NodeId> {
        let plen = self.nodes[parent as usize].path.1 as usize;
        // The parent's path, a `/` (none under the root), the name.
        let expect = if plen == 0 { name.len() } else { plen + 1 + name.len() };
        self.index.matches(key).find(|&at| {
            let node = &self.nodes[at as usize];
            let path = self.path_of(node);
            node.parent == parent && path.len() == expect && path.ends_with(name)
        })
    }

    /// Makes room in the index for one more node, at most half full.
    fn reserve(&mut self) {
        if (self.index.len + 1) * 2 <= self.index.slots.len() {
            return;
        }
        let size = (self.index.slots.len() * 2).max(16);
        let keys: Vec<u64> = self.nodes[1..].iter().map(|n| self.key_of_node(n)).collect();
        self.index = Index { slots: vec![EMPTY; size], len: 0 };
        for (i, key) in keys.into_iter().enumerate() {
            self.index.put(key, i as NodeId + 1);
        }
    }

    /// Sets the value of the entry for `path`, replacing an earlier one.
    pub fn insert(&mut self, path: &[u8], value: u32) {
        let mut at: NodeId = 0;
        let mut s = Stream::new(self.seed);
        for name in components(path) {
            s = s.then(name);
            let key = s.key();
            at = match self.child(at, key, name) {
                Some(id) => id,
                None => {
                    self.reserve();
                    let id = self.nodes.len() as NodeId;
                    let parent = &self.nodes[at as usize];
                    let (depth, best, (off, len)) = (parent.depth + 1, parent.best, parent.path);
                    let start = self.paths.len() as u32;
                    if len > 0 {
                        self.paths.extend_from_within(off as usize..(off + len) as usize);
                        self.paths.push(b'/');
                    }
                    self.paths.extend_from_slice(name);
                    let path = (start, self.paths.len() as u32 - start);
                    self.index.put(key, id);
                    self.nodes.push(Node { parent: at, depth, path, value: NONE, best });
                    id
                }
            };
        }
        self.nodes[at as usize].value = value;
        // Every descendant of `at` was made after it, and after its parent:
        // one pass forward brings their nearest entry up to date.
        for i in at as usize..self.nodes.len() {
            let n = &self.nodes[i];
            let inherited = if n.parent == NONE { NONE } else { self.nodes[n.parent as usize].best };
            let best = if n.value != NONE { n.value } else { inherited };
            self.nodes[i].best = best;
        }
    }

    /// Gives back what the trie's vectors reserved beyond what they hold
    /// (once it is built: the supervisor's surface).
    pub fn shrink(&mut self) {
        self.nodes.shrink_to_fit();
        self.paths.shrink_to_fit();
    }

    /// Heap bytes the trie holds (nodes, paths and the index), for the
    /// memory-per-entry figure of `interpose bench`.
    pub fn heap_bytes(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<Node>()
            + self.paths.capacity()
            + self.index.slots.capacity() * std::mem::size_of::<u64>()
    }

    /// The deepest node whose path is a prefix of `path`, by a binary
    /// search over the depth; `None` when the path is not written
    /// canonically (a `//`, a `.`), is deeper than the search handles, or
    /// a hash collision misled it (the caller then walks).
    fn deepest(&self, path: &[u8]) -> Option<NodeId> {
        if path.first() != Some(&b'/') {
            return None;
        }
        // One pass over the path a word at a time: where each component
        // ends, and the running hash of the words before that end.
        let mut at = Ends { ends: [0; DEPTH + 1], hashes: [0; DEPTH + 1], n: 0 };
        let mut h = self.seed;
        let whole = path.len() / 8;
        for i in 0..whole {
            let w = word(path, i * 8);
            at.mark(slashes(w), i * 8, h)?;
            h = mix(h, w);
        }
        let r = path.len() % 8;
        if r > 0 {
            // The last bytes, read as the high bytes of the word before.
            let w = tail(path, path.len()) << (8 * (8 - r));
            at.mark(slashes(w) >> (8 * (8 - r)), whole * 8, h)?;
        }
        // `ends[0]` is the leading `/`; each later one ends a component,
        // and so does the path's end unless it ends with a `/`.
        if at.ends[at.n - 1] as usize != path.len() - 1 {
            at.mark(0x80, path.len(), h)?;
        }
        let (ends, hashes, n) = (&at.ends, &at.hashes, at.n);
        let comps = n - 1;
        // Written canonically: no empty component, no `.`.
        for k in 1..n {
            let (a, b) = (ends[k - 1] as usize, ends[k] as usize);
            if b - a == 1 || (b - a == 2 && path[a + 1] == b'.') {
                return None;
            }
        }
        let key = |k: usize| {
            let len = ends[k] as usize;
            key_of(hashes[k], tail(path, len), len)
        };
        let (mut lo, mut hi, mut node) = (0usize, comps, 0 as NodeId);
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            match self.index.first(key(mid)) {
                Some(id) => (lo, node) = (mid, id),
                None => hi = mid - 1,
            }
        }
        if node == 0 {
            return Some(0);
        }
        // Node paths are unique and canonical: the same text is the same
        // prefix, at the same depth.
        (self.path_of(&self.nodes[node as usize]) == &path[1..ends[lo] as usize]).then_some(node)
    }

    /// The deepest node whose path is a prefix of `path`, one checked
    /// component at a time.
    fn walk(&self, path: &[u8]) -> (NodeId, bool) {
        let mut at: NodeId = 0;
        let mut s = Stream::new(self.seed);
        for name in components(path) {
            s = s.then(name);
            match self.child(at, s.key(), name) {
                Some(id) => at = id,
                None => return (at, false),
            }
        }
        (at, true)
    }

    /// The value of the longest entry that is a prefix of `path`.
    pub fn lookup(&self, path: &[u8]) -> Option<u32> {
        let node = self.deepest(path).unwrap_or_else(|| self.walk(path).0);
        some(self.nodes[node as usize].best)
    }

    /// Whether `path` is an entry or lies on the way to one (every component
    /// is a node of the trie).
    pub fn reaches(&self, path: &[u8]) -> bool {
        match self.deepest(path) {
            Some(node) => self.nodes[node as usize].depth as usize == components(path).count(),
            None => self.walk(path).1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trie(entries: &[(&str, u32)]) -> Trie {
        let mut t = Trie::new();
        for (p, v) in entries {
            t.insert(p.as_bytes(), *v);
        }
        t
    }

    #[test]
    fn longest_prefix_wins_by_component() {
        let t = trie(&[("/usr", 1), ("/usr/lib/secret", 2), ("/home/u/repo", 3)]);
        assert_eq!(t.lookup(b"/usr"), Some(1));
        assert_eq!(t.lookup(b"/usr/bin/ls"), Some(1));
        assert_eq!(t.lookup(b"/usr/lib/secret"), Some(2));
        assert_eq!(t.lookup(b"/usr/lib/secret/x"), Some(2));
        assert_eq!(t.lookup(b"/usr/lib/secretive"), Some(1));
        assert_eq!(t.lookup(b"/usrx"), None);
        assert_eq!(t.lookup(b"/home/u"), None);
        assert_eq!(t.lookup(b"/home/u/repo2"), None);
        assert_eq!(t.lookup(b"/home/u/repo/src/main.rs"), Some(3));
        assert_eq!(t.lookup(b"/"), None);
        assert_eq!(t.lookup(b""), None);
    }

    #[test]
    fn slashes_and_dots_are_normalised_but_dotdot_never_matches() {
        let t = trie(&[("/a/b/", 1)]);
        assert_eq!(t.lookup(b"//a///b/c"), Some(1));
        assert_eq!(t.lookup(b"/a/./b"), Some(1));
        assert_eq!(t.lookup(b"/a/../a/b"), None);
    }

    #[test]
    fn root_entry_covers_everything_and_reinsert_replaces() {
        let mut t = trie(&[("/", 7), ("/x", 1)]);
        assert_eq!(t.lookup(b"/anything"), Some(7));
        t.insert(b"/x", 9);
        assert_eq!(t.lookup(b"/x/y"), Some(9));
    }

    #[test]
    fn ancestors_are_reached() {
        let t = trie(&[("/home/u/repo", 1)]);
        assert!(t.reaches(b"/"));
        assert!(t.reaches(b"/home"));
        assert!(t.reaches(b"/home/u"));
        assert!(t.reaches(b"/home/u/repo"));
        assert!(!t.reaches(b"/home/v"));
        assert!(!t.reaches(b"/home/u/repo/x"));
    }

    #[test]
    fn colliding_edges_are_told_apart() {
        // Two hundred siblings, each with a child of the same name: every
        // step compares the parent and the name, not the hash alone.
        let mut t = Trie::new();
        let names: Vec<String> = (0..200).map(|i| format!("n{i}")).collect();
        for (i, n) in names.iter().enumerate() {
            t.insert(format!("/{n}/x").as_bytes(), i as u32);
        }
        for (i, n) in names.iter().enumerate() {
            assert_eq!(t.lookup(format!("/{n}/x/y").as_bytes()), Some(i as u32));
            assert_eq!(t.lookup(format!("/{n}/y").as_bytes()), None);
        }
        // A node planted under another prefix's key and depth, first on
        // its probe, whatever the hash does: the binary search is misled,
        // the check is not.
        let key = Stream::new(t.seed).then(b"n0").then(b"x").key();
        let first = t.index.first(key).expect("the entry's node");
        let mut other = t.nodes[first as usize].clone();
        other.value = 77;
        other.best = 77;
        other.path = (t.paths.len() as u32, 7);
        t.paths.extend_from_slice(b"zzz/zzz");
        t.nodes.push(other);
        let planted = (t.nodes.len() - 1) as NodeId;
        t.reserve();
        let slot = t.index.slots.iter().position(|&s| s != EMPTY && s as NodeId == first).expect("its slot");
        t.index.slots[slot] = key & !0xffff_ffff | u64::from(planted);
        t.index.put(key, first);
        assert_eq!(t.index.first(key), Some(planted));
        assert_eq!(t.lookup(b"/n0/x"), Some(0), "found behind a colliding node");
        assert_eq!(t.lookup(b"/n0/x/deeper"), Some(0));
        assert!(t.reaches(b"/n0/x"));
        assert_eq!(t.lookup(b"/zzz/zzz"), None, "a path is found only under its own key");
    }

    #[test]
    fn paths_deeper_than_the_search_are_walked() {
        let deep: String = (0..DEPTH + 8).map(|i| format!("/d{i}")).collect();
        let t = trie(&[(deep.as_str(), 1), ("/d0/d1", 2)]);
        assert_eq!(t.lookup(format!("{deep}/x").as_bytes()), Some(1));
        assert_eq!(t.lookup(b"/d0/d1/d2"), Some(2));
        assert!(t.reaches(deep.as_bytes()));
        assert!(!t.reaches(format!("{deep}/x").as_bytes()));
        // The same path with `//` and `.` in it, and a trailing `/`.
        let messy = deep.replace("/d3/", "//d3/./");
        assert_eq!(t.lookup(format!("{messy}/").as_bytes()), Some(1));
    }

    #[test]
    fn agrees_with_a_reference_scan() {
        // Differential check against the obvious implementation.
        let entries = ["/a", "/a/b", "/a/b/c/d", "/b/c", "/c/d/e", "/a/bb"];
        let mut t = Trie::new();
        for (i, e) in entries.iter().enumerate() {
            t.insert(e.as_bytes(), i as u32);
        }
        let reference = |p: &str| -> Option<u32> {
            let pc: Vec<&[u8]> = components(p.as_bytes()).collect();
            entries
                .iter()
                .enumerate()
                .filter(|(_, e)| {
                    let ec: Vec<&[u8]> = components(e.as_bytes()).collect();
                    pc.starts_with(&ec)
                })
                .max_by_key(|(_, e)| components(e.as_bytes()).count())
                .map(|(i, _)| i as u32)
        };
        let names = ["a", "b", "bb", "c", "d", "e"];
        let mut paths = vec![String::new()];
        for _ in 0..4 {
            let next: Vec<String> = paths.iter().flat_map(|p| names.iter().map(move |n| format!("{p}/{n}"))).collect();
            paths.extend(next);
        }
        for p in &paths {
            assert_eq!(t.lookup(p.as_bytes()), reference(p), "{p}");
        }
    }

    #[test]
    fn the_word_at_a_time_search_and_the_walk_agree_at_every_length() {
        // Components of 1 to 19 bytes end at every offset within a word,
        // paths reach past 8 and 16 words; the search must find what the
        // walk finds (and find it itself: a wrong key would send it to the
        // root, not to the walk), written canonically or not.
        let mut rng = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move |n: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % n
        };
        let name = |next: &mut dyn FnMut(u64) -> u64| -> String {
            let len = 1 + next(19) as usize;
            (0..len).map(|_| (b'a' + next(3) as u8) as char).collect()
        };
        let mut t = Trie::new();
        let mut entries = Vec::new();
        for i in 0..300 {
            let depth = 1 + next(12) as usize;
            let path: String = (0..depth).map(|_| format!("/{}", name(&mut next))).collect();
            t.insert(path.as_bytes(), i);
            entries.push(path);
        }
        for e in &entries {
            for extra in 0..4 {
                let mut path = e.clone();
                for _ in 0..extra {
                    path = format!("{path}/{}", name(&mut next));
                }
                let cut = next(path.len() as u64 + 1) as usize;
                for p in [path.clone(), path[..cut].to_string()] {
                    if !p.starts_with('/') || p.ends_with("/.") {
                        continue;
                    }
                    let (walked, whole) = t.walk(p.as_bytes());
                    assert_eq!(t.deepest(p.as_bytes()), Some(walked), "{p}");
                    assert_eq!(t.reaches(p.as_bytes()), whole, "{p}");
                    let messy = format!("/{}/.", p.replace('/', "//"));
                    assert_eq!(t.deepest(messy.as_bytes()), None, "{messy}");
                    assert_eq!(t.lookup(messy.as_bytes()), t.lookup(p.as_bytes()), "{messy}");
                }
            }
        }
    }
}
