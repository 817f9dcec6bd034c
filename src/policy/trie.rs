//! A path-component prefix trie: the longest entry that is a prefix of a
//! path, compared component by component, decides it.
//!
//! Every node (every prefix of an entry) is found by a hash of its whole
//! prefix, so a lookup need not walk the path one component at a time:
//! the prefixes of a path that are nodes form a contiguous range from the
//! root, and the longest is found by a binary search over the depth, then
//! checked byte by byte against the node's stored path. Each node carries
//! the value of its nearest entry, so that node answers the lookup. The
//! hash is keyed per trie (a path cannot be made to collide on purpose);
//! a collision only costs time: when the check fails, the path is walked
//! component by component, every step checked.

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
    /// The next node whose prefix hashes to the same key.
    next: NodeId,
}

/// The index's hasher: keys are already well-mixed 64-bit hashes.
#[derive(Default, Clone, Copy)]
struct Passthrough(u64);

impl std::hash::Hasher for Passthrough {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, _: &[u8]) {
        unreachable!("only u64 keys are hashed")
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

type Index = std::collections::HashMap<u64, NodeId, std::hash::BuildHasherDefault<Passthrough>>;

/// Maps absolute paths to `u32` values (rule indices) by longest prefix.
///
/// `/a/b` is a prefix of `/a/b` and `/a/b/c`, never of `/a/bc`. A lookup
/// costs one pass over the path, about log2(depth) hash probes and one
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
            nodes: vec![Node { parent: NONE, depth: 0, path: (0, 0), value: NONE, best: NONE, next: NONE }],
            paths: Vec::new(),
            index: Index::default(),
            seed,
        }
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

/// The hash of one component: 8 bytes at a time, seeded with its length
/// (so `ab` then `c` differs from `a` then `bc`). Components are hashed
/// independently, so the processor overlaps them.
fn name_hash(name: &[u8]) -> u64 {
    let mut h = (name.len() as u64).wrapping_mul(K);
    let mut chunks = name.chunks_exact(8);
    for c in &mut chunks {
        h = (h.rotate_left(23) ^ u64::from_le_bytes(c.try_into().expect("8 bytes"))).wrapping_mul(K);
    }
    let rest = chunks.remainder();
    let n = rest.len();
    // The tail read in place (a copy to a buffer stalls the load that
    // follows it): the last 8 bytes, overlapping, or two overlapping
    // halves, or three bytes. Overlap only makes collisions possible,
    // which cost time, never a wrong answer.
    let tail = if n == 0 {
        return h;
    } else if name.len() >= 8 {
        u64::from_le_bytes(name[name.len() - 8..].try_into().expect("8 bytes"))
    } else if n >= 4 {
        let lo = u32::from_le_bytes(rest[..4].try_into().expect("4 bytes"));
        let hi = u32::from_le_bytes(rest[n - 4..].try_into().expect("4 bytes"));
        u64::from(lo) | u64::from(hi) << 32
    } else {
        u64::from(rest[0]) | u64::from(rest[n / 2]) << 8 | u64::from(rest[n - 1]) << 16
    };
    (h.rotate_left(23) ^ tail).wrapping_mul(K)
}

/// The running hash `h` of a prefix extended by one component: one
/// multiplication on the chain from one component to the next.
fn extend(h: u64, name: &[u8]) -> u64 {
    (h.rotate_left(29) ^ name_hash(name)).wrapping_mul(0xff51_afd7_ed55_8ccd)
}

/// The table key of a prefix whose running hash is `h`: a final avalanche
/// (the table uses the top bits as tags and the low bits as the bucket).
fn key_of(h: u64) -> u64 {
    let h = h ^ (h >> 33);
    let h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

fn some(v: u32) -> Option<u32> {
    (v != NONE).then_some(v)
}

impl Trie {
    /// An empty trie.
    pub fn new() -> Self {
        Self::default()
    }

    fn path_of(&self, node: &Node) -> &[u8] {
        &self.paths[node.path.0 as usize..(node.path.0 + node.path.1) as usize]
    }

    /// The child of `parent` named `name`, whose prefix key is `key`.
    fn child(&self, parent: NodeId, key: u64, name: &[u8]) -> Option<NodeId> {
        let mut at = *self.index.get(&key)?;
        let plen = self.nodes[parent as usize].path.1 as usize;
        while at != NONE {
            let node = &self.nodes[at as usize];
            let path = self.path_of(node);
            if node.parent == parent && path.len() >= name.len() && &path[path.len() - name.len()..] == name {
                // The parent's path, a `/` (none under the root), the name.
                let expect = if plen == 0 { name.len() } else { plen + 1 + name.len() };
                if path.len() == expect {
                    return Some(at);
                }
            }
            at = node.next;
        }
        None
    }

    /// The node whose prefix key is `key`, unchecked: the binary search
    /// trusts the hash (and touches only the index), the final answer does
    /// not.
    fn probe(&self, key: u64) -> Option<NodeId> {
        self.index.get(&key).copied()
    }

    /// Whether `node`'s path is exactly the first `depth` components of `path`.
    fn is_prefix(&self, node: NodeId, path: &[u8], depth: usize) -> bool {
        let mut stored = self.path_of(&self.nodes[node as usize]);
        for (i, name) in components(path).take(depth).enumerate() {
            if i > 0 {
                match stored.split_first() {
                    Some((b'/', rest)) => stored = rest,
                    _ => return false,
                }
            }
            match stored.strip_prefix(name) {
                Some(rest) => stored = rest,
                None => return false,
            }
        }
        stored.is_empty()
    }

    /// Sets the value of the entry for `path`, replacing an earlier one.
    pub fn insert(&mut self, path: &[u8], value: u32) {
        let mut at: NodeId = 0;
        let mut h = self.seed;
        for name in components(path) {
            h = extend(h, name);
            let key = key_of(h);
            at = match self.child(at, key, name) {
                Some(id) => id,
                None => {
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
                    let next = self.index.insert(key, id).unwrap_or(NONE);
                    self.nodes.push(Node { parent: at, depth, path, value: NONE, best, next });
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

    /// Gives back what the trie's vectors and index reserved beyond what
    /// they hold (once it is built: the supervisor's surface).
    pub fn shrink(&mut self) {
        self.nodes.shrink_to_fit();
        self.paths.shrink_to_fit();
        self.index.shrink_to_fit();
    }

    /// Heap bytes the trie holds (nodes, paths and the index), for the
    /// memory-per-entry figure of `interpose bench`.
    pub fn heap_bytes(&self) -> usize {
        // hashbrown: one control byte per bucket plus the (key, value) slot.
        let slot = std::mem::size_of::<(u64, NodeId)>() + 1;
        self.nodes.capacity() * std::mem::size_of::<Node>() + self.paths.capacity() + self.index.capacity() * slot
    }

    /// The deepest node whose path is a prefix of `path`, by a binary
    /// search over the depth; `None` when a hash collision misled it (the
    /// caller then walks).
    fn deepest(&self, path: &[u8]) -> Option<NodeId> {
        let mut hashes = [0u64; DEPTH];
        let mut ends = [0u32; DEPTH];
        let (mut n, mut h, mut start) = (0, self.seed, 0usize);
        // Whether the components lie one `/` apart (no `//`, no `.`): the
        // first `k` of them are then `path[first..ends[k - 1]]` as stored.
        let (mut first, mut contiguous) = (None, true);
        let seps = path.iter().enumerate().filter(|(_, &c)| c == b'/').map(|(i, _)| i);
        for sep in seps.chain(std::iter::once(path.len())) {
            let name = &path[start..sep];
            if name.is_empty() || name == b"." {
                contiguous &= first.is_none() || (name.is_empty() && sep == path.len());
                start = sep + 1;
                continue;
            }
            if n == DEPTH {
                return None;
            }
            match first {
                None => first = Some(start),
                Some(_) => contiguous &= start == ends[n - 1] as usize + 1,
            }
            h = extend(h, name);
            hashes[n] = h;
            ends[n] = sep as u32;
            n += 1;
            start = sep + 1;
        }
        let (mut lo, mut hi, mut node) = (0usize, n, 0 as NodeId);
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            match self.probe(key_of(hashes[mid - 1])) {
                Some(id) => (lo, node) = (mid, id),
                None => hi = mid - 1,
            }
        }
        if node == 0 {
            return Some(0);
        }
        let n = &self.nodes[node as usize];
        let checked = match first {
            Some(first) if contiguous => self.path_of(n) == &path[first..ends[lo - 1] as usize],
            _ => self.is_prefix(node, path, lo),
        };
        (checked && n.depth as usize == lo).then_some(node)
    }

    /// The deepest node whose path is a prefix of `path`, one checked
    /// component at a time.
    fn walk(&self, path: &[u8]) -> (NodeId, bool) {
        let mut at: NodeId = 0;
        let mut h = self.seed;
        for name in components(path) {
            h = extend(h, name);
            match self.child(at, key_of(h), name) {
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
        // Force every edge into one chain: lookups still compare names.
        let mut t = Trie::new();
        let names: Vec<String> = (0..200).map(|i| format!("n{i}")).collect();
        for (i, n) in names.iter().enumerate() {
            t.insert(format!("/{n}/x").as_bytes(), i as u32);
        }
        for (i, n) in names.iter().enumerate() {
            assert_eq!(t.lookup(format!("/{n}/x/y").as_bytes()), Some(i as u32));
            assert_eq!(t.lookup(format!("/{n}/y").as_bytes()), None);
        }
        // A node planted under another prefix's key and depth, whatever
        // the hash does: the binary search is misled, the check is not.
        let mut h = t.seed;
        for name in [&b"n0"[..], b"x"] {
            h = extend(h, name);
        }
        let key = key_of(h);
        let first = t.index[&key];
        let mut other = t.nodes[first as usize].clone();
        other.next = first;
        other.value = 77;
        other.best = 77;
        other.path = (t.paths.len() as u32, 7);
        t.paths.extend_from_slice(b"zzz/zzz");
        t.nodes.push(other);
        t.index.insert(key, (t.nodes.len() - 1) as NodeId);
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
}
